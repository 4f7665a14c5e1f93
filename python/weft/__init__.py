"""weft: collective communication between CPU processes, on numpy arrays and torch tensors.

    import weft.distributed as dist      # torch.distributed's API (docs/python.md)
    weft.spawn(worker, args=(...), nprocs=4)

This package holds the exceptions (one class per weft error code, all under WeftError), the
compiled core (weft._weft: ProcessGroup in group ranks, Work, stores, ReduceOp) and spawn.
"""

from ._weft import (  # noqa: F401
    DTYPES,
    AbortedError,
    FileStore,
    HashStore,
    InternalError,
    InvalidArgumentError,
    MismatchError,
    PeerFailureError,
    PrefixStore,
    ProcessGroup,
    ReduceOp,
    Store,
    SystemCallError,
    TCPStore,
    TimeoutError,
    UnauthorizedError,
    WeftError,
    Work,
    __version__,
    buffer_info,
)
from ._spawn import (  # noqa: F401
    ProcessExitedException,
    ProcessRaisedException,
    ProcessTimeoutError,
    SpawnContext,
    SpawnError,
    free_port,
    launch,
    launched_by_launcher,
    spawn,
)

__all__ = [
    "WeftError", "InvalidArgumentError", "MismatchError", "TimeoutError", "PeerFailureError",
    "UnauthorizedError", "SystemCallError", "AbortedError", "InternalError",
    "ReduceOp", "ProcessGroup", "Work", "Store", "TCPStore", "FileStore", "HashStore",
    "PrefixStore", "spawn", "launch", "launched_by_launcher", "free_port", "SpawnError",
    "ProcessRaisedException", "ProcessExitedException", "ProcessTimeoutError", "SpawnContext",
    "DTYPES", "buffer_info", "__version__",
]

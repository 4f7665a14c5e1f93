"""weft: collective communication between CPU processes, on numpy arrays and torch tensors.

    import weft.distributed as dist      # torch.distributed's API (docs/python.md)
    weft.spawn(worker, args=(...), nprocs=4)

This package holds the exceptions (one class per weft error code, all under WeftError), the
compiled core (weft._weft: ProcessGroup in group ranks, Work, stores, ReduceOp), spawn, and
the bridge of weft's log lines into Python's logging (enable_python_logging).
"""

import atexit as _atexit
import logging as _logging
import os as _os
import threading as _threading
import time as _time

from . import _weft

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
    "enable_python_logging", "disable_python_logging", "flush_python_logging", "TRACE",
]


# --- weft's log lines into Python's logging (docs/observability.md, "Logs") ------------------
#
# Off until enable_python_logging(): importing weft changes nothing of what stderr shows.
# weft calls its log sink from its own threads, while a Python thread may hold the GIL and wait
# for one of them; so the sink never touches Python: it queues the line in C++, and a daemon
# thread of ours takes the lines (waiting with the GIL released) and logs them.

TRACE = 5  # logging level of weft's trace lines (below DEBUG)
_PYTHON_LEVELS = (_logging.ERROR, _logging.WARNING, _logging.INFO, _logging.DEBUG, TRACE)


def _weft_level(level):
    """weft's level (0 error .. 4 trace) for a logging level (number or name)."""
    if isinstance(level, str):
        named = _logging.getLevelName(level.upper())
        level = TRACE if level.upper() == "TRACE" else named
        if not isinstance(level, int):
            raise ValueError(f"unknown log level {level!r}")
    for weft_level, python_level in enumerate(_PYTHON_LEVELS):
        if level >= python_level:
            return weft_level
    return len(_PYTHON_LEVELS) - 1


class _LogBridge:
    def __init__(self):
        self._lock = _threading.Lock()  # one taker at a time: lines keep their order
        self._thread = None
        self._enabled = False
        self._hooks_registered = False

    def enable(self):
        if self._enabled:
            return
        if _logging.getLevelName(TRACE) != "TRACE":
            _logging.addLevelName(TRACE, "TRACE")
        if not self._hooks_registered:
            self._hooks_registered = True
            # Before the interpreter finalizes: a daemon thread woken then could not run again.
            _atexit.register(self.disable)
            _os.register_at_fork(after_in_child=self._after_fork_in_child)
        self._enabled = True
        _weft._log_bridge_install()
        self._start_thread()

    def disable(self):
        if not self._enabled:
            return
        self._enabled = False
        _weft._log_bridge_uninstall()  # from here on, lines go to stderr (or the file) again
        _weft._log_bridge_wake()
        thread = self._thread
        if thread is not None and thread is not _threading.current_thread():
            thread.join(timeout=5)
        self.flush()

    def flush(self, wait=0.0):
        with self._lock:
            for level, subsystem, line in _weft._log_bridge_take(wait):
                _logging.getLogger("weft." + subsystem).log(_PYTHON_LEVELS[level], line)

    def _start_thread(self):
        self._thread = _threading.Thread(target=self._run, name="weft-log-bridge", daemon=True)
        self._thread.start()

    def _run(self):
        while self._enabled:
            self.flush(wait=0.2)
            # A moment out of the lock: a Lock is not fair, and a flush_python_logging() waiting
            # for it would lose it to this loop's next turn again and again.
            _time.sleep(0.001)

    def _after_fork_in_child(self):
        # The child has none of the parent's threads, and the parent's lock may have been held.
        _weft._log_bridge_after_fork_in_child()
        self._lock = _threading.Lock()
        if self._enabled:
            self._start_thread()


_log_bridge = _LogBridge()


def enable_python_logging(level=None):
    """Sends weft's log lines to Python's logging instead of stderr (or WEFT_DEBUG_FILE).

    Each line goes to the logger "weft.<subsystem>" (init, transport, coll, shm, store, python;
    children of "weft") at the matching level (weft.TRACE = 5 below DEBUG), its message the
    whole line, prefix with host, pid, rank and group included. weft still filters by
    WEFT_DEBUG and WEFT_DEBUG_SUBSYS first; `level` (a logging level or name) overrides
    WEFT_DEBUG. Lines reach logging from a daemon thread, a fraction of a second late;
    flush_python_logging() hands over what is queued at once.
    """
    if level is not None:
        _weft._set_log_level(_weft_level(level))
    _log_bridge.enable()


def disable_python_logging():
    """Hands over what is queued, then sends weft's lines to stderr (or the file) again."""
    _log_bridge.disable()


def flush_python_logging():
    """Logs every weft line queued so far, from the calling thread."""
    _log_bridge.flush()

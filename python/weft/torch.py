"""weft as a torch.distributed backend: ``import weft.torch``, then
``torch.distributed.init_process_group("weft", ...)``.

Importing this module registers the backend "weft" with torch.distributed (once per process;
spawned children must import it too, as with every torch plugin). Every init method torch has
works (env://, tcp://, file://, an explicit store): weft's rendezvous runs over the store torch
hands the backend, so no second port or file is needed. ``new_group`` creates a weft group per
torch group over that group's prefixed store.

The backend is compiled (weft._weft_torch, a c10d::ProcessGroup; docs/torch-backend.md says
why): every operation torch 1.13 hands a backend runs on weft's asynchronous operations, and
Work.get_future() completes as soon as weft finishes, so DistributedDataParallel overlaps its
bucketed all_reduce with the backward pass.

On torch 1.13 the backend is compiled (weft._weft_torch, a c10d::ProcessGroup). On torch
>= 2.0 it is weft._torch2.WeftProcessGroup, a Python subclass of torch's ProcessGroup over
weft's own extension, registered for devices=["cpu"] (docs/torch-backend.md says why).
"""

import datetime as _datetime
import re as _re
import sys as _sys

import torch as _torch  # before the extension: it links against torch's libraries
import torch.distributed as _dist

BACKEND_NAME = "weft"

_TORCH_VERSION = tuple(int(x) for x in _re.findall(r"\d+", _torch.__version__)[:2])


class _ShardMetadataFix:
    """Debian's torch 1.13 on Python 3.11 cannot import torch.distributed._shard (a dataclass
    field(default=TensorProperties()); fixed upstream for 2.0), which DistributedDataParallel
    imports. This import hook applies the upstream one-line fix in memory, nothing on disk."""

    NAME = "torch.distributed._shard.sharded_tensor.metadata"
    BAD = "field(default=TensorProperties())"

    def find_spec(self, name, path, target=None):
        if name != self.NAME:
            return None
        import importlib.util
        _sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            _sys.meta_path.insert(0, self)
        if spec is None or spec.origin is None:
            return None
        return importlib.util.spec_from_file_location(name, spec.origin, loader=self)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        with open(module.__file__) as f:
            src = f.read().replace(self.BAD, "field(default_factory=TensorProperties)")
        exec(compile(src, module.__file__, "exec"), module.__dict__)


def _install_compat_fixes():
    if _TORCH_VERSION >= (2, 0) or _sys.version_info < (3, 11):
        return
    if _ShardMetadataFix.NAME in _sys.modules:
        return
    if any(type(f).__name__ == "_ShardMetadataFix" for f in _sys.meta_path):
        return  # torchsuite's runner (or another copy) already installed it
    _sys.meta_path.insert(0, _ShardMetadataFix())


def _timeout_seconds(timeout):
    if timeout is None:
        return 0.0
    if isinstance(timeout, _datetime.timedelta):
        return timeout.total_seconds()
    return float(timeout)


def _create_torch113(backend_options, pg_options=None):
    """torch's creator (extended API): rendezvous over torch's prefix store, return the group."""
    from . import _weft_torch
    return _weft_torch.create(
        backend_options.store,
        backend_options.group_rank,
        backend_options.group_size,
        _timeout_seconds(backend_options.timeout),
        "torch-" + str(backend_options.group_id or "default"),
    )


def _register_torch113():
    from . import _weft_torch  # noqa: F401  (fail at import time if the extension is missing)
    _dist.Backend.register_backend(BACKEND_NAME, _create_torch113, extended_api=True)


def _register_torch2():
    from . import _torch2
    _torch2.register()


def register():
    """Registers the backend "weft" with torch.distributed (idempotent)."""
    if not _dist.is_available():
        raise ImportError("torch.distributed is not available in this torch build")
    if hasattr(_dist.Backend, BACKEND_NAME.upper()):
        return
    if _TORCH_VERSION >= (2, 0):
        _register_torch2()
    else:
        _register_torch113()


def is_weft_group(group=None):
    """Whether a torch.distributed process group (default: the world) runs on weft."""
    if group is None:
        group = _dist.distributed_c10d._get_default_group()
    if _TORCH_VERSION >= (2, 0):
        from . import _torch2
        return isinstance(group, _torch2.WeftProcessGroup)
    from . import _weft_torch
    return _weft_torch.is_weft_group(group)


def weft_group_of(group=None):
    """The weft._weft.ProcessGroup under a torch.distributed group of backend weft (default:
    the world): weft's own API (shrink, algorithms, per-call timeouts) on the same ranks."""
    if group is None:
        group = _dist.distributed_c10d._get_default_group()
    if not is_weft_group(group):
        raise ValueError("this torch.distributed group does not run on weft")
    if _TORCH_VERSION >= (2, 0):
        return group.weft_group
    from . import _weft  # noqa: F401  (defines the Python type of the group returned)
    from . import _weft_torch
    return _weft_torch.weft_group_of(group)


def survivors(group=None, timeout=None):
    """After a failure in a torch group of backend weft (default: the world), the ranks of
    that group still alive, the same sorted list on every survivor (weft's shrink, as ULFM's
    MPI_Comm_shrink). Every survivor calls it; a member that has not called it within timeout
    (timedelta or seconds; None: the group's timeout) is left out. The group is aborted: destroy
    it and initialise torch.distributed again on the survivors (rank: this rank's index in the
    list), over a store that outlived the failure. examples/python/train_ddp_recovery.py does
    this with DistributedDataParallel."""
    import torch
    if group is None:
        group = _dist.distributed_c10d._get_default_group()
    old_rank = _dist.get_rank(group)
    shrunk = weft_group_of(group).shrink(timeout=timeout)
    mine = torch.tensor([old_rank], dtype=torch.int64)
    every = torch.zeros(shrunk.size(), dtype=torch.int64)
    shrunk.all_gather_into_tensor(every, mine)
    return sorted(int(rank) for rank in every)


_install_compat_fixes()
register()

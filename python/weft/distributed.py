"""torch.distributed's API on weft: ``import weft.distributed as dist``.

Same names, signatures and semantics as torch.distributed (docs/python.md maps every call), on
numpy arrays and torch CPU tensors, in place and without copies. Ranks given to the default
API (src, dst, peers, new_group's ranks) are global ranks, translated to group ranks for
subgroups as torch does; get_rank(group) returns the group rank.

Blocking calls release the GIL and can be interrupted with Ctrl-C, which aborts the group
(its later operations fail with AbortedError here and on its peers). async_op=True returns a
Work: keep its tensors untouched until wait() returns or is_completed() is true.

Beyond torch's gloo: reduce_scatter, reduce_scatter_tensor, all_gather_into_tensor, uneven
all_gather/gather/scatter, ReduceOp.AVG and PREMUL_SUM, bfloat16 and bool everywhere, scan and
exscan.

Timeouts: init_process_group's default is torch's default_pg_timeout (30 minutes) unless
WEFT_TIMEOUT is set, which then wins; new_group(timeout=) and new_subgroups(timeout=) bound
the new group's waits (None: the default group's timeout); barrier(timeout=) bounds one call.
"""

import datetime as _datetime
import os as _os
import threading as _threading
import time as _time
import urllib.parse as _urlparse

from . import _weft
from ._weft import (  # noqa: F401  (re-exported)
    FileStore,
    HashStore,
    PrefixStore,
    ReduceOp,
    Store,
    TCPStore,
    WeftError,
)
from ._object_collectives import (  # noqa: F401  (re-exported)
    all_gather_object,
    broadcast_object_list,
    gather_object,
    scatter_object_list,
)
from . import _splits
from ._coalesced import all_gather_coalesced, all_reduce_coalesced  # noqa: F401  (re-exported)
from ._future import Future  # noqa: F401  (re-exported)
from ._options import (  # noqa: F401  (re-exported)
    AllreduceCoalescedOptions,
    AllreduceOptions,
    AllToAllOptions,
    BarrierOptions,
    BroadcastOptions,
    DebugLevel,
    GatherOptions,
    ReduceOptions,
    ReduceScatterOptions,
    ScatterOptions,
    get_debug_level,
    set_debug_level,
    set_debug_level_from_env,
)

__all__ = [
    "Backend", "GroupMember", "P2POp", "ProcessGroup", "ReduceOp", "Work", "group",
    "Store", "TCPStore", "FileStore", "HashStore", "PrefixStore",
    "init_process_group", "destroy_process_group", "is_initialized", "is_available",
    "is_torchelastic_launched", "get_backend", "get_rank", "get_world_size", "new_group",
    "get_process_group_ranks", "get_global_rank", "get_group_rank", "get_node_local_rank",
    "send", "recv", "isend", "irecv", "batch_isend_irecv",
    "broadcast", "all_reduce", "reduce", "all_gather", "all_gather_into_tensor", "gather",
    "scatter", "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single",
    "barrier", "monitored_barrier", "scan", "exscan",
    "all_gather_object", "broadcast_object_list", "gather_object", "scatter_object_list",
    "all_reduce_coalesced", "all_gather_coalesced", "new_subgroups", "new_subgroups_by_enumeration",
    "is_gloo_available", "is_nccl_available", "is_mpi_available", "is_ucc_available",
    "supports_complex", "dist_backend", "default_pg_timeout", "Future",
    "DebugLevel", "get_debug_level", "set_debug_level", "set_debug_level_from_env",
    "AllreduceOptions", "AllreduceCoalescedOptions", "AllToAllOptions", "BarrierOptions",
    "BroadcastOptions", "GatherOptions", "ReduceOptions", "ReduceScatterOptions", "ScatterOptions",
]

# torch's default timeout of a process group: init_process_group(timeout=None) uses it unless
# WEFT_TIMEOUT is set in the environment (then WEFT_TIMEOUT's, as every weft program).
default_pg_timeout = _datetime.timedelta(minutes=30)

_NOT_INITIALIZED = ("Default process group has not been initialized, "
                    "please make sure to call init_process_group.")
# Tag of monitored_barrier's messages: far from the small tags programs use.
_MONITORED_BARRIER_TAG = 0x7FFF_FF01


class Backend(str):
    """Backend names, torch's constants plus WEFT. weft is the only backend here: "gloo" is
    accepted as a synonym by init_process_group so that torch programs run unchanged; the
    others name torch's backends, which weft.distributed does not run."""
    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"
    XCCL = "xccl"
    FAKE = "fake"
    WEFT = "weft"

    def __new__(cls, name):
        return str.__new__(cls, str(name).lower())


_ACCEPTED_BACKENDS = ("weft", "gloo", "cpu:weft", "cpu:gloo", "undefined")
dist_backend = Backend  # torch 1.13's old name


class ProcessGroup:
    """A group of ranks: torch's ProcessGroup (rank(), size()) over a weft._weft.ProcessGroup.

    ``ranks`` lists the global rank of each group rank."""

    __slots__ = ("_pg", "_ranks", "_group_rank", "__weakref__")

    def __init__(self, pg, ranks):
        self._pg = pg
        self._ranks = list(ranks)
        self._group_rank = {g: i for i, g in enumerate(self._ranks)}

    def rank(self):
        return self._live().rank()

    def size(self):
        return len(self._ranks)

    def name(self):
        return self._live().name

    @property
    def ranks(self):
        return list(self._ranks)

    @property
    def timeout(self):
        return self._live().timeout

    def abort(self, reason="aborted by the user"):
        """Fails every pending and future operation of this group, here and on its peers."""
        self._live().abort(reason)

    def shrink(self, timeout=None):
        """The survivors of a failure continue in a smaller group (ULFM's MPI_Comm_shrink).

        Every surviving member calls it, typically after an operation of this group raised
        (PeerFailureError, AbortedError). This group is aborted, and each survivor gets a new
        ProcessGroup of exactly the members still alive, ranked in this group's order; pass it
        as group= from then on. A member is left out when a survivor saw it fail or when it has
        not called shrink within timeout (timedelta or seconds; None: this group's timeout); if
        it calls, it gets AbortedError saying so. With nobody dead, everyone is kept."""
        pg = self._live().shrink(timeout=timeout)
        # weft's group does not say which members it kept: the survivors tell each other their
        # global ranks, in the new group's order (one small collective, which also proves it).
        import numpy as np
        mine = np.array([self._ranks[self._pg.rank()]], dtype=np.int64)
        ranks = np.zeros(pg.size(), dtype=np.int64)
        pg.all_gather_into_tensor(ranks, mine)
        survivors = ProcessGroup(pg, [int(r) for r in ranks])
        _groups.append(survivors)
        return survivors

    def _live(self):
        if self._pg is None:
            raise RuntimeError("this process group was destroyed (destroy_process_group)")
        return self._pg

    def __repr__(self):
        state = "destroyed" if self._pg is None else f"rank {self._pg.rank()}/{self.size()}"
        return f"<weft.distributed.ProcessGroup ranks={self._ranks} {state}>"


class GroupMember:
    """torch's GroupMember: WORLD is the default group once initialized; NON_GROUP_MEMBER is
    what new_group returns on ranks outside the new group."""
    WORLD = None
    NON_GROUP_MEMBER = object()


class group:  # noqa: N801  (torch's spelling)
    WORLD = None


class Work:
    """Handle of an asynchronous operation (torch's Work): wait(timeout=None), is_completed(),
    is_success(), exception(), source_rank() (global rank, for receives), result() (the
    operation's output tensors) and get_future() (a Future whose value is result())."""

    __slots__ = ("_work", "_group", "_outputs", "_finish", "_future", "_lock")

    def __init__(self, work, group_, outputs=(), finish=None):
        self._work = work
        self._group = group_
        self._outputs = list(outputs)
        self._finish = finish  # run once after success (copies staged results back)
        self._future = None
        self._lock = _threading.Lock()

    def _finished(self):
        if self._finish is not None:
            with self._lock:
                if self._finish is not None:
                    self._finish()
                    self._finish = None

    def _wait_value(self, timeout=None):
        self._work.wait(timeout)
        self._finished()
        return list(self._outputs)

    def wait(self, timeout=None):
        try:
            value = self._wait_value(timeout)
        except KeyboardInterrupt:
            raise
        except BaseException as error:
            if self._future is not None:
                self._future._complete(None, error)
            raise
        if self._future is not None:
            self._future._complete(value, None)
        return True

    def is_completed(self):
        done = self._work.is_completed()
        if done and self._finish is not None and self._work.is_success():
            self._finished()
        return done

    def is_success(self):
        return self._work.is_success()

    def exception(self):
        return self._work.exception()

    def source_rank(self):
        rank = self._work.source_rank()
        return self._group._ranks[rank] if rank >= 0 else rank

    _source_rank = source_rank

    def result(self):
        """The operation's output tensors (waits for it first): [tensor] for broadcast,
        all_reduce, reduce, scatter, send and recv, tensor_list for all_gather, gather_list on
        gather's root, [] for barrier."""
        self.wait()
        return list(self._outputs)

    def synchronize(self):
        """torch's CUDA stream synchronization; on the CPU: wait()."""
        self.wait()

    def get_future(self):
        """A Future completed with result() when the operation ends (or its error)."""
        if self._future is None:
            self._future = Future(self._wait_value, self.is_completed)
        return self._future

    def __repr__(self):
        return repr(self._work)


_world = None  # the default ProcessGroup
_groups = []  # every ProcessGroup made here, to mark them destroyed


def _error(cls, message, g=None, op=None, code="invalid_argument"):
    """A weft exception raised by this module, with the attributes weft's own errors carry."""
    error = cls(f"weft {code}: {message}")
    error.code, error.message, error.op = code, message, op
    error.group = None if g is None or g._pg is None else g._pg.name
    error.rank = None if g is None or g._pg is None else g._pg.rank()
    error.size = None if g is None else g.size()
    error.seq = error.peer = error.peer_address = error.bytes = error.root_cause = None
    return error


def _wrap(work, group_, outputs=()):
    return None if work is None else Work(work, group_, outputs)


def _resolve(group_):
    """The ProcessGroup to use, or None for a rank outside the group (the call does nothing,
    as in torch)."""
    if group_ is None:
        if _world is None:
            raise RuntimeError(_NOT_INITIALIZED)
        return _world
    if group_ is GroupMember.NON_GROUP_MEMBER:
        return None
    if isinstance(group_, ProcessGroup):
        group_._live()
        return group_
    raise TypeError(f"group must be a group from new_group() or None, not {type(group_).__name__}")


def _group_rank(g, global_rank, what):
    if global_rank is None:
        return -1
    try:
        return g._group_rank[int(global_rank)]
    except KeyError:
        raise _error(_weft.InvalidArgumentError,
                     f"{what}={global_rank} is not a member of the group (global ranks {g._ranks})",
                     g) from None


def _reduce_op(op):
    if isinstance(op, ReduceOp):
        return op
    if isinstance(op, str):
        return ReduceOp(op)
    name = getattr(op, "name", None)  # torch.distributed.ReduceOp.SUM and friends
    if isinstance(name, str):
        return ReduceOp(name)
    raise TypeError(f"op must be a ReduceOp, not {type(op).__name__}")


def _make_nccl_premul_sum(factor):
    """torch's spelling of ReduceOp.premul_sum(factor)."""
    return ReduceOp.premul_sum(float(factor))


# --- set-up ---------------------------------------------------------------------------------

def _split_query(init_method, rank, world_size):
    """torch accepts tcp://h:p?rank=0&world_size=2 (and file://); the query fills rank and size."""
    parsed = _urlparse.urlparse(init_method)
    if not parsed.query:
        return init_method, rank, world_size
    query = dict(_urlparse.parse_qsl(parsed.query))
    if rank < 0 and "rank" in query:
        rank = int(query["rank"])
    if world_size < 0 and "world_size" in query:
        world_size = int(query["world_size"])
    return parsed._replace(query="").geturl(), rank, world_size


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None):
    """Joins the job, as torch.distributed.init_process_group.

    init_method: None or "env://" (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; under weftrun
    WEFT_STORE_ADDR; under torchrun, torchrun's agent store), "tcp://host:port" or
    "file:///path". Or pass store= (rank and world_size then required). timeout: a timedelta
    (or seconds) bounding the rendezvous and every later wait; None: WEFT_TIMEOUT when set in
    the environment, else default_pg_timeout (30 minutes, as torch)."""
    global _world
    if _world is not None:
        raise RuntimeError("trying to initialize the default process group twice!")
    if backend is not None and str(backend).lower() not in _ACCEPTED_BACKENDS:
        raise _error(_weft.InvalidArgumentError,
                     f"backend {backend!r} is not available here: weft.distributed runs weft "
                     f"(\"weft\", or \"gloo\" as a synonym)", op="init_process_group")
    if store is not None:
        if init_method is not None:
            raise ValueError("Cannot specify both init_method and store.")
        if rank < 0 or world_size <= 0:
            raise ValueError("rank and world_size must be given with store=")
        method = ""
    else:
        method, rank, world_size = _split_query(init_method or "env://", rank, world_size)
    if timeout is None and not _os.environ.get("WEFT_TIMEOUT"):
        timeout = default_pg_timeout
    pg = _weft.init_process_group(init_method=method, rank=rank, world_size=world_size,
                                  store=store, timeout=timeout,
                                  group_name=group_name or "default")
    _world = ProcessGroup(pg, range(pg.size()))
    _groups.append(_world)
    GroupMember.WORLD = _world
    group.WORLD = _world


def destroy_process_group(group=None):  # noqa: A002  (torch's name)
    """Destroys group, or every group (the default one included) when group is None. Queued
    sends are flushed and peers told goodbye once the last reference goes."""
    global _world
    if group is None or group is _world:
        for g in _groups:
            g._pg = None
        _groups.clear()
        _world = None
        GroupMember.WORLD = None
        globals()["group"].WORLD = None
        return
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    group._pg = None
    if group in _groups:
        _groups.remove(group)


def is_initialized():
    return _world is not None


def is_available():
    return True


# weft.distributed runs weft only: torch's backends are not available through it ("gloo" is
# accepted by init_process_group as a name for weft, but weft is not gloo).
def is_gloo_available():
    return False


def is_nccl_available():
    return False


def is_mpi_available():
    return False


def is_ucc_available():
    return False


def supports_complex(reduceOp):  # noqa: N803  (torch's name)
    """torch's answer for the op (MAX, MIN, PRODUCT and the bitwise ops are not defined on
    complex numbers). weft's buffers have no complex dtypes: view them as real pairs."""
    return _reduce_op(reduceOp).name not in ("MAX", "MIN", "PRODUCT", "BAND", "BOR", "BXOR")


def is_torchelastic_launched():
    return _os.environ.get("TORCHELASTIC_RUN_ID") is not None


def get_backend(group=None):  # noqa: A002
    _resolve(group)
    return Backend.WEFT


def get_rank(group=None):  # noqa: A002
    """This process's rank in group (global rank by default); -1 outside the group."""
    g = _resolve(group)
    return -1 if g is None else g.rank()


def get_world_size(group=None):  # noqa: A002
    g = _resolve(group)
    return -1 if g is None else g.size()


def get_node_local_rank(fallback_rank=None):
    """This process's rank among the job's ranks on its node, as torch 2.x's: LOCAL_RANK, or
    the launcher's own variable where torch reads only LOCAL_RANK (srun's SLURM_LOCALID,
    mpirun's OMPI_COMM_WORLD_LOCAL_RANK, mpiexec's MPI_LOCALRANKID); else fallback_rank."""
    local = _weft.launch_info()["local_rank"]
    if local is not None:
        return local
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("get_node_local_rank: no launcher set a local rank (LOCAL_RANK, "
                       "SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK or MPI_LOCALRANKID); pass "
                       "fallback_rank to run without one")


def new_group(ranks=None, timeout=None, backend=None, pg_options=None):
    """A group of the given global ranks. Every rank of the job calls it with the same ranks;
    ranks outside get GroupMember.NON_GROUP_MEMBER. timeout (timedelta or seconds) bounds the
    new group's waits; None: the default group's timeout."""
    world = _resolve(None)
    if ranks is None:
        ranks = list(range(world.size()))
    ranks = sorted(int(r) for r in ranks)
    pg = world._pg.new_group(ranks, timeout=timeout)
    if pg is None:
        return GroupMember.NON_GROUP_MEMBER
    g = ProcessGroup(pg, ranks)
    _groups.append(g)
    return g


def new_subgroups(group_size=None, group=None, timeout=None, backend=None,  # noqa: A002
                  pg_options=None):
    """Splits group (default: all ranks) into consecutive subgroups of group_size ranks, as
    torch: returns (this rank's subgroup, every subgroup), the latter holding
    GroupMember.NON_GROUP_MEMBER for the subgroups this rank is not in. group_size=None: the
    ranks per machine (LOCAL_WORLD_SIZE, as weft.spawn, weftrun and torchrun set, or the
    launcher's own: srun, mpirun, mpiexec), where torch counts CUDA devices. One collective over group (ranks outside it get (None, []))."""
    if group_size is None:
        local = _weft.launch_info()["local_world_size"]
        if local is None:
            raise ValueError("new_subgroups: group_size=None takes the number of ranks per "
                             "machine from the launcher (LOCAL_WORLD_SIZE, or srun's, mpirun's "
                             "or mpiexec's own variables), which did not set it; pass group_size")
        group_size = local
    group_size = int(group_size)
    if group_size <= 0:
        raise ValueError(f"The arg 'group_size' ({group_size}) must be positive")
    g = _resolve(group)
    if g is None:
        return None, []
    n = g.size()
    if n < group_size:
        raise ValueError(f"The arg 'group_size' ({group_size}) must not exceed the world size "
                         f"({n})")
    if n % group_size != 0:
        raise ValueError(f"The world size ({n}) must be divisible by 'group_size' ({group_size})")
    ranks = g._ranks
    return _subgroups(g, [ranks[i:i + group_size] for i in range(0, n, group_size)], timeout,
                      "new_subgroups")


def new_subgroups_by_enumeration(ranks_per_subgroup_list, timeout=None, backend=None,
                                 pg_options=None):
    """A subgroup per list of global ranks (disjoint; ranks may be left out), as torch: returns
    (this rank's subgroup or None, every subgroup), the latter holding
    GroupMember.NON_GROUP_MEMBER for the subgroups this rank is not in. Every rank calls it with
    the same lists; one collective over all ranks."""
    if not ranks_per_subgroup_list:
        raise ValueError("The arg 'ranks_per_subgroup_list' cannot be empty")
    return _subgroups(_resolve(None), ranks_per_subgroup_list, timeout,
                      "new_subgroups_by_enumeration")


def _subgroups(parent, ranks_per_subgroup_list, timeout, op):
    """Subgroups of parent from lists of global ranks, in one split."""
    lists = [sorted(int(r) for r in ranks) for ranks in ranks_per_subgroup_list]
    owner = {}
    for ranks in lists:
        if not ranks:
            raise ValueError(f"{op}: a subgroup has no ranks")
        for r in ranks:
            if r in owner:
                raise ValueError(f"Rank {r} has appeared in both subgroup {owner[r]} and {ranks}")
            if r not in parent._group_rank:
                raise _error(_weft.InvalidArgumentError,
                             f"{op}: rank {r} is not a member of the group (global ranks "
                             f"{parent._ranks})", parent, op)
            owner[r] = ranks
    me = parent._ranks[parent.rank()]
    color = next((i for i, ranks in enumerate(lists) if me in ranks), -1)
    pg = parent._pg.split(color, me, timeout=timeout)
    subgroups = [GroupMember.NON_GROUP_MEMBER] * len(lists)
    if pg is None:
        return None, subgroups
    sub = ProcessGroup(pg, lists[color])
    _groups.append(sub)
    subgroups[color] = sub
    return sub, subgroups


def get_process_group_ranks(group):  # noqa: A002
    return list(_resolve(group)._ranks)


def get_global_rank(group, group_rank):  # noqa: A002
    return _resolve(group)._ranks[group_rank]


def get_group_rank(group, global_rank):  # noqa: A002
    return _group_rank(_resolve(group), global_rank, "global_rank")


# --- point to point -------------------------------------------------------------------------

def send(tensor, dst, group=None, tag=0):  # noqa: A002
    g = _resolve(group)
    if g is not None:
        g._pg.send(tensor, _group_rank(g, dst, "dst"), tag)


def recv(tensor, src=None, group=None, tag=0):  # noqa: A002
    """Receives into tensor from src (None: any rank); returns the sender's global rank."""
    g = _resolve(group)
    if g is None:
        return -1
    source = g._pg.recv(tensor, _group_rank(g, src, "src"), tag)
    return g._ranks[source]


def isend(tensor, dst, group=None, tag=0):  # noqa: A002
    g = _resolve(group)
    if g is None:
        return None
    return Work(g._pg.isend(tensor, _group_rank(g, dst, "dst"), tag), g, [tensor])


def irecv(tensor, src=None, group=None, tag=0):  # noqa: A002
    g = _resolve(group)
    if g is None:
        return None
    return Work(g._pg.irecv(tensor, _group_rank(g, src, "src"), tag), g, [tensor])


class P2POp:
    """One operation of batch_isend_irecv: P2POp(dist.isend or dist.irecv, tensor, peer)."""

    __slots__ = ("op", "tensor", "peer", "group", "tag")

    def __init__(self, op, tensor, peer, group=None, tag=0):  # noqa: A002
        if op not in (isend, irecv) and getattr(op, "__name__", None) not in ("isend", "irecv"):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type "
                             "``weft.distributed.isend`` or ``weft.distributed.irecv``.")
        self.op, self.tensor, self.peer, self.group, self.tag = op, tensor, peer, group, tag

    def __repr__(self):
        return f"P2POp({self.op.__name__}, peer={self.peer}, tag={self.tag})"


def batch_isend_irecv(p2p_op_list):
    """Posts every op (receives first, so exchanging pairs cannot deadlock); one Work per op."""
    if not p2p_op_list or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to be of type "
                         "``weft.distributed.P2POp``.")
    groups = {id(p.group) for p in p2p_op_list}
    if len(groups) != 1:
        raise ValueError("All ops need to use the same group.")
    g = _resolve(p2p_op_list[0].group)
    if g is None:
        return []
    ops = [(getattr(p.op, "__name__", "") == "isend", p.tensor,
            _group_rank(g, p.peer, "peer"), p.tag) for p in p2p_op_list]
    return [Work(w, g, [p.tensor]) for w, p in zip(g._pg.batch_isend_irecv(ops), p2p_op_list)]


# --- collectives ----------------------------------------------------------------------------

def broadcast(tensor, src, group=None, async_op=False):  # noqa: A002
    g = _resolve(group)
    if g is not None:
        return _wrap(g._pg.broadcast(tensor, _group_rank(g, src, "src"), async_op), g, [tensor])


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):  # noqa: A002
    g = _resolve(group)
    if g is not None:
        return _wrap(g._pg.all_reduce(tensor, _reduce_op(op), async_op), g, [tensor])


def reduce(tensor, dst, op=ReduceOp.SUM, group=None, async_op=False):  # noqa: A002
    g = _resolve(group)
    if g is not None:
        return _wrap(g._pg.reduce(tensor, _group_rank(g, dst, "dst"), _reduce_op(op), async_op), g,
                     [tensor])


def all_gather(tensor_list, tensor, group=None, async_op=False):  # noqa: A002
    """tensor_list[r] receives rank r's tensor; sizes may differ by rank (uneven)."""
    g = _resolve(group)
    if g is not None:
        outputs = list(tensor_list)
        return _wrap(g._pg.all_gather(outputs, tensor, async_op), g, outputs)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):  # noqa: A002
    g = _resolve(group)
    if g is not None:
        return _wrap(g._pg.all_gather_into_tensor(output_tensor, input_tensor, async_op), g,
                     [output_tensor])


def _all_gather_base(output_tensor, input_tensor, group=None, async_op=False):  # noqa: A002
    return all_gather_into_tensor(output_tensor, input_tensor, group, async_op)


def _root_only_list(g, root, tensors, name):
    if g.rank() == root:
        if tensors is None:
            raise ValueError(f"Argument ``{name}`` must be specified on the root rank.")
        return list(tensors)
    if tensors:
        raise ValueError(f"Argument ``{name}`` must NOT be specified on non-root ranks.")
    return None


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False):  # noqa: A002
    g = _resolve(group)
    if g is None:
        return None
    root = _group_rank(g, dst, "dst")
    outputs = _root_only_list(g, root, gather_list, "gather_list")
    return _wrap(g._pg.gather(tensor, outputs, root, async_op), g, outputs or [])


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False):  # noqa: A002
    g = _resolve(group)
    if g is None:
        return None
    root = _group_rank(g, src, "src")
    inputs = _root_only_list(g, root, scatter_list, "scatter_list")
    return _wrap(g._pg.scatter(tensor, inputs, root, async_op), g, [tensor])


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):  # noqa: A002
    """output receives the reduction of every rank's input_list[my rank]."""
    g = _resolve(group)
    if g is not None:
        return _wrap(g._pg.reduce_scatter(output, list(input_list), _reduce_op(op), async_op), g,
                     [output])


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):  # noqa: A002
    g = _resolve(group)
    if g is not None:
        return _wrap(g._pg.reduce_scatter_tensor(output, input, _reduce_op(op), async_op), g,
                     [output])


def _reduce_scatter_base(output, input, op=ReduceOp.SUM, group=None, async_op=False):  # noqa: A002
    return reduce_scatter_tensor(output, input, op, group, async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):  # noqa: A002
    g = _resolve(group)
    if g is not None:
        outputs = list(output_tensor_list)
        return _wrap(g._pg.all_to_all(outputs, list(input_tensor_list), async_op), g, outputs)


def _numel(tensor):
    numel = getattr(tensor, "numel", None)
    return numel() if callable(numel) else int(tensor.size)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,  # noqa: A002
                      group=None, async_op=False):
    """Split sizes count rows (dim 0) per rank, as torch's; each list is checked here (one
    integer per rank, each within the tensor, summing to its rows) before anything is sent."""
    g = _resolve(group)
    if g is None:
        return None
    n = g.size()
    where = f"all_to_all_single on rank {g._ranks[g.rank()]}"

    def invalid(message):
        return _error(_weft.InvalidArgumentError, message, g, "all_to_all_single")

    out_splits = _splits.element_splits(output_split_sizes, output, lambda: _numel(output), n,
                                        where, "output_split_sizes", invalid)
    in_splits = _splits.element_splits(input_split_sizes, input, lambda: _numel(input), n,
                                       where, "input_split_sizes", invalid)
    if bool(out_splits) != bool(in_splits):  # one side given: the other is equal blocks
        if not out_splits:
            out_splits = _splits.equal_blocks(_numel(output), n, where, "output_split_sizes",
                                              invalid)
        else:
            in_splits = _splits.equal_blocks(_numel(input), n, where, "input_split_sizes",
                                             invalid)
    return _wrap(g._pg.all_to_all_single(output, input, out_splits, in_splits, async_op), g,
                 [output])


def barrier(group=None, async_op=False, device_ids=None, timeout=None):  # noqa: A002
    """timeout (torch 2.x's): a timedelta or seconds bounding this barrier instead of the
    group's timeout."""
    g = _resolve(group)
    if g is not None:
        return _wrap(g._pg.barrier(async_op, timeout=timeout), g)


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):  # noqa: A002
    """A barrier that names the ranks that did not arrive within timeout: every rank reports
    to group rank 0, which raises weft.TimeoutError naming the missing ranks (all of them with
    wait_all_ranks=True) or releases everyone. Ranks waiting for a failed rank 0 time out too."""
    import numpy as np

    g = _resolve(group)
    if g is None:
        return None
    limit = timeout if timeout is not None else g.timeout
    seconds = limit.total_seconds() if hasattr(limit, "total_seconds") else float(limit)
    pg, me, n = g._pg, g.rank(), g.size()
    token = np.zeros(1, dtype=np.uint8)
    if me != 0:
        pg.send(token, 0, _MONITORED_BARRIER_TAG)
        release = np.zeros(1, dtype=np.uint8)
        try:
            pg.irecv(release, 0, _MONITORED_BARRIER_TAG).wait(seconds)
        except _weft.TimeoutError:
            raise _error(_weft.TimeoutError,
                         f"Rank {g._ranks[me]} was not released from monitored_barrier within "
                         f"{seconds * 1000:.0f} ms: rank {g._ranks[0]} (the monitor) failed or "
                         f"another rank did not arrive", g, "monitored_barrier", "timeout") from None
        return None
    arrivals = {r: pg.irecv(np.zeros(1, dtype=np.uint8), r, _MONITORED_BARRIER_TAG)
                for r in range(1, n)}
    deadline = _time.monotonic() + seconds
    missing = []
    for r, work in arrivals.items():
        try:
            work.wait(max(deadline - _time.monotonic(), 0.001))
        except _weft.TimeoutError:
            missing.append(g._ranks[r])
            if not wait_all_ranks:
                break
    if missing:
        ranks = ", ".join(str(r) for r in missing)
        which = "Ranks" if len(missing) > 1 else "Rank"
        raise _error(_weft.TimeoutError,
                     f"{which} {ranks} failed to pass monitoredBarrier in {seconds * 1000:.0f} ms "
                     f"(weft monitored_barrier on group ranks {g._ranks})", g, "monitored_barrier",
                     "timeout")
    releases = [pg.isend(token, r, _MONITORED_BARRIER_TAG) for r in range(1, n)]
    for work in releases:
        work.wait()
    return None


# --- weft's extras ----------------------------------------------------------------------------

def scan(output, input, op=ReduceOp.SUM, group=None):  # noqa: A002
    """MPI_Scan: rank r's output is the reduction of ranks 0..r's inputs (group order)."""
    g = _resolve(group)
    if g is not None:
        g._pg.scan(output, input, _reduce_op(op))


def exscan(output, input, op=ReduceOp.SUM, group=None):  # noqa: A002
    """MPI_Exscan: rank r's output is the reduction of ranks 0..r-1 (rank 0's is untouched)."""
    g = _resolve(group)
    if g is not None:
        g._pg.exscan(output, input, _reduce_op(op))


def split(color, key=0, group=None, timeout=None):  # noqa: A002
    """MPI_Comm_split over group (default: all ranks): ranks with the same color form a new
    group ordered by (key, rank); color < 0 joins none (returns NON_GROUP_MEMBER). timeout as
    new_group's."""
    g = _resolve(group)
    if g is None:
        return GroupMember.NON_GROUP_MEMBER
    # Every member learns the others' colors and keys to know the new group's global ranks.
    import numpy as np
    mine = np.array([color, key], dtype=np.int64)
    table = np.zeros(2 * g.size(), dtype=np.int64)
    g._pg.all_gather_into_tensor(table, mine)
    pg = g._pg.split(color, key, timeout=timeout)
    if pg is None:
        return GroupMember.NON_GROUP_MEMBER
    members = sorted((int(table[2 * r + 1]), r) for r in range(g.size())
                     if int(table[2 * r]) == color)
    sub = ProcessGroup(pg, [g._ranks[r] for _, r in members])
    _groups.append(sub)
    return sub


def shrink(group=None, timeout=None):  # noqa: A002
    """ProcessGroup.shrink of group (default: the default group): the members still alive
    continue in a new group, returned here (the default group is left as it is, aborted)."""
    g = _resolve(group)
    if g is None:
        return GroupMember.NON_GROUP_MEMBER
    return g.shrink(timeout=timeout)


def _destroy_at_exit():
    destroy_process_group()


import atexit as _atexit  # noqa: E402

set_debug_level_from_env()  # as torch.distributed at import

_atexit.register(_destroy_at_exit)

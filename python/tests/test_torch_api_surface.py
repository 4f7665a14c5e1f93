"""weft.distributed has torch.distributed's names and signatures, on the torch this runs with.

The public surface of torch.distributed is what dir() gives without a leading underscore,
restricted to the functions and classes defined by torch (modules, constants and re-exported
helpers such as enum.Enum or datetime.timedelta are left out). For each name, weft.distributed
must have it; for a function or class whose signature torch lets inspect read, the parameters
(names, kinds, order) and their defaults must match; for a class, every public member of
torch's class must exist on weft's. Every intended difference is listed below with its reason;
any other difference fails, and so does an entry that no longer applies on weft's side.

Runs under Debian's torch 1.13 (/usr/bin/python3, CTest's python_tests) and torch 2.x
(.venv/bin/python): entries marked [2.x] only apply to the newer torch.
"""

import datetime
import enum
import inspect
import warnings

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as tdist  # noqa: E402

if not tdist.is_available():
    pytest.skip("torch.distributed is not available in this torch build", allow_module_level=True)

import weft.distributed as wdist  # noqa: E402

# --- intended differences ---------------------------------------------------------------------

_CUDA = "CUDA (several GPUs per process); weft.distributed works on CPU memory"
_DDP = "DistributedDataParallel's C++ reducer and comm hooks: weft offers no DDP of its own " \
       "(use torch's DDP over weft's torch backend, weft.torch)"
_GLOO = "weft is not gloo: weft.distributed runs weft's own process groups"
_RENDEZVOUS = "torch's Python rendezvous plugins: weft rendezvouses in C++ (env://, tcp://, " \
              "file://, store=, torchrun's agent store)"
_DEFAULT_TIMEOUT = "timeout=None instead of torch 1.13's timedelta(minutes=30): None is " \
                   "default_pg_timeout (30 min) unless WEFT_TIMEOUT is set, and for new groups " \
                   "the default group's timeout"
_GROUP_RANKS = "[2.x] group_src/group_dst/group_peer (peers as group ranks) are not offered; " \
               "src/dst stay required or default to 0 as in torch 1.13"
_NEWER = "[2.x] newer torch API, not offered by weft.distributed yet"
_STORE = "[2.x] torch 2.x's store extensions (queues, append, list_keys, clone, barrier) are " \
         "not in weft's stores"
_ERRORS = "[2.x] torch 2.x's exception classes: weft raises its own (weft.WeftError and its " \
          "subclasses, docs/python.md#errors)"

# torch names weft.distributed does not have.
MISSING = {
    "all_gather_multigpu": _CUDA,
    "all_reduce_multigpu": _CUDA,
    "broadcast_multigpu": _CUDA,
    "reduce_multigpu": _CUDA,
    "reduce_scatter_multigpu": _CUDA,
    "BuiltinCommHookType": _DDP,
    "GradBucket": _DDP,
    "Reducer": _DDP,
    "Logger": _DDP,
    "ProcessGroupGloo": _GLOO,
    "rendezvous": _RENDEZVOUS,
    "register_rendezvous_handler": _RENDEZVOUS,
    "DeviceMesh": "[2.x] device meshes (DTensor, FSDP2): out of weft.distributed's scope",
    "init_device_mesh": "[2.x] device meshes (DTensor, FSDP2): out of weft.distributed's scope",
    "BackendConfig": "[2.x] per-device backend configuration: weft is the only backend",
    "get_backend_config": "[2.x] per-device backend configuration: weft is the only backend",
    "get_default_backend_for_device": "[2.x] per-device backends: weft is the only backend",
    "is_xccl_available": "[2.x] Intel GPU backend probe; " + _NEWER,
    "is_backend_available": _NEWER,
    "DistError": _ERRORS,
    "DistBackendError": _ERRORS,
    "DistNetworkError": _ERRORS,
    "DistStoreError": _ERRORS,
    "QueueEmptyError": _ERRORS,
    "all_gather_single": _NEWER,
    "reduce_scatter_single": _NEWER,
    "send_object_list": _NEWER,
    "recv_object_list": _NEWER,
    "get_pg_count": _NEWER,
    "shrink_group": _NEWER + " (weft's split() splits a group)",
    "split_group": _NEWER + " (weft's split() splits a group)",
    "breakpoint": "[2.x] pdb on one rank: a debugging helper tied to torch's default group",
    "record_comm": "[2.x] torch's communication recorder (flight recorder tooling)",
}

# torch names whose signature differs in weft.distributed. [1.13] / [2.x]: on that torch only.
SIGNATURE = {
    "init_process_group": "backend is optional (as in torch 2.x) and " + _DEFAULT_TIMEOUT +
                          "; [2.x] device_id (accelerators) and the private _ranks are not taken",
    "new_group": _DEFAULT_TIMEOUT + "; [2.x] use_local_synchronization, group_desc, device_id "
                 "and sort_ranks are not taken (ranks are always sorted, creation is "
                 "collective over all ranks)",
    "new_subgroups": _DEFAULT_TIMEOUT + "; [2.x] group_desc is not taken",
    "new_subgroups_by_enumeration": _DEFAULT_TIMEOUT + "; [2.x] group_desc is not taken",
    "barrier": "[1.13] timeout= as torch 2.x's barrier (bounds this call)",
    "scatter_object_list": "[1.13] scatter_object_input_list defaults to None on non-source "
                           "ranks, as in torch 2.x",
    "P2POp": _GROUP_RANKS,
    "send": _GROUP_RANKS, "recv": _GROUP_RANKS, "isend": _GROUP_RANKS, "irecv": _GROUP_RANKS,
    "broadcast": _GROUP_RANKS, "reduce": _GROUP_RANKS, "gather": _GROUP_RANKS,
    "scatter": _GROUP_RANKS, "broadcast_object_list": _GROUP_RANKS,
    "gather_object": _GROUP_RANKS, "scatter_object_list_2x": _GROUP_RANKS,
}
SIGNATURE["scatter_object_list"] += "; " + SIGNATURE.pop("scatter_object_list_2x")

# "Class.member": members of torch's classes that weft's classes lack ("Class.*": all of them).
MEMBERS = {
    "ProcessGroup.*": "torch's backend-level API (allreduce(tensors, AllreduceOptions) and the "
                      "like, backend types, device binding) is not on weft.distributed's "
                      "ProcessGroup, which has rank(), size(), name(): pass group= to the "
                      "module's functions (weft.ProcessGroup is weft's own core API)",
    "ReduceOp.RedOpType": "torch's pybind11 enum type; weft's ReduceOp constants are its own "
                          "(torch's ReduceOp values are accepted everywhere)",
    "ReduceOp.op": "torch's pybind11 internals (the RedOpType of a ReduceOp); weft has .name",
    "Backend.TCP": "[1.13] deprecated in 1.13 (raises when used) and removed from torch 2.x",
    "dist_backend.TCP": "[1.13] deprecated in 1.13 (raises when used) and removed from torch 2.x",
    "Backend.register_backend": "weft.distributed runs weft only: no third-party backends",
    "dist_backend.register_backend": "weft.distributed runs weft only: no third-party backends",
    "Backend.backend_capability": "[2.x] torch's backend registry: weft is the only backend",
    "Backend.backend_list": "[2.x] torch's backend registry: weft is the only backend",
    "Backend.backend_type_map": "[2.x] torch's backend registry: weft is the only backend",
    "Backend.default_device_backend_map": "[2.x] torch's backend registry: weft is the only "
                                          "backend",
    "Work.block_current_stream": "[2.x] CUDA streams: weft works on CPU memory",
    "Work.boxed": "[2.x] TorchScript boxing of torch's C++ Work",
    "Work.unbox": "[2.x] TorchScript boxing of torch's C++ Work",
    "Work.get_future_result": _NEWER,
}
for _store in ("Store", "TCPStore", "FileStore", "HashStore", "PrefixStore"):
    for _member in ("append", "barrier", "clone", "has_extended_api", "list_keys", "queue_len",
                    "queue_pop", "queue_push"):
        MEMBERS[f"{_store}.{_member}"] = _STORE
MEMBERS["TCPStore.libuvBackend"] = "[2.x] torch's libuv store server: weft serves its own"

# --- the comparison ---------------------------------------------------------------------------


def _torch_public():
    names = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.distributed.reduce_op is deprecated
        for name in dir(tdist):
            if name.startswith("_"):
                continue
            obj = getattr(tdist, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj) or inspect.isbuiltin(obj)):
                continue
            if not (getattr(obj, "__module__", None) or "").startswith("torch"):
                continue  # enum.Enum, datetime.timedelta and such, imported by torch's modules
            names[name] = obj
    return names


TORCH_PUBLIC = _torch_public()


def _default(value):
    if value is inspect.Parameter.empty:
        return "<required>"
    for reduce_op in (tdist.ReduceOp, wdist.ReduceOp):
        if type(value).__name__ in ("ReduceOp", "RedOpType"):
            for op in ("SUM", "AVG", "PRODUCT", "MIN", "MAX"):
                try:
                    if value == getattr(reduce_op, op):
                        return f"ReduceOp.{op}"
                except TypeError:
                    pass
    if value is None or isinstance(value, (bool, int, float, str, datetime.timedelta)):
        return repr(value)
    return f"<{type(value).__name__}>"


def _signature(obj):
    """[(name, kind, default)] or None when inspect cannot read it (pybind11 callables)."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    return [(p.name, p.kind.name, _default(p.default)) for p in sig.parameters.values()]


def _describe(sig):
    return "(" + ", ".join(f"{n}{'' if d == '<required>' else '=' + d}" +
                           ("" if k == "POSITIONAL_OR_KEYWORD" else f" [{k}]")
                           for n, k, d in sig) + ")"


def _members(cls):
    base = set()
    for builtin in (str, int, enum.Enum, enum.IntEnum, object):
        if issubclass(cls, builtin):
            base |= set(dir(builtin))
    return {n for n in dir(cls) if not n.startswith("_") and n not in base}


def _has_member(cls, name):
    if hasattr(cls, name):
        return True
    # An enum's name and value are properties of its members (torch's pybind11 enums show
    # them on the class).
    return issubclass(cls, enum.Enum) and all(hasattr(m, name) for m in cls)


def differences():
    """{kind: {name: what}} of every difference found on this torch."""
    missing, signature, members = {}, {}, {}
    for name, tobj in sorted(TORCH_PUBLIC.items()):
        wobj = getattr(wdist, name, None)
        if wobj is None:
            missing[name] = "absent from weft.distributed"
            continue
        tsig = _signature(tobj)
        if tsig is not None:
            wsig = _signature(wobj)
            if wsig != tsig:
                signature[name] = (f"torch {_describe(tsig)} vs weft "
                                   f"{'?' if wsig is None else _describe(wsig)}")
        if inspect.isclass(tobj):
            if not inspect.isclass(wobj):
                signature[name] = f"a class in torch, a {type(wobj).__name__} in weft"
                continue
            for member in sorted(m for m in _members(tobj) if not _has_member(wobj, m)):
                members[f"{name}.{member}"] = "absent from weft's class"
    return {"MISSING": missing, "SIGNATURE": signature, "MEMBERS": members}


def test_torch_public_surface_is_found():
    # The filter above must not hide the core of the API.
    for name in ("init_process_group", "all_reduce", "new_group", "ReduceOp", "Work", "Backend",
                 "P2POp", "TCPStore", "new_subgroups", "all_reduce_coalesced", "DebugLevel"):
        assert name in TORCH_PUBLIC, name


def test_every_difference_from_torch_distributed_is_intended():
    tables = {"MISSING": MISSING, "SIGNATURE": SIGNATURE, "MEMBERS": MEMBERS}
    unlisted = []
    for kind, found in differences().items():
        for name, what in found.items():
            if name not in tables[kind] and f"{name.split('.')[0]}.*" not in tables[kind]:
                unlisted.append(f"  {kind}[{name!r}]: {what}")
    assert not unlisted, (
        f"weft.distributed differs from torch {torch.__version__}'s torch.distributed where "
        f"python/tests/test_torch_api_surface.py does not say it should; add the missing name "
        f"or fix its signature, or list the difference with its reason:\n" + "\n".join(unlisted))


def test_listed_differences_still_apply():
    """A name listed as missing that weft now has, or an entry naming nothing, is stale."""
    stale = [f"MISSING[{name!r}]: weft.distributed has it now" for name in MISSING
             if hasattr(wdist, name)]
    stale += [f"SIGNATURE[{name!r}]: weft.distributed has no such name" for name in SIGNATURE
              if not hasattr(wdist, name)]
    for key in MEMBERS:
        cls, member = key.split(".", 1)
        if member != "*" and hasattr(wdist, cls) and hasattr(getattr(wdist, cls), member):
            stale.append(f"MEMBERS[{key!r}]: weft's {cls} has it now")
    found = differences()
    for name, reason in SIGNATURE.items():
        if name in TORCH_PUBLIC and name not in found["SIGNATURE"] and \
                not reason.startswith(("[1.13]", "[2.x]")):
            stale.append(f"SIGNATURE[{name!r}]: no longer differs on torch {torch.__version__}")
    assert not stale, "stale entries in the intended differences:\n" + "\n".join(stale)


OPTIONS = ["AllreduceOptions", "AllreduceCoalescedOptions", "AllToAllOptions", "BarrierOptions",
           "BroadcastOptions", "GatherOptions", "ReduceOptions", "ReduceScatterOptions",
           "ScatterOptions"]


@pytest.mark.parametrize("name", OPTIONS)
def test_options_have_torch_attributes_and_defaults(name):
    tobj, wobj = getattr(tdist, name)(), getattr(wdist, name)()
    for attr in (a for a in dir(tobj) if not a.startswith("_")):
        tvalue = getattr(tobj, attr)
        if callable(tvalue):
            continue
        assert hasattr(wobj, attr), f"{name}.{attr}"
        assert _default(getattr(wobj, attr)) == _default(tvalue) or \
            getattr(wobj, attr) == tvalue, (name, attr, getattr(wobj, attr), tvalue)


def test_constants_match_torch():
    for name in ("UNDEFINED", "GLOO", "NCCL", "UCC", "MPI"):
        assert getattr(wdist.Backend, name) == getattr(tdist.Backend, name)
    for level in ("OFF", "INFO", "DETAIL"):
        assert int(getattr(wdist.DebugLevel, level)) == int(getattr(tdist.DebugLevel, level))
    assert wdist.default_pg_timeout == tdist.default_pg_timeout

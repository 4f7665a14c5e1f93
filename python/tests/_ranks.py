"""Running a test body on N local ranks, and data every rank can predict exactly.

run(fn, nprocs, *args) forks nprocs ranks (fork: fast start, the body needs no pickling), each
initializes weft.distributed from the environment weft.spawn sets, runs fn(rank, nprocs,
*args) and destroys the group. A failing rank fails the test with its traceback; every run is
bounded by a timeout so that a bug fails, never hangs.
"""

import datetime

import numpy as np

import weft
import weft.distributed as dist

OP_TIMEOUT = datetime.timedelta(seconds=30)


def _body(rank, fn, nprocs, args, init):
    if init:
        dist.init_process_group("weft", timeout=OP_TIMEOUT)
    try:
        fn(rank, nprocs, *args)
    finally:
        if init and dist.is_initialized():
            dist.destroy_process_group()


def run(fn, nprocs, *args, timeout=60, init=True):
    weft.spawn(_body, args=(fn, nprocs, args, init), nprocs=nprocs, start_method="fork",
               timeout=timeout)


NUMPY_DTYPES = ["float32", "float64", "float16", "int8", "uint8", "int16", "int32", "int64", "bool"]
TORCH_DTYPES = ["float32", "bfloat16", "float16", "int64", "bool"]
FLOATS = {"float32", "float64", "float16", "bfloat16"}


def values(rank, count, dtype, seed=0):
    """Small exactly representable values from (seed, rank, index), as float64 or bool."""
    i = np.arange(count)
    raw = (rank * 3 + i * 5 + seed) % 7
    if dtype == "bool":
        return raw % 2 == 1
    if dtype == "uint8":
        return (raw % 3).astype(np.float64)
    return (raw - 3).astype(np.float64) if dtype not in FLOATS else (raw - 3).astype(np.float64)


def product_values(rank, count, dtype, seed=0):
    i = np.arange(count)
    raw = 1 + (rank + i + seed) % 2
    if dtype == "bool":
        return raw == 2
    return raw.astype(np.float64)


def make(array64, dtype, kind="numpy"):
    """A numpy array or torch tensor of dtype holding array64's values."""
    if kind == "numpy":
        return np.asarray(array64).astype(dtype)
    import torch
    source = np.asarray(array64)
    if dtype == "bool":
        return torch.from_numpy(source.astype(bool).copy())
    return torch.from_numpy(source.astype(np.float64)).to(getattr(torch, dtype)).contiguous()


def as64(buffer):
    """Values of an array or tensor as float64 numpy (bool stays bool)."""
    if hasattr(buffer, "numpy") and not isinstance(buffer, np.ndarray):
        import torch
        if buffer.dtype == torch.bool:
            return buffer.numpy().copy()
        return buffer.to(torch.float64).numpy()
    if buffer.dtype == bool:
        return buffer.copy()
    return buffer.astype(np.float64)


def reference(inputs, op, dtype):
    """The reduction of inputs (float64/bool arrays) as weft defines it for dtype."""
    name = op.name if hasattr(op, "name") else str(op)
    stack = np.stack(inputs)
    if dtype == "bool":
        table = {"SUM": np.logical_or, "PRODUCT": np.logical_and, "MIN": np.logical_and,
                 "MAX": np.logical_or, "BAND": np.logical_and, "BOR": np.logical_or,
                 "BXOR": np.logical_xor}
        return table[name].reduce(stack, axis=0)
    if name == "SUM":
        return stack.sum(axis=0)
    if name == "PREMUL_SUM":
        return (stack * op.factor).sum(axis=0)
    if name == "PRODUCT":
        return stack.prod(axis=0)
    if name == "MIN":
        return stack.min(axis=0)
    if name == "MAX":
        return stack.max(axis=0)
    if name == "AVG":
        total = stack.sum(axis=0)
        return total / len(inputs) if dtype in FLOATS else np.trunc(total / len(inputs))
    ints = stack.astype(np.int64)
    fn = {"BAND": np.bitwise_and, "BOR": np.bitwise_or, "BXOR": np.bitwise_xor}[name]
    return fn.reduce(ints, axis=0).astype(np.float64)


def ops_for(dtype):
    ops = [dist.ReduceOp.SUM, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN, dist.ReduceOp.MAX]
    if dtype != "bool":
        ops.append(dist.ReduceOp.AVG)
    if dtype in FLOATS:
        ops.append(dist.ReduceOp.premul_sum(0.5))
    else:
        ops += [dist.ReduceOp.BAND, dist.ReduceOp.BOR, dist.ReduceOp.BXOR]
    return ops


def inputs_for(op, n, count, dtype, seed=0):
    gen = product_values if op.name == "PRODUCT" else values
    return [gen(r, count, dtype, seed) for r in range(n)]


def assert_equal(got, want, dtype, what=""):
    got64 = as64(got)
    if dtype in ("float16", "bfloat16"):
        ok = np.allclose(got64, want, rtol=1e-2, atol=1e-2)
    elif dtype in FLOATS:
        ok = np.allclose(got64, want, rtol=1e-6, atol=1e-6)
    else:
        ok = np.array_equal(got64, np.asarray(want, dtype=got64.dtype))
    assert ok, f"{what} ({dtype}): got {got64}, want {want}"

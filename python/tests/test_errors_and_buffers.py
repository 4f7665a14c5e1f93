"""Buffers are used in place with every dtype, bad buffers get a clear ValueError, and each
weft error code surfaces as its own exception class."""

import builtins
import datetime
import os
import time

import numpy as np
import pytest
import torch

import weft
import weft.distributed as dist
from _ranks import run


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int8", "uint8", "int16",
                                   "int32", "int64", "bool"])
def test_numpy_dtypes_in_place(dtype):
    a = np.zeros(5, dtype=dtype)
    name, count, address = weft.buffer_info(a, writable=True)
    assert (name, count, address) == (dtype, 5, a.ctypes.data)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int8", "uint8",
                                   "int16", "int32", "int64", "bool"])
def test_torch_dtypes_in_place(dtype):
    t = torch.zeros(2, 3, dtype=getattr(torch, dtype))
    assert weft.buffer_info(t, writable=True) == (dtype, 6, t.data_ptr())
    row = t[1]  # a contiguous view: its own address, no copy
    assert weft.buffer_info(row)[2] == row.data_ptr()


@pytest.mark.parametrize("bad, problem", [
    (np.zeros((4, 4))[:, 1], "not contiguous"),
    (np.frombuffer(b"abcd", np.uint8), "read-only"),
    (torch.zeros(4, 4).t(), "not contiguous"),
    (np.zeros(3, np.uint32), "unsigned"),
    (torch.zeros(2, dtype=torch.complex64), "complex64"),
])
def test_bad_buffers_are_value_errors(bad, problem):
    with pytest.raises(ValueError, match=problem) as info:
        weft.buffer_info(bad, writable=True)
    assert isinstance(info.value, weft.InvalidArgumentError)


def test_read_only_is_fine_to_send():
    assert weft.buffer_info(np.frombuffer(b"abcd", np.uint8))[:2] == ("uint8", 4)


def test_not_a_buffer_is_a_type_error():
    with pytest.raises(TypeError, match="int"):
        weft.buffer_info(5)


def test_exception_hierarchy():
    assert issubclass(weft.WeftError, RuntimeError)
    assert issubclass(weft.InvalidArgumentError, ValueError)
    assert issubclass(weft.TimeoutError, builtins.TimeoutError)
    assert issubclass(weft.PeerFailureError, ConnectionError)
    assert issubclass(weft.UnauthorizedError, PermissionError)
    assert issubclass(weft.SystemCallError, OSError)
    for cls in (weft.MismatchError, weft.AbortedError, weft.InternalError):
        assert issubclass(cls, weft.WeftError)


def test_not_initialized():
    with pytest.raises(RuntimeError, match="not been initialized"):
        dist.get_rank()


def _invalid_arguments(rank, n):
    with pytest.raises(weft.InvalidArgumentError) as info:
        dist.send(np.zeros(1), dst=n + 5)
    assert info.value.code == "invalid_argument" and info.value.rank == rank
    with pytest.raises(ValueError):
        dist.broadcast(np.zeros(1), src=n)
    with pytest.raises(ValueError, match="read-only"):
        dist.all_reduce(np.frombuffer(b"abcd", np.uint8))
    with pytest.raises(ValueError, match="contiguous"):
        dist.all_reduce(torch.zeros(3, 3).t())
    with pytest.raises(ValueError):
        dist.all_reduce(np.zeros(2, np.float32), op=dist.ReduceOp.BAND)
    with pytest.raises(RuntimeError, match="twice"):
        dist.init_process_group("weft")
    dist.barrier()


def _timeout(rank, n):
    if rank == 0:
        with pytest.raises(weft.TimeoutError) as info:
            dist.recv(np.zeros(1), src=1)
        assert isinstance(info.value, builtins.TimeoutError) and info.value.op == "recv"
    else:
        w = dist.irecv(np.zeros(1), src=0)
        with pytest.raises(TimeoutError):
            w.wait(timeout=datetime.timedelta(milliseconds=200))
        time.sleep(1.5)  # stay until rank 0 has timed out (leaving would be a peer failure)


def _init_short_timeout(rank, n, body):
    dist.init_process_group("weft", timeout=datetime.timedelta(seconds=1))
    body(rank, n)


def _peer_failure(rank, n):
    # one exchange first, so that the connection exists when rank 1 dies
    if rank == 1:
        dist.send(np.zeros(1), dst=0)
        os._exit(0)
    dist.recv(np.zeros(1), src=1)
    with pytest.raises((weft.PeerFailureError, weft.AbortedError)):
        dist.recv(np.zeros(1), src=1)


def _mismatch(rank, n):
    # rank 1 reduces twice as many elements: the receiver sees it in the message header
    with pytest.raises(weft.WeftError) as info:
        dist.all_reduce(np.zeros(4 * (rank + 1), np.float32))
    assert isinstance(info.value, (weft.MismatchError, weft.AbortedError)), info.value


def test_invalid_arguments():
    run(_invalid_arguments, 2)


def test_timeout():
    run(_init_short_timeout, 2, _timeout, init=False)


def test_peer_failure():
    # rank 1 leaves without a goodbye; rank 0 must fail fast with the peer named
    run(_init_short_timeout, 2, _peer_failure, init=False)


def test_mismatch():
    run(_init_short_timeout, 2, _mismatch, init=False)

"""The parts of torch.distributed's surface added to weft.distributed, on several ranks, against
numpy references: new_subgroups, new_subgroups_by_enumeration, all_reduce_coalesced,
all_gather_coalesced, Work.get_future() and result(), new_group(timeout=) and per-call timeouts,
the default timeout, debug levels and the torch-shaped constants. numpy only (torch tensors
where torch is importable)."""

import datetime
import os
import threading
import time

import numpy as np
import pytest

import weft
import weft.distributed as dist
from _ranks import run

try:
    import torch
except ImportError:  # weft.distributed works without torch
    torch = None


def _rank_array(rank, count, dtype, seed=0):
    return ((np.arange(count) * 3 + rank * 5 + seed) % 7 - 2).astype(dtype)


# --- subgroups -------------------------------------------------------------------------------

def _new_subgroups(rank, n):
    cur, subgroups = dist.new_subgroups(group_size=2)
    assert len(subgroups) == n // 2
    mine = rank // 2
    for i, sub in enumerate(subgroups):
        if i == mine:
            assert sub is cur
        else:
            assert sub is dist.GroupMember.NON_GROUP_MEMBER
    members = [2 * mine, 2 * mine + 1]
    assert dist.get_process_group_ranks(cur) == members
    assert dist.get_rank(cur) == rank % 2 and dist.get_world_size(cur) == 2
    value = np.array([rank + 1.0, 10.0 * rank])
    dist.all_reduce(value, group=cur)
    np.testing.assert_array_equal(value, [sum(r + 1.0 for r in members),
                                          sum(10.0 * r for r in members)])
    dist.broadcast(value := np.array([float(rank)]), src=members[1], group=cur)
    assert value[0] == members[1]
    # group_size=None: the ranks per machine (weft.spawn sets LOCAL_WORLD_SIZE = n).
    whole, [only] = dist.new_subgroups()
    assert whole is only and dist.get_world_size(whole) == n
    # Subgroups of a subgroup: group= given, ranks outside it get (None, []).
    evens = dist.new_group([r for r in range(n) if r % 2 == 0])
    if rank % 2 == 0:
        sub, subs = dist.new_subgroups(group_size=1, group=evens)
        assert len(subs) == len(range(0, n, 2)) and dist.get_process_group_ranks(sub) == [rank]
    else:
        assert dist.new_subgroups(group_size=1, group=evens) == (None, [])
    with pytest.raises(ValueError):
        dist.new_subgroups(group_size=3)
    with pytest.raises(ValueError):
        dist.new_subgroups(group_size=0)
    dist.barrier()


def test_new_subgroups():
    run(_new_subgroups, 4)


def _new_subgroups_by_enumeration(rank, n):
    lists = [[3, 0], [1]]  # rank 2 in none; ranks are sorted as torch's new_group does
    cur, subgroups = dist.new_subgroups_by_enumeration(lists)
    assert len(subgroups) == 2
    if rank == 2:
        assert cur is None
        assert all(s is dist.GroupMember.NON_GROUP_MEMBER for s in subgroups)
    else:
        index = 0 if rank in (0, 3) else 1
        assert subgroups[index] is cur and subgroups[1 - index] is dist.GroupMember.NON_GROUP_MEMBER
        expected = sorted(lists[index])
        assert dist.get_process_group_ranks(cur) == expected
        assert dist.get_rank(cur) == expected.index(rank)
        value = np.array([2.0 ** rank])
        dist.all_reduce(value, group=cur)
        assert value[0] == sum(2.0 ** r for r in expected)
    # the subgroups' timeout (a new group's own)
    cur, _ = dist.new_subgroups_by_enumeration([[0, 1], [2, 3]],
                                               timeout=datetime.timedelta(seconds=7))
    assert cur.timeout == datetime.timedelta(seconds=7)
    with pytest.raises(ValueError, match="appeared in both"):
        dist.new_subgroups_by_enumeration([[0, 1], [1, 2]])
    with pytest.raises(ValueError):
        dist.new_subgroups_by_enumeration([])
    with pytest.raises(ValueError):
        dist.new_subgroups_by_enumeration([[0, n]])
    dist.barrier()


def test_new_subgroups_by_enumeration():
    run(_new_subgroups_by_enumeration, 4)


# --- coalesced collectives -------------------------------------------------------------------

SHAPES = [(5,), (2, 3), (1,), (0,), (4, 1, 2)]


def _all_reduce_coalesced(rank, n, dtype, async_op):
    tensors = [_rank_array(rank, int(np.prod(s)), dtype, seed=i).reshape(s)
               for i, s in enumerate(SHAPES)]
    want = [sum(_rank_array(r, int(np.prod(s)), np.float64, seed=i) for r in range(n)).reshape(s)
            for i, s in enumerate(SHAPES)]
    out = dist.all_reduce_coalesced(tensors, dist.ReduceOp.SUM, async_op=async_op)
    if async_op:
        assert isinstance(out, dist.Future)
        value = out.wait()
        assert out.done() and all(v is t for v, t in zip(value, tensors))
    else:
        assert out is None
    for got, ref, s in zip(tensors, want, SHAPES):
        assert got.shape == s and got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got.astype(np.float64), ref)
    # MAX, one tensor (in place, no copy), a non-contiguous one (staged)
    single = _rank_array(rank, 6, dtype)
    dist.all_reduce_coalesced([single], op=dist.ReduceOp.MAX)
    np.testing.assert_array_equal(single.astype(np.float64),
                                  np.max([_rank_array(r, 6, np.float64) for r in range(n)], 0))
    strided = np.zeros((4, 2), dtype=dtype)[:, 0]
    strided[:] = rank + 1
    other = np.full(3, rank, dtype=dtype)
    dist.all_reduce_coalesced([strided, other])
    np.testing.assert_array_equal(strided, np.full(4, sum(range(1, n + 1)), dtype=dtype))
    np.testing.assert_array_equal(other, np.full(3, sum(range(n)), dtype=dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int16"])
@pytest.mark.parametrize("async_op", [False, True])
def test_all_reduce_coalesced(dtype, async_op):
    run(_all_reduce_coalesced, 3, dtype, async_op)


def _torch_coalesced(rank, n):
    for dtype in (torch.float32, torch.bfloat16, torch.int32):
        tensors = [torch.full((3,), rank + 1, dtype=dtype),
                   torch.full((2, 2), 2 * rank, dtype=dtype)]
        dist.all_reduce_coalesced(tensors)
        assert torch.equal(tensors[0], torch.full((3,), sum(range(1, n + 1)), dtype=dtype))
        assert torch.equal(tensors[1], torch.full((2, 2), 2 * sum(range(n)), dtype=dtype))
        inputs = [torch.arange(rank + 1, dtype=dtype) + 10 * rank,
                  torch.full((2,), rank, dtype=dtype)]
        outputs = [[torch.zeros(r + 1, dtype=dtype), torch.zeros(2, dtype=dtype)] for r in range(n)]
        fut = dist.all_gather_coalesced(outputs, inputs, async_op=True)
        assert fut.wait() == outputs
        for r in range(n):
            assert torch.equal(outputs[r][0], torch.arange(r + 1, dtype=dtype) + 10 * r)
            assert torch.equal(outputs[r][1], torch.full((2,), r, dtype=dtype))


@pytest.mark.skipif(torch is None, reason="torch is not importable")
def test_coalesced_on_torch_tensors():
    run(_torch_coalesced, 3)


def _all_gather_coalesced(rank, n, dtype, async_op):
    # Rank r contributes tensors whose sizes depend on r and on the tensor (uneven both ways).
    def contribution(r):
        return [_rank_array(r, r + 1, dtype, seed=0),
                _rank_array(r, 4, dtype, seed=1).reshape(2, 2),
                _rank_array(r, 2 * r, dtype, seed=2)]

    inputs = contribution(rank)
    outputs = [[np.zeros_like(t) for t in contribution(r)] for r in range(n)]
    out = dist.all_gather_coalesced(outputs, inputs, async_op=async_op)
    if async_op:
        out.wait()
    else:
        assert out is None
    for r in range(n):
        for got, want in zip(outputs[r], contribution(r)):
            np.testing.assert_array_equal(got, want)
    # one tensor each: the caller's arrays are used directly
    single = [[np.zeros(3, dtype=dtype)] for _ in range(n)]
    dist.all_gather_coalesced(single, [np.full(3, rank, dtype=dtype)])
    for r in range(n):
        np.testing.assert_array_equal(single[r][0], np.full(3, r, dtype=dtype))


@pytest.mark.parametrize("dtype", ["float32", "int8", "float16", "uint8"])
@pytest.mark.parametrize("async_op", [False, True])
def test_all_gather_coalesced(dtype, async_op):
    run(_all_gather_coalesced, 3, dtype, async_op)


def _coalesced_errors(rank, n):
    with pytest.raises(ValueError, match="mixes dtypes"):
        dist.all_reduce_coalesced([np.zeros(2, np.float32), np.zeros(2, np.int32)])
    with pytest.raises(ValueError, match="read-only"):
        readonly = np.zeros(2)
        readonly.flags.writeable = False
        dist.all_reduce_coalesced([readonly, np.zeros(2)])
    with pytest.raises(ValueError):
        dist.all_gather_coalesced([[np.zeros(1)]], [np.zeros(1)])  # one list for two ranks
    # nothing was sent: the group still works
    value = np.ones(1)
    dist.all_reduce(value)
    assert value[0] == n


def test_coalesced_argument_errors():
    run(_coalesced_errors, 2)


# --- Work.get_future() and result() ----------------------------------------------------------

def _futures(rank, n):
    total = float(sum(range(n)))
    a = np.array([float(rank)] * 3)
    work = dist.all_reduce(a, async_op=True)
    fut = work.get_future()
    assert work.get_future() is fut
    doubled = fut.then(lambda f: f.value()[0] * 2)
    np.testing.assert_array_equal(doubled.wait(), [2 * total] * 3)
    assert fut.done() and fut.value()[0] is a
    assert work.result() == [a] and work.result()[0] is a
    np.testing.assert_array_equal(a, [total] * 3)

    # Callbacks run when the operation ends, without anyone waiting.
    fired = threading.Event()
    seen = []
    b = np.array([1.0])
    work = dist.all_reduce(b, async_op=True)
    work.get_future().add_done_callback(lambda f: (seen.append(f.value()[0][0]), fired.set()))
    assert fired.wait(20), "the done callback did not run"
    assert seen == [float(n)]
    # Added after completion: runs at once, on this thread.
    here = []
    work.get_future().add_done_callback(lambda f: here.append(threading.current_thread()))
    assert here == [threading.current_thread()]

    # all_gather's result is its tensor list; Work.wait completes the future too.
    parts = [np.zeros(2) for _ in range(n)]
    work = dist.all_gather(parts, np.full(2, float(rank)), async_op=True)
    fut = work.get_future()
    work.wait()
    assert fut.done() and fut.value() == parts and work.result() == parts
    for r in range(n):
        np.testing.assert_array_equal(parts[r], [r, r])

    # A callback's exception fails the future then() returned.
    failing = dist.all_reduce(np.ones(1), async_op=True).get_future().then(
        lambda f: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        failing.wait()

    # A failed operation fails its future: a receive that times out.
    if rank == 0:
        work = dist.irecv(np.zeros(1), src=1, tag=99)
        with pytest.raises(weft.TimeoutError):
            work.wait(timeout=0.2)
        with pytest.raises(weft.TimeoutError):
            work.get_future().wait()
    # manual futures, as torch.futures.Future
    manual = dist.Future()
    chained = manual.then(lambda f: f.value() + 1)
    assert not manual.done()
    manual.set_result(41)
    assert chained.wait() == 42
    with pytest.raises(RuntimeError):
        manual.set_result(0)
    dist.barrier()


def test_get_future_and_result():
    run(_futures, 3)


# --- timeouts --------------------------------------------------------------------------------

def _group_timeout(rank, n):
    assert dist.group.WORLD.timeout == datetime.timedelta(seconds=30)  # _ranks' OP_TIMEOUT
    short = dist.new_group([0, 1], timeout=datetime.timedelta(seconds=1))
    assert short.timeout == datetime.timedelta(seconds=1)
    assert dist.new_group([0, 1]).timeout == datetime.timedelta(seconds=30)  # the world's
    if rank == 0:
        start = time.monotonic()
        with pytest.raises((weft.TimeoutError, weft.PeerFailureError, weft.AbortedError)) as info:
            dist.all_reduce(np.ones(4), group=short)  # rank 1 never joins
        elapsed = time.monotonic() - start
        assert isinstance(info.value, weft.TimeoutError), info.value
        assert 0.8 < elapsed < 8, f"the group's 1 s timeout took {elapsed:.1f} s"
    dist.barrier()  # the world (30 s) is unaffected


def test_new_group_timeout_bounds_a_wait():
    run(_group_timeout, 2)


def _per_call_timeout(rank, n):
    g = dist.new_group([0, 1])
    assert g.timeout == datetime.timedelta(seconds=30)
    if rank == 0:
        start = time.monotonic()
        with pytest.raises(weft.TimeoutError):
            dist.barrier(group=g, timeout=datetime.timedelta(seconds=1))
        assert time.monotonic() - start < 8
    h = dist.new_group([0, 1])
    if rank == 0:
        start = time.monotonic()
        with pytest.raises(weft.TimeoutError):
            h._pg.all_reduce(np.ones(2), timeout=0.5)  # the binding's per-call timeout
        assert time.monotonic() - start < 8
    dist.barrier()


def test_per_call_timeout():
    run(_per_call_timeout, 2)


def _default_timeout(rank, n, weft_timeout):
    if weft_timeout is None:
        os.environ.pop("WEFT_TIMEOUT", None)
    else:
        os.environ["WEFT_TIMEOUT"] = weft_timeout
    dist.init_process_group("weft")
    try:
        want = (dist.default_pg_timeout if weft_timeout is None
                else datetime.timedelta(seconds=7))
        assert dist.group.WORLD.timeout == want
        assert dist.new_group().timeout == want
        assert dist.default_pg_timeout == datetime.timedelta(minutes=30)
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("weft_timeout", [None, "7s"])
def test_default_timeout(weft_timeout):
    run(_default_timeout, 2, weft_timeout, init=False)


# --- constants, availability, debug level ------------------------------------------------------

def test_backend_constants_and_availability():
    assert dist.Backend.GLOO == "gloo" and dist.Backend.NCCL == "nccl"
    assert dist.Backend.MPI == "mpi" and dist.Backend.UCC == "ucc"
    assert dist.Backend.UNDEFINED == "undefined" and dist.Backend.WEFT == "weft"
    assert dist.Backend("WEFT") == "weft" and dist.dist_backend is dist.Backend
    assert not dist.is_gloo_available() and not dist.is_nccl_available()
    assert not dist.is_mpi_available() and not dist.is_ucc_available()
    assert dist.is_available()
    assert dist.supports_complex(dist.ReduceOp.SUM)
    assert not dist.supports_complex(dist.ReduceOp.MAX)


def test_options_defaults():
    opts = dist.AllreduceOptions()
    assert opts.reduceOp == dist.ReduceOp.SUM and opts.timeout < datetime.timedelta(0)
    opts.reduceOp = dist.ReduceOp.MAX
    with pytest.raises(AttributeError):
        opts.reduce_op = 1  # torch's options reject unknown attributes too
    assert dist.BroadcastOptions().rootRank == 0 and dist.BarrierOptions().device_ids == []
    assert dist.ReduceOptions().rootTensor == 0


def test_debug_level(monkeypatch):
    saved = dist.get_debug_level()
    try:
        for text, level in (("detail", dist.DebugLevel.DETAIL), ("INFO", dist.DebugLevel.INFO),
                            ("Off", dist.DebugLevel.OFF)):
            monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", text)
            dist.set_debug_level_from_env()
            assert dist.get_debug_level() == level
        monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", "loud")
        with pytest.raises(RuntimeError, match="OFF, INFO, or DETAIL"):
            dist.set_debug_level_from_env()
        monkeypatch.delenv("TORCH_DISTRIBUTED_DEBUG")
        dist.set_debug_level_from_env()
        assert dist.get_debug_level() == dist.DebugLevel.OFF
        dist.set_debug_level(dist.DebugLevel.INFO)
        assert dist.get_debug_level() == dist.DebugLevel.INFO and str(dist.DebugLevel.INFO) == \
            "DebugLevel.INFO"
        assert dist.DebugLevel(2) is dist.DebugLevel.DETAIL
    finally:
        dist.set_debug_level(saved)

"""Every collective of weft.distributed against numpy references, world sizes 1 to 4, on numpy
arrays and torch tensors, every dtype, every reduce op, blocking and async_op=True."""

import numpy as np
import pytest

import weft.distributed as dist
from _ranks import (FLOATS, NUMPY_DTYPES, TORCH_DTYPES, assert_equal, inputs_for, make, ops_for,
                    run, values)

WORLD_SIZES = [1, 2, 3, 4]
CASES = [("numpy", d) for d in NUMPY_DTYPES] + [("torch", d) for d in TORCH_DTYPES]


def _all_reduce(rank, n):
    for kind, dtype in CASES:
        for op in ops_for(dtype):
            for async_op in (False, True):
                inputs = inputs_for(op, n, 5, dtype)
                t = make(inputs[rank], dtype, kind)
                work = dist.all_reduce(t, op=op, async_op=async_op)
                if async_op:
                    assert work.wait() is True and work.is_completed() and work.is_success()
                    assert work.exception() is None
                assert_equal(t, _ref(inputs, op, dtype), dtype, f"all_reduce {op} {kind}")


def _ref(inputs, op, dtype):
    from _ranks import reference
    return reference(inputs, op, dtype)


def _reduce(rank, n):
    for kind, dtype in CASES:
        for op in ops_for(dtype)[:2]:
            for dst in {0, n - 1}:
                inputs = inputs_for(op, n, 4, dtype)
                t = make(inputs[rank], dtype, kind)
                dist.reduce(t, dst=dst, op=op)
                want = _ref(inputs, op, dtype) if rank == dst else inputs[rank]
                assert_equal(t, want, dtype, f"reduce dst={dst}")


def _broadcast(rank, n):
    for kind, dtype in CASES:
        for src in range(n):
            t = make(values(rank, 6, dtype), dtype, kind)
            work = dist.broadcast(t, src=src, async_op=(src % 2 == 1))
            if work is not None:
                work.wait()
            assert_equal(t, values(src, 6, dtype), dtype, f"broadcast src={src}")


def _all_gather(rank, n):
    for kind, dtype in CASES:
        t = make(values(rank, 3, dtype), dtype, kind)
        outs = [make(np.zeros(3), dtype, kind) for _ in range(n)]
        dist.all_gather(outs, t)
        for r in range(n):
            assert_equal(outs[r], values(r, 3, dtype), dtype, "all_gather")
        # uneven: rank r contributes r + 1 elements
        t = make(values(rank, rank + 1, dtype), dtype, kind)
        outs = [make(np.zeros(r + 1), dtype, kind) for r in range(n)]
        dist.all_gather(outs, t, async_op=True).wait()
        for r in range(n):
            assert_equal(outs[r], values(r, r + 1, dtype), dtype, "uneven all_gather")
        out = make(np.zeros(3 * n), dtype, kind)
        dist.all_gather_into_tensor(out, make(values(rank, 3, dtype), dtype, kind))
        assert_equal(out, np.concatenate([values(r, 3, dtype) for r in range(n)]), dtype,
                     "all_gather_into_tensor")


def _gather_scatter(rank, n):
    for kind, dtype in CASES:
        for root in {0, n - 1}:
            t = make(values(rank, 2, dtype), dtype, kind)
            outs = [make(np.zeros(2), dtype, kind) for _ in range(n)] if rank == root else None
            dist.gather(t, gather_list=outs, dst=root)
            if rank == root:
                for r in range(n):
                    assert_equal(outs[r], values(r, 2, dtype), dtype, "gather")
            out = make(np.zeros(4), dtype, kind)
            ins = ([make(values(r, 4, dtype, seed=1), dtype, kind) for r in range(n)]
                   if rank == root else None)
            dist.scatter(out, scatter_list=ins, src=root)
            assert_equal(out, values(rank, 4, dtype, seed=1), dtype, "scatter")


def _reduce_scatter(rank, n):
    for kind, dtype in CASES:
        for op in ops_for(dtype):
            per_rank = [inputs_for(op, n, 3, dtype, seed=s) for s in range(n)]  # [block][rank]
            ins = [make(per_rank[b][rank], dtype, kind) for b in range(n)]
            out = make(np.zeros(3), dtype, kind)
            dist.reduce_scatter(out, ins, op=op)
            assert_equal(out, _ref(per_rank[rank], op, dtype), dtype, f"reduce_scatter {op}")
            flat = make(np.concatenate([per_rank[b][rank] for b in range(n)]), dtype, kind)
            out = make(np.zeros(3), dtype, kind)
            dist.reduce_scatter_tensor(out, flat, op=op, async_op=True).wait()
            assert_equal(out, _ref(per_rank[rank], op, dtype), dtype, f"reduce_scatter_tensor {op}")


def _all_to_all(rank, n):
    for kind, dtype in CASES:
        ins = [make(values(rank * n + p, 2, dtype), dtype, kind) for p in range(n)]
        outs = [make(np.zeros(2), dtype, kind) for _ in range(n)]
        dist.all_to_all(outs, ins)
        for p in range(n):
            assert_equal(outs[p], values(p * n + rank, 2, dtype), dtype, "all_to_all")
        inp = make(np.concatenate([values(rank * n + p, 2, dtype) for p in range(n)]), dtype, kind)
        out = make(np.zeros(2 * n), dtype, kind)
        dist.all_to_all_single(out, inp)
        assert_equal(out, np.concatenate([values(p * n + rank, 2, dtype) for p in range(n)]),
                     dtype, "all_to_all_single")
    # split sizes count rows: rank r sends p + 1 rows of width 2 to rank p
    width = 2
    in_splits = [p + 1 for p in range(n)]
    out_splits = [rank + 1] * n
    inp = np.concatenate([np.full((p + 1, width), 10 * rank + p, np.float32) for p in range(n)])
    out = np.zeros((sum(out_splits), width), np.float32)
    dist.all_to_all_single(out, inp, output_split_sizes=out_splits, input_split_sizes=in_splits)
    want = np.concatenate([np.full((rank + 1, width), 10 * p + rank, np.float32) for p in range(n)])
    assert np.array_equal(out, want), (out, want)


def _barrier_scan(rank, n):
    dist.barrier()
    dist.barrier(async_op=True).wait()
    for dtype in ("float32", "int64"):
        inp = make(values(rank, 4, dtype), dtype)
        out = make(np.zeros(4), dtype)
        dist.scan(out, inp)
        assert_equal(out, sum(values(r, 4, dtype) for r in range(rank + 1)), dtype, "scan")
        out = make(np.full(4, 7.0), dtype)
        dist.exscan(out, inp)
        want = sum(values(r, 4, dtype) for r in range(rank)) if rank else np.full(4, 7.0)
        assert_equal(out, want, dtype, "exscan")


def _subgroups(rank, n):
    members = [r for r in range(n) if r % 2 == 1] or [0]
    g = dist.new_group(members)
    if rank in members:
        assert dist.get_rank(g) == members.index(rank)
        assert dist.get_world_size(g) == len(members)
        t = np.full(3, rank + 1, np.float32)
        dist.all_reduce(t, group=g)
        assert np.all(t == sum(r + 1 for r in members))
        # src and dst are global ranks
        t = np.full(2, rank, np.int64)
        dist.broadcast(t, src=members[-1], group=g)
        assert np.all(t == members[-1])
        t = np.full(2, rank, np.int64)
        dist.reduce(t, dst=members[-1], group=g, op=dist.ReduceOp.MAX)
        if rank == members[-1]:
            assert np.all(t == max(members))
        outs = [np.zeros(1, np.int64) for _ in members] if rank == members[0] else None
        dist.gather(np.array([rank], np.int64), outs, dst=members[0], group=g)
        if outs:
            assert [int(o[0]) for o in outs] == members
    else:
        assert g is dist.GroupMember.NON_GROUP_MEMBER
        assert dist.get_rank(g) == -1
        assert dist.all_reduce(np.zeros(1), group=g) is None
    halves = [list(range(n // 2)), list(range(n // 2, n))]
    groups = [dist.new_group(h) if h else None for h in halves]
    mine = 0 if rank < n // 2 else 1
    t = np.array([1.0 + mine], np.float32)
    dist.all_reduce(t, group=groups[mine])
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    assert t[0] == max((1.0 + i) * len(h) for i, h in enumerate(halves) if h)
    split = dist.split(color=rank % 2, key=-rank)
    assert dist.get_process_group_ranks(split) == sorted(
        [r for r in range(n) if r % 2 == rank % 2], reverse=True)


@pytest.mark.parametrize("n", WORLD_SIZES)
@pytest.mark.parametrize("body", [_all_reduce, _reduce, _broadcast, _all_gather, _gather_scatter,
                                  _reduce_scatter, _all_to_all, _barrier_scan, _subgroups],
                         ids=lambda f: f.__name__.strip("_"))
def test_collective(body, n):
    run(body, n, timeout=90)

"""weft as a torch.distributed backend (weft.torch): every op torch 1.13 hands a backend,
through torch.distributed with backend "weft", against expected values and against gloo.

Ranks are forked (weft.spawn, start_method="fork"): torch is imported once, here.
"""

import datetime
import os
import pathlib
import sys
import tempfile

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402

try:
    import weft.torch as weft_torch  # noqa: E402
except ImportError as error:  # built without torch's C++ headers
    pytest.skip(f"weft.torch unavailable: {error}", allow_module_level=True)

import weft  # noqa: E402

TIMEOUT = datetime.timedelta(seconds=30)
EXAMPLES = pathlib.Path(os.environ.get(
    "WEFT_EXAMPLES_DIR", pathlib.Path(__file__).resolve().parents[2] / "examples" / "python"))


def _body(rank, fn, nprocs, args, init_method):
    if init_method == "env":
        dist.init_process_group("weft", timeout=TIMEOUT)
    else:
        dist.init_process_group("weft", init_method=init_method, rank=rank, world_size=nprocs,
                                timeout=TIMEOUT)
    try:
        fn(rank, nprocs, *args)
        # Rank 0 hosts torch's TCPStore: it must not exit while a peer still polls the store
        # (torch's own _store_based_barrier at the end of init_process_group).
        dist.barrier()
    finally:
        dist.destroy_process_group()


def run(fn, nprocs, *args, init_method="env", timeout=60):
    weft.spawn(_body, args=(fn, nprocs, args, init_method), nprocs=nprocs, start_method="fork",
               timeout=timeout)


def full(value, n=4, dtype=torch.float32):
    return torch.full((n,), value, dtype=dtype)


# --- the ops --------------------------------------------------------------------------------

def _all_ops(rank, n):
    pg = dist.distributed_c10d._get_default_group()
    assert pg.name() == "weft"
    assert dist.get_backend() == "weft"
    assert weft_torch.is_weft_group()
    assert dist.get_rank() == rank and dist.get_world_size() == n
    ranks = torch.arange(n, dtype=torch.float32)

    # all_reduce, every op
    t = full(rank + 1.0)
    dist.all_reduce(t)
    assert torch.equal(t, full(n * (n + 1) / 2))
    t = full(rank + 1.0)
    dist.all_reduce(t, op=dist.ReduceOp.PRODUCT)
    assert torch.equal(t, full(float(torch.prod(ranks + 1))))
    t = full(rank + 1.0)
    dist.all_reduce(t, op=dist.ReduceOp.MIN)
    assert torch.equal(t, full(1.0))
    t = full(rank + 1.0)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    assert torch.equal(t, full(float(n)))
    t = full(rank + 1.0, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    assert torch.allclose(t, full((n + 1) / 2, dtype=torch.float64))
    for op, expect in ((dist.ReduceOp.BAND, 0 if n > 1 else 1), (dist.ReduceOp.BOR, (1 << n) - 1),
                       (dist.ReduceOp.BXOR, (1 << n) - 1)):
        t = full(1 << rank, dtype=torch.int64)
        dist.all_reduce(t, op=op)
        assert torch.equal(t, full(expect, dtype=torch.int64)), (op, t)
    # dtypes, complex, non-contiguous, empty
    for dtype in (torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int32, torch.int64):
        t = full(1, dtype=dtype)
        dist.all_reduce(t)
        assert torch.equal(t, full(n, dtype=dtype)), dtype
    t = torch.full((3,), complex(rank, 1), dtype=torch.complex64)
    dist.all_reduce(t)
    assert torch.equal(t, torch.full((3,), complex(n * (n - 1) / 2, n), dtype=torch.complex64))
    base = torch.zeros(4, 6)
    view = base[:, ::2]  # not contiguous
    view.fill_(rank + 1.0)
    dist.all_reduce(view)
    assert torch.equal(base[:, ::2], torch.full((4, 3), n * (n + 1) / 2))
    assert torch.equal(base[:, 1::2], torch.zeros(4, 3))
    t = torch.zeros(0)
    dist.all_reduce(t)

    # async + get_future (what DDP uses)
    t = full(rank + 1.0)
    work = dist.all_reduce(t, async_op=True)
    result = work.get_future().wait()
    assert torch.equal(result[0], full(n * (n + 1) / 2))
    assert work.is_completed()
    fut = dist.all_reduce(full(1.0), async_op=True).get_future().then(lambda f: f.value()[0] * 2)
    assert torch.equal(fut.wait(), full(2.0 * n))

    # all_reduce_coalesced (torch's Python gates it by name; the op itself via the group)
    a, b = full(rank + 1.0), torch.full((2, 2), 1.0)
    pg.allreduce_coalesced([a, b]).wait()
    assert torch.equal(a, full(n * (n + 1) / 2)) and torch.equal(b, torch.full((2, 2), float(n)))

    # broadcast, reduce
    for root in range(n):
        t = full(float(rank))
        dist.broadcast(t, src=root)
        assert torch.equal(t, full(float(root)))
        t = full(rank + 1.0)
        dist.reduce(t, dst=root, op=dist.ReduceOp.SUM)
        assert torch.equal(t, full(n * (n + 1) / 2 if rank == root else rank + 1.0))

    # all_gather, all_gather_into_tensor (_allgather_base), all_gather_coalesced
    out = [torch.zeros(2, 3) for _ in range(n)]
    dist.all_gather(out, torch.full((2, 3), float(rank)))
    assert all(torch.equal(out[r], torch.full((2, 3), float(r))) for r in range(n))
    flat = torch.zeros(n * 3)
    dist.all_gather_into_tensor(flat, torch.full((3,), float(rank)))
    assert torch.equal(flat, ranks.repeat_interleave(3))
    out = [[torch.zeros(2), torch.zeros(3)] for _ in range(n)]
    dist.all_gather_coalesced(out, [full(float(rank), 2), full(rank * 10.0, 3)])
    for r in range(n):
        assert torch.equal(out[r][0], full(float(r), 2))
        assert torch.equal(out[r][1], full(r * 10.0, 3))
    # mixed dtypes: torch's Python refuses them, the backend's op takes them
    out = [[torch.zeros(2), torch.zeros(3, dtype=torch.int64)] for _ in range(n)]
    pg.allgather_coalesced(out, [full(float(rank), 2), full(rank * 10, 3, torch.int64)]).wait()
    for r in range(n):
        assert torch.equal(out[r][0], full(float(r), 2))
        assert torch.equal(out[r][1], full(r * 10, 3, torch.int64))

    # gather, scatter
    for root in range(n):
        gl = [torch.zeros(2) for _ in range(n)] if rank == root else None
        dist.gather(full(float(rank), 2), gather_list=gl, dst=root)
        if rank == root:
            assert all(torch.equal(gl[r], full(float(r), 2)) for r in range(n))
        t = torch.zeros(2)
        sl = [full(float(r * 7), 2) for r in range(n)] if rank == root else None
        dist.scatter(t, scatter_list=sl, src=root)
        assert torch.equal(t, full(rank * 7.0, 2))

    # reduce_scatter (list), reduce_scatter_tensor (_reduce_scatter_base)
    t = torch.zeros(2)
    dist.reduce_scatter(t, [full(float(r + rank), 2) for r in range(n)])
    assert torch.equal(t, full(float(n * rank + n * (n - 1) / 2), 2))
    t = torch.zeros(2)
    dist.reduce_scatter_tensor(t, torch.arange(2 * n, dtype=torch.float32))
    assert torch.equal(t, torch.arange(2 * rank, 2 * rank + 2, dtype=torch.float32) * n)

    # all_to_all, all_to_all_single (equal blocks and split sizes)
    outs = [torch.zeros(2) for _ in range(n)]
    dist.all_to_all(outs, [full(float(rank * 10 + r), 2) for r in range(n)])
    assert all(torch.equal(outs[r], full(float(r * 10 + rank), 2)) for r in range(n))
    out = torch.zeros(n, 3)
    dist.all_to_all_single(out, torch.full((n, 3), float(rank)) + torch.arange(n)[:, None] * 10)
    assert torch.equal(out, torch.arange(n, dtype=torch.float32)[:, None] + rank * 10
                       + torch.zeros(n, 3))
    # rank r sends r+1 rows of width 2 to each peer; receives (p+1) rows from peer p
    in_splits = [rank + 1] * n
    out_splits = [p + 1 for p in range(n)]
    inp = torch.full((sum(in_splits), 2), float(rank))
    out = torch.zeros(sum(out_splits), 2)
    dist.all_to_all_single(out, inp, out_splits, in_splits)
    expect = torch.cat([torch.full((p + 1, 2), float(p)) for p in range(n)])
    assert torch.equal(out, expect)

    # point to point: send/recv, isend/irecv, recv from any source
    if n > 1:
        nxt, prv = (rank + 1) % n, (rank - 1) % n
        t = torch.zeros(3)
        reqs = [dist.isend(full(float(rank), 3), nxt), dist.irecv(t, prv)]
        for r in reqs:
            r.wait()
        assert torch.equal(t, full(float(prv), 3))
        if rank == 0:
            got = set()
            for _ in range(n - 1):
                t = torch.zeros(1)
                src = dist.recv(t, tag=7)  # any source
                assert t.item() == src * 100
                got.add(src)
            assert got == set(range(1, n))
        else:
            dist.send(torch.tensor([rank * 100.0]), 0, tag=7)
        ops = [dist.P2POp(dist.isend, full(float(rank), 2), nxt),
               dist.P2POp(dist.irecv, t := torch.zeros(2), prv)]
        for r in dist.batch_isend_irecv(ops):
            r.wait()
        assert torch.equal(t, full(float(prv), 2))

    dist.barrier()

    # object collectives (torch's, on top of the tensor ops)
    objs = [None] * n
    dist.all_gather_object(objs, {"rank": rank})
    assert objs == [{"rank": r} for r in range(n)]
    lst = [("hello", rank)] if rank == 0 else [None]
    dist.broadcast_object_list(lst, src=0)
    assert lst == [("hello", 0)]

    # subgroups: new_group runs on weft too
    if n > 1:
        g = dist.new_group([0, n - 1])
        if rank in (0, n - 1):
            assert weft_torch.is_weft_group(g)
            t = full(1.0)
            dist.all_reduce(t, group=g)
            assert torch.equal(t, full(2.0))
            if n > 2:
                t = torch.zeros(1)
                if rank == 0:
                    dist.send(torch.tensor([42.0]), n - 1, group=g)  # global ranks
                else:
                    dist.recv(t, 0, group=g)
                    assert t.item() == 42.0
        dist.barrier()


@pytest.mark.parametrize("nprocs", [1, 2, 3])
def test_all_ops(nprocs):
    run(_all_ops, nprocs)


def _small(rank, n):
    t = full(rank + 1.0)
    dist.all_reduce(t)
    assert torch.equal(t, full(n * (n + 1) / 2))


def test_init_methods_tcp_and_file():
    port = weft.free_port("127.0.0.1")
    run(_small, 2, init_method=f"tcp://127.0.0.1:{port}")
    with tempfile.TemporaryDirectory() as d:
        run(_small, 3, init_method=f"file://{d}/rendezvous")


def _store_rendezvous(rank, n):
    # weft's rendezvous ran over torch's store: its keys are under torch's prefix.
    store = dist.distributed_c10d._get_default_store()
    assert store.num_keys() > 0
    _small(rank, n)


def test_explicit_store():
    port = weft.free_port("127.0.0.1")

    def body(rank, n):
        store = dist.TCPStore("127.0.0.1", port, n, rank == 0, timeout=TIMEOUT)
        dist.init_process_group("weft", store=store, rank=rank, world_size=n, timeout=TIMEOUT)
        try:
            _store_rendezvous(rank, n)
        finally:
            dist.destroy_process_group()

    weft.spawn(body, args=(2,), nprocs=2, start_method="fork", timeout=60)


def _versus_gloo(rank, n):
    gloo = dist.new_group(list(range(n)), backend="gloo")
    gen = torch.Generator().manual_seed(rank)
    x = torch.randn(1000, generator=gen, dtype=torch.float64)
    a, b = x.clone(), x.clone()
    dist.all_reduce(a)
    dist.all_reduce(b, group=gloo)
    assert torch.allclose(a, b)
    a, b = x.clone(), x.clone()
    dist.all_reduce(a, op=dist.ReduceOp.MAX)
    dist.all_reduce(b, op=dist.ReduceOp.MAX, group=gloo)
    assert torch.equal(a, b)
    oa = [torch.zeros_like(x) for _ in range(n)]
    ob = [torch.zeros_like(x) for _ in range(n)]
    dist.all_gather(oa, x)
    dist.all_gather(ob, x, group=gloo)
    assert all(torch.equal(p, q) for p, q in zip(oa, ob))
    oa, ob = torch.zeros_like(x[:999]), torch.zeros_like(x[:999])
    dist.all_to_all_single(oa, x[:999])
    dist.all_to_all_single(ob, x[:999], group=gloo)
    assert torch.equal(oa, ob)
    a, b = x.clone(), x.clone()
    dist.broadcast(a, 1)
    dist.broadcast(b, 1, group=gloo)
    assert torch.equal(a, b)


def test_versus_gloo():
    run(_versus_gloo, 3)


def _errors(rank, n):
    pg = dist.distributed_c10d._get_default_group()
    opts = dist.AllreduceOptions()
    opts.reduceOp = dist.ReduceOp.MAX
    with pytest.raises(RuntimeError, match="complex"):  # refused before anything is sent
        pg.allreduce([torch.zeros(2, dtype=torch.complex64)], opts)
    with pytest.raises(RuntimeError, match="one tensor"):
        pg.allreduce([torch.zeros(2), torch.zeros(2)])
    with pytest.raises(RuntimeError):
        dist.broadcast(torch.zeros(2), src=n + 3)


def test_errors():
    run(_errors, 2)


# --- memory safety (issue 25): split sizes, read-only outputs, tensors resized mid-operation ---

def _bad_split_sizes(rank, n):
    # (output splits, input splits, shape, the split the error names): 2**62 rows of 4 elements
    # wrap to 0 in 64 bits, so the empty tensors' sizes would seem to add up.
    cases = [([2**62, 0], [0, 0], (0, 4), "output_split_sizes[0] is 4611686018427387904"),
             ([1, 1], [-1, 3], (2, 4), "input_split_sizes[0] is -1"),
             ([1, 1], [3, -1], (2, 4), "input_split_sizes[0] is 3")]
    for out_splits, in_splits, shape, shown in cases:
        with pytest.raises(ValueError) as info:
            dist.all_to_all_single(torch.zeros(shape), torch.zeros(shape), out_splits, in_splits)
        message = str(info.value)
        for part in ("all_to_all_single", f"rank {rank}", shown, f"{shape[0]} rows"):
            assert part in message, (part, message)
    out = torch.zeros(2, 4)
    dist.all_to_all_single(out, torch.full((2, 4), float(rank)), [1, 1], [1, 1])
    assert torch.equal(out, torch.tensor([[0.0] * 4, [1.0] * 4]))


def test_all_to_all_single_refuses_bad_split_sizes():
    run(_bad_split_sizes, 2)


def _read_only_outputs(rank, n, directory):
    import warnings

    import numpy as np
    np.zeros((8, 8), np.float32).tofile(f"{directory}/ro{rank}.bin")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns that the array is not writable
        t = torch.from_numpy(np.memmap(f"{directory}/ro{rank}.bin", dtype=np.float32, mode="r",
                                       shape=(8, 8)))
    calls = [lambda: dist.all_reduce(t), lambda: dist.broadcast(t, src=0),
             lambda: dist.all_reduce(t[:, 0]),  # through a contiguous copy copied back
             lambda: dist.all_gather([t[:4], t[4:]], torch.ones(4, 8)),
             lambda: dist.all_to_all_single(t, torch.ones(8, 8)),
             lambda: dist.irecv(t, src=1 - rank),
             lambda: dist.all_reduce_coalesced([t[:4], t[4:]]),  # results copied back by torch
             lambda: dist.all_gather_coalesced([[t[0]], [t[1]]], [torch.ones(8)])]
    for call in calls:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the coalesced forms are deprecated in torch 2.x
            with pytest.raises(ValueError, match="read-only memory"):
                call()
    assert float(t.sum()) == 0.0
    ok = full(float(rank))
    dist.all_reduce(ok)
    assert torch.equal(ok, full(1.0))


def test_outputs_in_read_only_memory_are_refused(tmp_path):
    run(_read_only_outputs, 2, str(tmp_path))


def _tensors_changed_during_async_ops(rank, n):
    import gc
    go = torch.zeros(1)
    for i in range(30):
        t = full(float(rank), 1024)
        work = dist.all_reduce(t, async_op=True)
        with pytest.raises(RuntimeError, match="not resizable"):
            t.resize_(1 << 18)  # torch would free the memory weft writes the sum into
        t.resize_(1024)  # torch set the new shape before refusing: back to the storage's
        work.wait()
        assert torch.equal(t, full(1.0, 1024)), i
        t.resize_(1 << 18)  # the operation is over
        # A receive into a tensor re-pointed elsewhere: its memory must stay weft's.
        if rank == 0:
            dist.recv(go, src=1, tag=2)
            dist.send(full(float(i), 1024), dst=1, tag=1)
        else:
            t = torch.zeros(1024)
            work = dist.irecv(t, src=0, tag=1)
            t.set_(torch.zeros(3))
            gc.collect()
            decoys = [full(-1.0, 1024) for _ in range(32)]
            dist.send(go, dst=0, tag=2)
            work.wait()
            for d in decoys:
                assert torch.equal(d, full(-1.0, 1024)), f"round {i}: a decoy was written into"


def test_tensors_resized_or_repointed_during_async_ops():
    run(_tensors_changed_during_async_ops, 2)


def test_ddp_digits_same_accuracy_at_1_2_4_ranks(tmp_path):
    """examples/python/ddp_digits.py: DDP over weft reaches the 1-rank accuracy."""
    pytest.importorskip("sklearn")
    import json
    sys.path.insert(0, str(EXAMPLES))  # spawned ranks import ddp_digits too
    try:
        import ddp_digits
        results = {}
        for n in (1, 2, 4):
            path = tmp_path / f"ddp{n}.json"
            ddp_digits.main(["--world-size", str(n), "--epochs", "6", "--quiet",
                             "--json", str(path)])
            results[n] = json.loads(path.read_text())
    finally:
        sys.path.remove(str(EXAMPLES))
    base = results[1]
    assert base["accuracy"] > 0.9, base
    for n in (2, 4):
        r = results[n]
        assert r["identical_parameters"], r
        assert abs(r["accuracy"] - base["accuracy"]) <= 0.02, (n, r["accuracy"], base["accuracy"])
        assert abs(r["losses"][-1] - base["losses"][-1]) <= 1e-3 + 0.02 * base["losses"][-1], (n, r)


def _ddp_loses_a_rank_and_goes_on(rank, nprocs):
    from torch.nn.parallel import DistributedDataParallel
    dist.init_process_group("weft", timeout=TIMEOUT)
    store = dist.distributed_c10d._get_default_store()  # outlives the first group
    model = torch.nn.Linear(4, 1).double()
    ddp = DistributedDataParallel(model)
    for _ in range(3):
        ddp(torch.ones(2, 4, dtype=torch.float64)).sum().backward()
    if rank == 1:
        os._exit(0)  # as a crash: no goodbye
    # DDP's all_reduce fails in backward as an exception naming the lost rank, not a crash.
    with pytest.raises(RuntimeError, match="rank 1"):
        ddp(torch.ones(2, 4, dtype=torch.float64)).sum().backward()
    alive = weft_torch.survivors()
    assert alive == [0, 2], alive
    dist.destroy_process_group()
    dist.init_process_group("weft", store=dist.PrefixStore("after-the-loss", store),
                            rank=alive.index(rank), world_size=len(alive), timeout=TIMEOUT)
    value = torch.full((4,), float(rank))
    dist.all_reduce(value)
    assert torch.equal(value, torch.full((4,), 2.0)), value  # ranks 0 and 2
    dist.barrier()
    dist.destroy_process_group()


def test_ddp_survivors_of_a_lost_rank_agree_and_start_a_new_group():
    weft.spawn(_ddp_loses_a_rank_and_goes_on, args=(3,), nprocs=3, start_method="fork",
               timeout=90)

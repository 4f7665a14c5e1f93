"""The backend "weft" on torch 2.x (weft._torch2): what torch 2.x adds to the backend contract
(synchronous calls, the new tensor forms, coalescing, futures for communication hooks, group
names for device meshes), data of any dtype and layout, and training with DDP's communication
hooks and FSDP2 against gloo. test_torch_backend.py covers every op on both torches.
"""

import datetime
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
if int(torch.__version__.split(".")[0]) < 2:
    pytest.skip("torch 2.x only (this is torch %s)" % torch.__version__, allow_module_level=True)

import torch.distributed as dist  # noqa: E402

import weft  # noqa: E402
import weft.torch as weft_torch  # noqa: E402
from weft import _torch2  # noqa: E402

TIMEOUT = datetime.timedelta(seconds=30)
C10D = torch._C._distributed_c10d
EXAMPLES = pathlib.Path(os.environ.get(
    "WEFT_EXAMPLES_DIR", pathlib.Path(__file__).resolve().parents[2] / "examples" / "python"))


def _body(rank, fn, nprocs, args):
    dist.init_process_group("weft", timeout=TIMEOUT)
    try:
        fn(rank, nprocs, *args)
        dist.barrier()
    finally:
        dist.destroy_process_group()


def run(fn, nprocs, *args, timeout=60):
    weft.spawn(_body, args=(fn, nprocs, args), nprocs=nprocs, start_method="fork",
               timeout=timeout)


def _synchronous_and_asynchronous(rank, n):
    pg = dist.distributed_c10d._get_default_group()
    assert isinstance(pg, _torch2.WeftProcessGroup)
    assert weft_torch.is_weft_group(pg)
    # torch sets asyncOp=False for async_op=False: the backend runs the call and returns None
    opts = C10D.AllreduceOptions()
    opts.asyncOp = False
    t = torch.full((3,), float(rank + 1))
    assert pg.allreduce([t], opts) is None
    assert torch.equal(t, torch.full((3,), n * (n + 1) / 2))
    # C++ callers (DDP) leave asyncOp True: a Work whose future holds the outputs
    t = torch.full((3,), float(rank))
    work = pg.allreduce([t], C10D.AllreduceOptions())
    value = work.get_future().wait()
    assert work.is_completed() and work.is_success()
    assert value[0] is t and torch.equal(t, torch.full((3,), n * (n - 1) / 2))
    assert work.result()[0] is t
    # a future's callback runs when the operation completes
    t = torch.ones(2)
    done = dist.all_reduce(t, async_op=True).get_future().then(lambda f: f.value()[0] * 10)
    assert torch.equal(done.wait(), torch.full((2,), 10.0 * n))
    # futures of several operations complete in order, each with its own outputs
    tensors = [torch.full((4,), float(i)) for i in range(5)]
    futures = [dist.all_reduce(x, async_op=True).get_future() for x in tensors]
    for i, future in enumerate(futures):
        assert torch.equal(future.wait()[0], torch.full((4,), float(i * n)))
    assert pg._get_sequence_number_for_group() > 0


def test_synchronous_and_asynchronous_calls():
    run(_synchronous_and_asynchronous, 2)


def _coalesced_and_new_names(rank, n):
    # _coalescing_manager: all_reduce, all_gather_into_tensor and reduce_scatter_tensor
    xs = [torch.full((k + 1,), float(rank + k)) for k in range(3)]
    with dist._coalescing_manager(async_ops=True) as cm:
        for x in xs:
            dist.all_reduce(x)
    cm.wait()
    for k, x in enumerate(xs):
        assert torch.equal(x, torch.full((k + 1,), float(sum(r + k for r in range(n)))))
    outs = [torch.zeros(n * 2) for _ in range(2)]
    with dist._coalescing_manager():
        for k, out in enumerate(outs):
            dist.all_gather_into_tensor(out, torch.full((2,), float(rank * 10 + k)))
    for k, out in enumerate(outs):
        expect = torch.tensor([float(r * 10 + k) for r in range(n)]).repeat_interleave(2)
        assert torch.equal(out, expect)
    outs = [torch.zeros(2) for _ in range(2)]
    with dist._coalescing_manager():
        for k, out in enumerate(outs):
            dist.reduce_scatter_tensor(out, torch.full((2 * n,), float(k + 1)))
    for k, out in enumerate(outs):
        assert torch.equal(out, torch.full((2,), float(n * (k + 1))))
    # torch 2.13's names for the tensor forms, and the older ones
    pg = dist.distributed_c10d._get_default_group()
    for name in ("all_gather_single", "_allgather_base"):
        out = torch.zeros(n)
        getattr(pg, name)(out, torch.tensor([float(rank)])).wait()
        assert torch.equal(out, torch.arange(n, dtype=torch.float32))
    for name in ("reduce_scatter_single", "_reduce_scatter_base"):
        out = torch.zeros(1)
        getattr(pg, name)(out, torch.arange(n, dtype=torch.float32)).wait()
        assert out.item() == rank * n
    for name in ("all_to_all_single", "alltoall_base"):
        out = torch.zeros(n, dtype=torch.int64)
        getattr(pg, name)(out, torch.arange(n) + 100 * rank, [], []).wait()
        assert out.tolist() == [100 * r + rank for r in range(n)]


def test_coalescing_and_tensor_forms():
    run(_coalesced_and_new_names, 3)


def _any_dtype_and_layout(rank, n):
    # dtypes weft does not reduce move as bytes
    c = torch.full((3,), complex(rank, -rank), dtype=torch.complex128)
    dist.broadcast(c, 1)
    assert torch.equal(c, torch.full((3,), complex(1, -1), dtype=torch.complex128))
    out = [torch.zeros(2, dtype=torch.complex64) for _ in range(n)]
    dist.all_gather(out, torch.full((2,), complex(rank, 1), dtype=torch.complex64))
    assert all(torch.equal(out[r], torch.full((2,), complex(r, 1), dtype=torch.complex64))
               for r in range(n))
    # complex SUM reduces the real pairs; MAX has no meaning on complex numbers
    c = torch.full((2,), complex(1, rank), dtype=torch.complex64)
    dist.all_reduce(c)
    assert torch.equal(c, torch.full((2,), complex(n, n * (n - 1) / 2), dtype=torch.complex64))
    opts = C10D.AllreduceOptions()
    opts.reduceOp = dist.ReduceOp.MAX
    with pytest.raises(weft.InvalidArgumentError, match="complex"):
        dist.distributed_c10d._get_default_group().allreduce([c], opts)
    # non-contiguous tensors: a contiguous copy, written back when the operation completes
    grid = torch.zeros(4, 3)
    column = grid[:, 1]
    column += rank + 1
    dist.all_reduce(column)
    assert torch.equal(grid[:, 1], torch.full((4,), n * (n + 1) / 2))
    assert torch.equal(grid[:, 0], torch.zeros(4)) and torch.equal(grid[:, 2], torch.zeros(4))
    grid = torch.zeros(n, 2)
    work = dist.all_gather_into_tensor(grid.t(), torch.full((2,), float(rank)), async_op=True)
    work.wait()
    # the flat output, in rank order, fills the transposed view row by row
    expect = torch.arange(n, dtype=torch.float32).repeat_interleave(2)
    assert torch.equal(grid.t().reshape(-1), expect)
    # zero elements
    empty = torch.zeros(0)
    dist.all_reduce(empty)
    dist.broadcast(empty, 0)
    # bfloat16 and bool reduce natively
    b = torch.full((5,), float(rank + 1), dtype=torch.bfloat16)
    dist.all_reduce(b, op=dist.ReduceOp.MAX)
    assert torch.equal(b, torch.full((5,), float(n), dtype=torch.bfloat16))
    flags = torch.tensor([rank == 0, True, False])
    dist.all_reduce(flags, op=dist.ReduceOp.BOR)
    assert flags.tolist() == [True, True, False]


def test_any_dtype_and_layout():
    run(_any_dtype_and_layout, 2)


def _point_to_point(rank, n):
    pg = dist.distributed_c10d._get_default_group()
    # A tag of its own: rank 0's any-source receives must not take the ring's messages below,
    # which ranks done with this phase may already be sending to it.
    if rank == 0:
        got = set()
        for _ in range(n - 1):
            t = torch.zeros(2)
            source = dist.recv(t, tag=5)  # any source
            assert torch.equal(t, torch.full((2,), float(source)))
            got.add(source)
        assert got == set(range(1, n))
    else:
        dist.send(torch.full((2,), float(rank)), 0, tag=5)
    # batch_isend_irecv: a ring
    right, left = (rank + 1) % n, (rank - 1) % n
    inbox = torch.zeros(3)
    ops = [dist.P2POp(dist.isend, torch.full((3,), float(rank)), right),
           dist.P2POp(dist.irecv, inbox, left)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    assert torch.equal(inbox, torch.full((3,), float(left)))
    # a receive's future and source rank
    inbox = torch.zeros(1)
    if rank == 0:
        work = pg.recv_anysource([inbox], 7)
        assert work.get_future().wait()[0] is inbox
        assert work.source_rank() == n - 1 and inbox.item() == n - 1
    elif rank == n - 1:
        dist.send(torch.tensor([float(rank)]), 0, tag=7)


def test_point_to_point():
    run(_point_to_point, 3)


def _groups_and_meshes(rank, n):
    pg = dist.distributed_c10d._get_default_group()
    assert pg.name() == "weft" and dist.get_backend() == "weft"
    assert pg.group_name  # torch's device meshes and functional collectives name groups
    sub = dist.new_group([0, 2])
    if rank in (0, 2):
        t = torch.tensor([float(rank)])
        dist.all_reduce(t, group=sub)
        assert t.item() == 2.0
        assert dist.get_backend(sub) == "weft" and sub.group_name != pg.group_name
    from torch.distributed.device_mesh import init_device_mesh
    mesh = init_device_mesh("cpu", (n,))
    t = torch.ones(2)
    dist.all_reduce(t, group=mesh.get_group())
    assert torch.equal(t, torch.full((2,), float(n)))


def test_groups_and_device_meshes():
    run(_groups_and_meshes, 3)


def _abort(rank, n):
    pg = dist.distributed_c10d._get_default_group()
    dist.all_reduce(torch.ones(1))
    sub = dist.new_group(list(range(n)))
    sub.abort()
    with pytest.raises(weft.AbortedError):
        dist.all_reduce(torch.ones(1), group=sub)
    dist.all_reduce(torch.ones(1))  # the default group is untouched
    assert pg is dist.distributed_c10d._get_default_group()


def test_abort_one_group():
    run(_abort, 2)


def _reference_linear():
    torch.manual_seed(7)
    return torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.Linear(4, 2))


def _checkpoints(rank, n, directory):
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import (StateDictOptions, get_model_state_dict,
                                                         set_model_state_dict)
    from torch.distributed.fsdp import FullyShardedDataParallel, StateDictType, fully_shard

    directory = pathlib.Path(directory)
    group = dist.distributed_c10d._get_default_group()
    assert group._device_types == [torch.device("cpu")], group._device_types
    reference = _reference_linear().state_dict()

    # An asynchronous save, loaded back. Plain tensors are replicated: every rank holds the same,
    # and the checkpoint keeps one copy, written by whichever rank the planner picks.
    state = {"w": torch.arange(12.0).reshape(3, 4), "step": torch.tensor([41])}
    dcp.async_save(state, checkpoint_id=str(directory / "async")).result()
    loaded = {"w": torch.zeros(3, 4), "step": torch.tensor([-1])}
    dcp.load(loaded, checkpoint_id=str(directory / "async"))
    assert torch.equal(loaded["w"], state["w"]), loaded
    assert loaded["step"].item() == 41, loaded

    # A full state dict held by rank 0 alone, broadcast into an FSDP2 model.
    torch.manual_seed(100 + rank)  # every rank starts from other parameters
    model = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.Linear(4, 2))
    for layer in model:
        fully_shard(layer)
    fully_shard(model)
    given = {key: value.clone() for key, value in reference.items()} if rank == 0 else {}
    set_model_state_dict(model, given,
                         options=StateDictOptions(full_state_dict=True, broadcast_from_rank0=True))
    full = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))
    for key, value in reference.items():
        assert torch.equal(full[key], value), key

    # FSDP1's sharded state dict, saved and loaded into another FSDP1 model.
    torch.manual_seed(7)
    first = FullyShardedDataParallel(_reference_linear(), device_id=torch.device("cpu"))
    with FullyShardedDataParallel.state_dict_type(first, StateDictType.SHARDED_STATE_DICT):
        dcp.save({"model": first.state_dict()}, checkpoint_id=str(directory / "fsdp1"))
    torch.manual_seed(200 + rank)
    second = FullyShardedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.Linear(4, 2)),
        device_id=torch.device("cpu"))
    with FullyShardedDataParallel.state_dict_type(second, StateDictType.SHARDED_STATE_DICT):
        target = {"model": second.state_dict()}
        dcp.load(target, checkpoint_id=str(directory / "fsdp1"))
        second.load_state_dict(target["model"])
    with FullyShardedDataParallel.summon_full_params(second):
        for key, value in second.module.state_dict().items():
            assert torch.equal(value, reference[key]), key


def test_checkpoints_async_sharded_and_broadcast_from_rank0(tmp_path):
    """The group reports its device (cpu) as gloo's does, so torch.distributed.checkpoint's
    async_save, FSDP1's sharded state dict and a full state dict broadcast from rank 0 into
    FSDP2 work on weft."""
    run(_checkpoints, 2, str(tmp_path), timeout=120)


def test_exit_without_destroying_the_group(tmp_path):
    """A program that never calls destroy_process_group exits cleanly (the weft groups end
    before the interpreter does, not while it shuts down)."""
    script = tmp_path / "no_destroy.py"
    script.write_text(textwrap.dedent("""
        import torch, torch.distributed as dist, weft, weft.torch

        def main(rank, n):
            dist.init_process_group("weft")
            t = torch.ones(2)
            dist.all_reduce(t)
            sub = dist.new_group([0, 1])
            dist.all_reduce(t, group=sub)
            # One string, one write: the ranks share the pipe, and print() writes its
            # arguments separately.
            print(f"rank {rank} done {t.tolist()}", flush=True)

        if __name__ == "__main__":
            weft.spawn(main, args=(3,), nprocs=3, timeout=60)
    """))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            timeout=120, env=os.environ.copy())
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("done [6.0, 6.0]") == 2, result.stdout
    assert "terminate" not in result.stderr, result.stderr


def _train(wrap, hook, backend, n, path):
    sys.path.insert(0, str(EXAMPLES))
    try:
        import ddp_digits
        ddp_digits.main(["--world-size", str(n), "--epochs", "6", "--quiet", "--backend",
                         backend, "--wrap", wrap, "--comm-hook", hook, "--json", str(path)])
    finally:
        sys.path.remove(str(EXAMPLES))
    import json
    return json.loads(path.read_text())


# The world of one rank (no peer to average with) once; the hooks and FSDP2 at 2 and 4 ranks.
@pytest.mark.parametrize("wrap,hook,sizes", [("ddp", "allreduce", (1, 2, 4)),
                                             ("ddp", "python", (2, 4)),
                                             ("fsdp", "none", (1, 2, 4))])
def test_training_matches_gloo_at_1_2_4_ranks(tmp_path, wrap, hook, sizes):
    """examples/python/ddp_digits.py: DDP with a communication hook and FSDP2's fully_shard
    train to gloo's accuracy at 1 (without the Python hook), 2 and 4 ranks."""
    pytest.importorskip("sklearn")
    gloo = _train(wrap, hook, "gloo", 2, tmp_path / "gloo.json")
    assert gloo["accuracy"] > 0.9, gloo
    for n in sizes:
        r = _train(wrap, hook, "weft", n, tmp_path / f"weft{n}.json")
        assert r["identical_parameters"], r
        assert abs(r["accuracy"] - gloo["accuracy"]) <= 0.02, (n, r["accuracy"], gloo["accuracy"])
        assert abs(r["losses"][-1] - gloo["losses"][-1]) <= 1e-3 + 0.02 * gloo["losses"][-1], \
            (n, r["losses"], gloo["losses"])

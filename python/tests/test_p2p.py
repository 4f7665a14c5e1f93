"""send, recv, isend, irecv, batch_isend_irecv, P2POp: blocking and async, any source, global
ranks in subgroups, dropped handles."""

import numpy as np
import pytest
import torch

import weft
import weft.distributed as dist
from _ranks import run


def _chain(rank, n):
    t = torch.zeros(2)
    if rank == 0:
        t += torch.tensor([100.0, 200.0])
        dist.send(t, dst=1)
    else:
        assert dist.recv(t, src=rank - 1) == rank - 1
        t += 100
        if rank + 1 < n:
            dist.send(t, dst=rank + 1)
    assert torch.equal(t, torch.tensor([100.0, 200.0]) + 100 * rank)


def _async_and_any_source(rank, n):
    if rank == 0:
        senders = []
        for _ in range(n - 1):
            buf = np.zeros(3, np.int32)
            work = dist.irecv(buf)  # any source
            work.wait()
            senders.append(work.source_rank())
            assert np.all(buf == senders[-1])
        buf = np.zeros(3, np.int32)
        senders.append(dist.recv(buf))
        assert np.all(buf == senders[-1])
        assert sorted(senders) == [1] + list(range(1, n))
    else:
        dist.isend(np.full(3, rank, np.int32), dst=0).wait()
        if rank == 1:
            dist.isend(np.full(3, rank, np.int32), dst=0)  # handle dropped: buffer kept alive


def _batch_ring(rank, n):
    right, left = (rank + 1) % n, (rank - 1) % n
    send = torch.full((4,), float(rank), dtype=torch.bfloat16)
    recv = torch.zeros(4, dtype=torch.bfloat16)
    ops = [dist.P2POp(dist.isend, send, right), dist.P2POp(dist.irecv, recv, left)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    assert torch.all(recv == left)
    with pytest.raises(ValueError):
        dist.P2POp(dist.all_reduce, send, right)


@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("body", [_chain, _async_and_any_source, _batch_ring],
                         ids=lambda f: f.__name__.strip("_"))
def test_p2p(body, n):
    run(body, n)


def _subgroup_sendrecv(rank, n):
    g = dist.new_group([1, 3])
    if rank == 3:
        dist.send(np.array([42], np.int64), dst=1, group=g)
        w = dist.isend(np.array([43], np.int64), dst=1, group=g)
        w.wait()
    elif rank == 1:
        buf = np.zeros(1, np.int64)
        assert dist.recv(buf, src=3, group=g) == 3 and buf[0] == 42
        w = dist.irecv(buf, group=g)
        w.wait()
        assert w.source_rank() == 3 and buf[0] == 43


def test_subgroup_global_ranks():
    run(_subgroup_sendrecv, 4)


def test_orphans_released():
    def body(rank, n):
        for _ in range(3):
            if rank == 0:
                dist.isend(np.arange(1000, dtype=np.float64), dst=1)
            else:
                dist.recv(np.zeros(1000), src=0)
        dist.barrier()
        dist.isend(np.zeros(1), dst=1 - rank).wait()
        dist.recv(np.zeros(1), src=1 - rank)
        assert weft._weft._num_orphans() == 0
    run(body, 2)

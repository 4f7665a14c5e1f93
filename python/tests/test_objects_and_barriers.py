"""Object collectives (pickled, sizes first, uneven) and monitored_barrier."""

import datetime
import time

import pytest

import weft
import weft.distributed as dist
from _ranks import run


def _obj(rank):
    return {"rank": rank, "text": "x" * (10 * rank), "list": list(range(rank))}


def _objects(rank, n):
    out = [None] * n
    dist.all_gather_object(out, _obj(rank))
    assert out == [_obj(r) for r in range(n)]
    for root in {0, n - 1}:
        got = [None] * n if rank == root else None
        dist.gather_object(_obj(rank), got, dst=root)
        if rank == root:
            assert got == [_obj(r) for r in range(n)]
        objs = [_obj(100 + i) for i in range(3)] if rank == root else [None] * 3
        dist.broadcast_object_list(objs, src=root)
        assert objs == [_obj(100 + i) for i in range(3)]
        out = [None]
        dist.scatter_object_list(out, [_obj(r * 2) for r in range(n)] if rank == root else None,
                                 src=root)
        assert out[0] == _obj(rank * 2)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_object_collectives(n):
    run(_objects, n)


def _monitored_ok(rank, n):
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=10))


def _monitored_missing(rank, n):
    if rank in (2, 3):
        time.sleep(2.0)  # late: named by rank 0
        return
    if rank == 0:
        with pytest.raises(weft.TimeoutError, match=r"Ranks 2, 3 failed to pass monitoredBarrier"):
            dist.monitored_barrier(timeout=datetime.timedelta(seconds=0.5), wait_all_ranks=True)
    else:  # not released: times out, or sees rank 0 leave after it raised
        with pytest.raises((TimeoutError, weft.PeerFailureError)):
            dist.monitored_barrier(timeout=datetime.timedelta(seconds=1))


@pytest.mark.parametrize("n", [1, 3])
def test_monitored_barrier(n):
    run(_monitored_ok, n)


def test_monitored_barrier_names_missing_ranks():
    run(_monitored_missing, 4)

"""ProcessGroup.shrink from Python: the survivors of a killed rank continue in a smaller group,
with ranks in the old order, and compute right; with nobody dead, everyone is kept."""

import datetime
import os
import signal
import time

import numpy as np

import weft
import weft.distributed as dist

TIMEOUT = datetime.timedelta(seconds=30)
KILL_AT = 15


def _contribution(rank, step):
    return np.arange(16, dtype=np.float64) + 100.0 * rank + step


def _expected(ranks, step):
    return sum(_contribution(r, step) for r in ranks)  # a plain loop, not weft


def _lose_a_rank_then_shrink(rank, nprocs, victim):
    dist.init_process_group("weft", timeout=TIMEOUT)
    everyone = list(range(nprocs))
    try:
        for step in range(1000):
            if rank == victim and step == KILL_AT:
                os.kill(os.getpid(), signal.SIGKILL)
            data = _contribution(rank, step)
            dist.all_reduce(data)
            np.testing.assert_array_equal(data, _expected(everyone, step))
        raise AssertionError("the loop ended without noticing the death")
    except (weft.PeerFailureError, weft.AbortedError):
        pass
    started = time.monotonic()
    survivors_group = dist.group.WORLD.shrink()
    # The transport knew of the death: no wait for the 30 s timeout.
    assert time.monotonic() - started < 5
    survivors = [r for r in everyone if r != victim]
    assert survivors_group.ranks == survivors
    assert dist.get_world_size(survivors_group) == len(survivors)
    assert dist.get_rank(survivors_group) == survivors.index(rank)
    for step in range(100, 103):
        data = _contribution(rank, step)
        dist.all_reduce(data, group=survivors_group)
        np.testing.assert_array_equal(data, _expected(survivors, step))
    dist.destroy_process_group()


def test_survivors_of_a_killed_rank_shrink_and_sum_right():
    nprocs, victim = 4, 2
    ranks = weft.spawn(_lose_a_rank_then_shrink, args=(nprocs, victim), nprocs=nprocs,
                       start_method="fork", join=False)
    deadline = time.monotonic() + 90
    try:
        for rank, process in enumerate(ranks.processes):
            process.join(max(0.0, deadline - time.monotonic()))
            assert process.exitcode is not None, f"rank {rank} hung"
            if rank == victim:
                assert process.exitcode == -signal.SIGKILL
                continue
            traceback = None if ranks.error_queues[rank].empty() else ranks.error_queues[rank].get()
            assert process.exitcode == 0, f"rank {rank} failed:\n{traceback}"
    finally:
        for process in ranks.processes:
            if process.exitcode is None:
                process.kill()
                process.join()


def _nobody_dead(rank, nprocs):
    dist.barrier()
    kept = dist.shrink(timeout=10)
    assert kept.ranks == list(range(nprocs))
    assert dist.get_rank(kept) == rank
    data = _contribution(rank, 7)
    dist.all_reduce(data, group=kept)
    np.testing.assert_array_equal(data, _expected(range(nprocs), 7))


def test_shrink_with_nobody_dead_keeps_everyone():
    from _ranks import run
    run(_nobody_dead, 3)

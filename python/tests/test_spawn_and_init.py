"""weft.spawn (environment, failures named by rank, timeout), every init method and stores
(torchrun's agent store: test_torchrun.py)."""

import datetime
import os
import sys

import numpy as np
import pytest

import weft
import weft.distributed as dist


def _environment(rank, n):
    assert os.environ["RANK"] == str(rank) and os.environ["WORLD_SIZE"] == str(n)
    assert os.environ["MASTER_ADDR"] == "127.0.0.1" and int(os.environ["MASTER_PORT"]) > 0


def test_spawn_sets_environment():
    weft.spawn(_environment, args=(3,), nprocs=3, start_method="fork", timeout=30)


def test_spawn_start_method_spawn():
    weft.spawn(_environment, args=(2,), nprocs=2, timeout=60)


def _fails_on_rank_2(rank):
    if rank == 2:
        raise ValueError("boom on purpose")


def test_spawn_names_the_failed_rank():
    with pytest.raises(weft.ProcessRaisedException, match="rank 2") as info:
        weft.spawn(_fails_on_rank_2, nprocs=3, start_method="fork", timeout=30)
    assert info.value.rank == 2 and "boom on purpose" in str(info.value)


class _RankEndingBetweenPolls:
    """A process whose exit code appears from the third read on, as when a rank ends while
    join is looking at the ranks (join reads each rank twice before deciding)."""

    def __init__(self, code, pid, running_reads=2):
        self.code, self.pid, self.running_reads, self.sentinel = code, pid, running_reads, None

    @property
    def exitcode(self):
        self.running_reads -= 1
        return None if self.running_reads >= 0 else self.code

    def terminate(self):
        pass

    def join(self, timeout=None):
        pass


class _EmptyQueue:
    def empty(self):
        return True


def test_join_does_not_take_a_rank_failing_mid_join_for_a_success(monkeypatch):
    monkeypatch.setattr(weft._spawn.multiprocessing.connection, "wait", lambda *a, **k: [])
    failing = _RankEndingBetweenPolls(code=1, pid=4242)
    ended = [_RankEndingBetweenPolls(code=0, pid=4240 + r, running_reads=0) for r in range(2)]
    spawned = weft.SpawnContext(ended + [failing], [_EmptyQueue()] * 3)
    assert spawned.join(0) is False  # rank 2 still running at the one snapshot
    with pytest.raises(weft.ProcessExitedException, match="rank 2 .* code 1"):
        spawned.join(0)


def _exits(rank):
    if rank == 1:
        os._exit(3)


def test_spawn_names_an_exit_code():
    with pytest.raises(weft.ProcessExitedException, match="rank 1 .* code 3"):
        weft.spawn(_exits, nprocs=2, start_method="fork", timeout=30)


def _sleeps(rank):
    import time
    time.sleep(30)


def test_spawn_timeout():
    with pytest.raises(weft.ProcessTimeoutError):
        weft.spawn(_sleeps, nprocs=2, start_method="fork", timeout=0.5)


def _init_and_reduce(rank, n, kwargs_fn):
    kwargs = kwargs_fn(rank, n)
    dist.init_process_group("weft", timeout=datetime.timedelta(seconds=30), **kwargs)
    assert dist.get_rank() == rank and dist.get_world_size() == n and dist.is_initialized()
    t = np.array([rank + 1], np.int64)
    dist.all_reduce(t)
    assert t[0] == n * (n + 1) // 2
    dist.destroy_process_group()
    assert not dist.is_initialized()


def _env(rank, n):
    return {}


def _tcp(rank, n):
    return {"init_method": f"tcp://127.0.0.1:{os.environ['MASTER_PORT']}", "rank": rank,
            "world_size": n}


def _tcp_query(rank, n):
    return {"init_method": f"tcp://127.0.0.1:{os.environ['MASTER_PORT']}?rank={rank}&world_size={n}"}


def _file(rank, n):
    return {"init_method": f"file:///tmp/weft-test-{os.environ['MASTER_PORT']}", "rank": rank,
            "world_size": n}


def _store(rank, n):
    store = dist.TCPStore("127.0.0.1", int(os.environ["MASTER_PORT"]), n, rank == 0,
                          datetime.timedelta(seconds=30))
    return {"store": store, "rank": rank, "world_size": n}


@pytest.mark.parametrize("kwargs_fn", [_env, _tcp, _tcp_query, _file, _store],
                         ids=lambda f: f.__name__.strip("_"))
def test_init_methods(kwargs_fn):
    weft.spawn(_init_and_reduce, args=(3, kwargs_fn), nprocs=3, start_method="fork", timeout=60)


def test_store_methods():
    store = dist.HashStore()
    store.set("a", "1")
    assert store.get("a") == b"1"
    assert store.add("n", 2) == 2 and store.add("n", 3) == 5
    assert store.check(["a", "n"]) and not store.check(["zz"])
    assert store.compare_set("a", "1", "2") == b"2"
    store.multi_set(["x", "y"], [b"1", b"2"])
    assert store.multi_get(["x", "y"]) == [b"1", b"2"]
    assert store.delete_key("x") and not store.delete_key("x")
    with pytest.raises(weft.TimeoutError):
        store.wait(["never"], datetime.timedelta(milliseconds=50))
    prefixed = dist.PrefixStore("p", store)
    prefixed.set("k", b"v")
    assert store.get("p/k") == b"v"
    served = dist.TCPStore("127.0.0.1", 0, 1, True, datetime.timedelta(seconds=5))
    served.set("k", b"v")
    assert served.get("k") == b"v" and served.port > 0


def test_backend_names():
    with pytest.raises(ValueError, match="nccl"):
        dist.init_process_group("nccl")
    assert not dist.is_initialized()


def _listening_addresses(port):
    """The local addresses of the TCP sockets listening on port, from /proc/net/tcp{,6}."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            address, port_hex = fields[1].rsplit(":", 1)
            if fields[3] == "0A" and int(port_hex, 16) == port:  # 0A: LISTEN
                found.append(address)
    return found


def _serve_and_report(rank, n, queue):
    dist.init_process_group("weft")
    queue.put(_listening_addresses(int(os.environ["MASTER_PORT"])))
    dist.barrier()
    dist.destroy_process_group()


def test_a_loopback_job_s_store_listens_on_loopback_only():
    import multiprocessing
    queue = multiprocessing.get_context("fork").Queue()
    weft.spawn(_serve_and_report, args=(1, queue), nprocs=1, start_method="fork", timeout=60)
    addresses = queue.get(timeout=10)
    # weft.spawn sets MASTER_ADDR=127.0.0.1: rank 0's store must not listen on every interface.
    assert addresses == ["0100007F"], addresses  # 127.0.0.1, as /proc/net/tcp writes it

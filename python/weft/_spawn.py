"""Starting local ranks from Python, as torch.multiprocessing.spawn.

spawn(fn, args, nprocs) starts nprocs processes running fn(rank, *args), each with RANK,
WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1 and MASTER_PORT (a free port)
in its environment, so that init_process_group() needs no arguments. It joins them; when one
fails, the others are stopped and SpawnError names the rank (with the child's traceback).

launch(fn, args, nprocs) is for programs that also run under a launcher: under weftrun or
torchrun (RANK and WORLD_SIZE set) it calls fn(RANK, *args) in this process; otherwise it
spawns nprocs ranks.
"""

import multiprocessing
import multiprocessing.connection
import os
import signal
import socket
import sys
import time
import traceback

# Variables a parent launcher may have set that must not leak into a job spawned here.
_LAUNCHER_VARIABLES = ("WEFT_STORE_ADDR", "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_RUN_ID",
                       "GROUP_RANK", "NODE_RANK")


class SpawnError(Exception):
    """A spawned rank failed. Attributes: rank, pid, exit_code (None when it raised)."""

    def __init__(self, message, rank, pid, exit_code=None):
        super().__init__(message)
        self.rank, self.pid, self.exit_code = rank, pid, exit_code


class ProcessRaisedException(SpawnError):
    """fn raised in a rank; the message holds the rank's traceback."""


class ProcessExitedException(SpawnError):
    """A rank exited with a non-zero code or was killed by a signal."""


class ProcessTimeoutError(SpawnError, TimeoutError):
    """spawn's timeout passed while ranks were still running; rank is the first of them."""


def free_port(host="127.0.0.1"):
    """A TCP port free right now on host (another process may take it before it is used)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def launched_by_launcher():
    """True under weftrun or torchrun (or any launcher setting RANK and WORLD_SIZE)."""
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


def _entry(fn, rank, nprocs, environment, args, error_queue):
    os.environ.update(environment)
    os.environ["RANK"] = os.environ["LOCAL_RANK"] = str(rank)
    os.environ["WORLD_SIZE"] = os.environ["LOCAL_WORLD_SIZE"] = str(nprocs)
    try:
        fn(rank, *args)
    except KeyboardInterrupt:
        sys.exit(130)
    except SystemExit as e:
        if e.code not in (None, 0):
            error_queue.put(f"SystemExit({e.code!r})")
        raise
    except BaseException:  # noqa: BLE001  (reported to the parent)
        error_queue.put(traceback.format_exc())
        sys.exit(1)


class SpawnContext:
    """The running ranks of spawn(..., join=False). join(timeout) returns True when all ended."""

    def __init__(self, processes, error_queues):
        self.processes = processes
        self.error_queues = error_queues

    def pids(self):
        return [p.pid for p in self.processes]

    def join(self, timeout=None):
        """Waits up to timeout for a rank to end. Returns True when every rank has ended
        successfully; raises SpawnError (after stopping the others) when one failed."""
        alive = [p for p in self.processes if p.exitcode is None]
        if alive:
            multiprocessing.connection.wait([p.sentinel for p in alive], timeout=timeout)
        # One snapshot: polling twice lets a rank that fails between the polls pass as a success.
        codes = [p.exitcode for p in self.processes]
        for rank, (p, code) in enumerate(zip(self.processes, codes)):
            if code is not None and code != 0:
                self._stop_all()
                raise self._failure(rank, p)
        if all(code is not None for code in codes):
            for p in self.processes:
                p.join()
            return True
        return False

    def _failure(self, rank, p):
        message = None
        if not self.error_queues[rank].empty():
            message = self.error_queues[rank].get()
        if message is not None:
            return ProcessRaisedException(
                f"\n\n-- rank {rank} (pid {p.pid}) failed with:\n{message}", rank, p.pid)
        if p.exitcode < 0:
            name = signal.Signals(-p.exitcode).name
            return ProcessExitedException(
                f"rank {rank} (pid {p.pid}) was killed by signal {name}", rank, p.pid, p.exitcode)
        return ProcessExitedException(
            f"rank {rank} (pid {p.pid}) exited with code {p.exitcode}", rank, p.pid, p.exitcode)

    def _stop_all(self, grace=3.0):
        for p in self.processes:
            if p.exitcode is None:
                p.terminate()
        deadline = time.monotonic() + grace
        for p in self.processes:
            p.join(max(0.0, deadline - time.monotonic()))
        for p in self.processes:
            if p.exitcode is None:
                p.kill()
                p.join()


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn", timeout=None,
          master_addr="127.0.0.1", master_port=None):
    """Runs fn(rank, *args) in nprocs new processes (torch.multiprocessing.spawn's shape).

    start_method: "spawn" (fn must be importable: defined at module level, with the main
    program guarded by ``if __name__ == "__main__"``), "fork" or "forkserver". timeout: seconds
    after which ranks still running are stopped and ProcessTimeoutError raised. Returns None
    once all ranks succeeded, or a SpawnContext when join=False."""
    context = multiprocessing.get_context(start_method)
    environment = {"MASTER_ADDR": master_addr,
                   "MASTER_PORT": str(master_port or free_port(master_addr))}
    saved = {name: os.environ.pop(name) for name in _LAUNCHER_VARIABLES if name in os.environ}
    processes, queues = [], []
    try:
        for rank in range(nprocs):
            queue = context.SimpleQueue()
            p = context.Process(target=_entry, name=f"weft-rank-{rank}",
                                args=(fn, rank, nprocs, environment, tuple(args), queue),
                                daemon=daemon)
            p.start()
            processes.append(p)
            queues.append(queue)
    finally:
        os.environ.update(saved)
    spawned = SpawnContext(processes, queues)
    if not join:
        return spawned
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                running = [r for r, p in enumerate(processes) if p.exitcode is None]
                spawned._stop_all()
                raise ProcessTimeoutError(
                    f"spawn: ranks {running} still running after {timeout} s; stopped them",
                    running[0], processes[running[0]].pid)
            if spawned.join(remaining):
                return None
    except KeyboardInterrupt:
        spawned._stop_all()
        raise


def launch(fn, args=(), nprocs=1, **spawn_options):
    """fn(rank, *args) here under a launcher (weftrun, torchrun), else spawn(fn, args, nprocs)."""
    if launched_by_launcher():
        fn(int(os.environ["RANK"]), *args)
        return None
    return spawn(fn, args=args, nprocs=nprocs, **spawn_options)

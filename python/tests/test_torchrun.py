"""Programs launched by torch 2.x's torchrun find each other through torchrun's store: Python
programs on backend "weft" and C++ programs (weft's own init, env://) alike, on one node
(--standalone) and on two simulated hosts (network namespaces joined by a veth pair, created
and removed by the test) with --rdzv-endpoint. The two-host test needs root and iproute2;
elsewhere it says why it was skipped. Also weft's client of torch's store protocol on its own,
against a torch TCPStore: a rendezvous through it, and a rank that never comes named.
"""

import contextlib
import datetime
import multiprocessing
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
if int(torch.__version__.split(".")[0]) < 2:
    pytest.skip("torchrun works from torch 2.x (this is torch %s)" % torch.__version__,
                allow_module_level=True)

PROGRAM = textwrap.dedent("""
    import torch, torch.distributed as dist
    import weft.torch  # noqa: F401
    dist.init_process_group("weft")
    rank, n = dist.get_rank(), dist.get_world_size()
    t = torch.full((1000,), float(rank + 1))
    dist.all_reduce(t)
    out = [torch.zeros(2) for _ in range(n)]
    dist.all_gather(out, torch.full((2,), float(rank)))
    ok = torch.equal(t, torch.full((1000,), n * (n + 1) / 2)) and \\
        all(torch.equal(out[r], torch.full((2,), float(r))) for r in range(n))
    print(f"rank {rank}/{n} on {dist.get_backend()}: {'ok' if ok else 'WRONG'}", flush=True)
    dist.destroy_process_group()
""")


CPP_EXAMPLES = pathlib.Path(os.environ.get("WEFT_CPP_EXAMPLES_DIR", "/nonexistent"))
# Checks its sums against its own reference and prints this line when every rank agrees.
CPP_PROGRAM = CPP_EXAMPLES / "distributed_mean"
CPP_OK = "distributed_mean: OK"


def _torchrun(*args):
    return [sys.executable, "-m", "torch.distributed.run", *args]


def _program(kind, tmp_path):
    """torchrun's arguments that run the Python or the C++ program."""
    if kind == "python":
        script = tmp_path / "program.py"
        script.write_text(PROGRAM)
        return [str(script)]
    if not CPP_PROGRAM.exists():
        pytest.skip(f"{CPP_PROGRAM} not built (WEFT_CPP_EXAMPLES_DIR)")
    return ["--no-python", str(CPP_PROGRAM), "--data-size", "1000"]


def _check_output(kind, text, world_size):
    if kind == "python":
        for rank in range(world_size):
            assert f"rank {rank}/{world_size} on weft: ok" in text, text
    else:
        assert CPP_OK in text, text


@pytest.mark.parametrize("kind", ["python", "cpp"])
def test_one_node(tmp_path, kind):
    program = _program(kind, tmp_path)
    result = subprocess.run(_torchrun("--standalone", "--nproc-per-node", "3", *program),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    _check_output(kind, result.stdout, 3)


def _agent_rank(rank, world_size, port, timeout_s, queue):
    """A rank as torchrun starts it: torch's store on MASTER_PORT, served by someone else."""
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world_size), MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(port), TORCHELASTIC_USE_AGENT_STORE="True",
                      TORCHELASTIC_RUN_ID="weft-test", TORCHELASTIC_RESTART_COUNT="0",
                      WEFT_TIMEOUT=str(timeout_s))
    import weft.distributed as wdist
    try:
        wdist.init_process_group("weft")
        t = torch.full((5,), float(rank + 1))
        wdist.all_reduce(t)
        queue.put((rank, "sum", t.tolist()))
        wdist.destroy_process_group()
    except Exception as error:  # noqa: BLE001  (the test reads it)
        queue.put((rank, "error", f"{type(error).__name__}: {error}"))


def _run_agent_ranks(ranks, world_size, timeout_s):
    agent = torch.distributed.TCPStore("127.0.0.1", 0, 1, True,
                                       timeout=datetime.timedelta(seconds=30),
                                       wait_for_workers=False)
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    processes = [context.Process(target=_agent_rank,
                                 args=(r, world_size, agent.port, timeout_s, queue))
                 for r in ranks]
    for p in processes:
        p.start()
    results = {}
    for _ in processes:
        rank, kind, value = queue.get(timeout=60)
        results[rank] = (kind, value)
    for p in processes:
        p.join(30)
    return agent, results


def test_weft_rendezvous_through_a_torch_store():
    agent, results = _run_agent_ranks(range(3), 3, 60)
    for rank in range(3):
        assert results[rank] == ("sum", [6.0] * 5), results
    # weft's keys sit in the agent's store under its per-run prefix, where torch's own Python
    # client reads them.
    for rank in range(3):
        assert agent.check([f"weft/weft-test/0/weft/peer/{rank}"])


def test_a_rank_that_never_comes_is_named_through_a_torch_store():
    _, results = _run_agent_ranks([0, 1], 3, 3)  # rank 2 never starts
    for rank in (0, 1):
        kind, text = results[rank]
        assert kind == "error" and "Timeout" in text, results
        assert "(missing: 2)" in text, text


NAMESPACES = ("wefttr0", "wefttr1")
ADDRESSES = ("10.77.9.1", "10.77.9.2")  # exist only inside the test's namespaces


def _ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)


@contextlib.contextmanager
def _two_hosts():
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("two simulated hosts need root and iproute2 (ip netns)")
    for ns in NAMESPACES:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)
    try:
        for ns in NAMESPACES:
            _ip("netns", "add", ns)
        _ip("link", "add", "wefttr0e", "type", "veth", "peer", "name", "wefttr1e")
        for i, ns in enumerate(NAMESPACES):
            _ip("link", "set", f"wefttr{i}e", "netns", ns)
            _ip("-n", ns, "addr", "add", f"{ADDRESSES[i]}/24", "dev", f"wefttr{i}e")
            _ip("-n", ns, "link", "set", f"wefttr{i}e", "up")
            _ip("-n", ns, "link", "set", "lo", "up")
        yield
    finally:
        for ns in NAMESPACES:
            for pid in subprocess.run(["ip", "netns", "pids", ns], capture_output=True,
                                      text=True, timeout=10).stdout.split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), 9)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)


@pytest.mark.parametrize("kind", ["python", "cpp"])
def test_two_hosts_with_rdzv_endpoint(tmp_path, kind):
    program = _program(kind, tmp_path)
    endpoint = f"{ADDRESSES[0]}:29417"
    with _two_hosts():
        nodes = []
        for i, ns in enumerate(NAMESPACES):
            command = ["ip", "netns", "exec", ns, *_torchrun(
                "--nnodes", "2", "--nproc-per-node", "2", "--rdzv-backend", "c10d",
                "--rdzv-endpoint", endpoint, "--rdzv-id", "weft-test",
                # both namespaces share the machine's hostname: each node names its address
                "--local-addr", ADDRESSES[i],
                "--rdzv-conf", f"is_host={1 if i == 0 else 0}", *program)]
            nodes.append(subprocess.Popen(command, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True))
        outputs = []
        for node in nodes:
            try:
                outputs.append(node.communicate(timeout=150)[0])
            except subprocess.TimeoutExpired:
                for other in nodes:
                    other.kill()
                pytest.fail("torchrun on two hosts did not finish in 150 s:\n" +
                            "\n".join(n.communicate()[0] for n in nodes))
        text = "\n".join(outputs)
        assert all(node.returncode == 0 for node in nodes), text
        _check_output(kind, text, 4)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))

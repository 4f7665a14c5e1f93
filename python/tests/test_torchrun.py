"""Programs launched by torch 2.x's torchrun find each other through torchrun's store: on one
node (--standalone), and on two simulated hosts (network namespaces joined by a veth pair,
created and removed by the test) with --rdzv-endpoint. The two-host test needs root and
iproute2; elsewhere it says why it was skipped.
"""

import contextlib
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


def _torchrun(*args):
    return [sys.executable, "-m", "torch.distributed.run", *args]


def test_one_node(tmp_path):
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    result = subprocess.run(_torchrun("--standalone", "--nproc-per-node", "3", str(script)),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    for rank in range(3):
        assert f"rank {rank}/3 on weft: ok" in result.stdout, result.stdout + result.stderr


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


def test_two_hosts_with_rdzv_endpoint(tmp_path):
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    endpoint = f"{ADDRESSES[0]}:29417"
    with _two_hosts():
        nodes = []
        for i, ns in enumerate(NAMESPACES):
            command = ["ip", "netns", "exec", ns, *_torchrun(
                "--nnodes", "2", "--nproc-per-node", "2", "--rdzv-backend", "c10d",
                "--rdzv-endpoint", endpoint, "--rdzv-id", "weft-test",
                # both namespaces share the machine's hostname: each node names its address
                "--local-addr", ADDRESSES[i],
                "--rdzv-conf", f"is_host={1 if i == 0 else 0}", str(script))]
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
        for rank in range(4):
            assert f"rank {rank}/4 on weft: ok" in text, text


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))

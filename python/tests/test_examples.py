"""The Python examples (examples/python) run and check themselves: with weft.spawn as
`/usr/bin/python3 X.py --world-size N`, and under weftrun when the build provides it
(WEFT_WEFTRUN, set by the CTest entry)."""

import os
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(os.environ.get(
    "WEFT_EXAMPLES_DIR", pathlib.Path(__file__).resolve().parents[2] / "examples" / "python"))
NAMES = sorted(p.name for p in EXAMPLES.glob("*.py"))
WEFTRUN = os.environ.get("WEFT_WEFTRUN")
# Torch-heavy examples start slowly; the rest run at several world sizes.
SMALL_SIZES = {"p2p_chain.py": [3], "async_p2p.py": [2], "subgroup_sums.py": [2, 3]}


def _run(command, timeout=120):
    environment = dict(os.environ)
    for name in ("RANK", "WORLD_SIZE", "WEFT_STORE_ADDR", "MASTER_ADDR", "MASTER_PORT"):
        environment.pop(name, None)
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                            env=environment)
    assert result.returncode == 0, f"{command} failed:\n{result.stdout}\n{result.stderr}"
    assert "OK:" in result.stdout, result.stdout
    return result


def test_examples_exist():
    assert len(NAMES) >= 10, NAMES


@pytest.mark.parametrize("name", NAMES)
def test_example_with_spawn(name):
    _run([sys.executable, str(EXAMPLES / name), "--world-size", "4"])


@pytest.mark.parametrize("name, n", [(name, n) for name, sizes in SMALL_SIZES.items()
                                     for n in sizes])
def test_example_other_world_sizes(name, n):
    _run([sys.executable, str(EXAMPLES / name), "--world-size", str(n)])


@pytest.mark.skipif(not WEFTRUN, reason="WEFT_WEFTRUN not set (weftrun not built)")
@pytest.mark.parametrize("name", NAMES)
def test_example_under_weftrun(name):
    _run([WEFTRUN, "-n", "4", sys.executable, str(EXAMPLES / name)])


def test_ddp_recovery_with_a_replacement_rank():
    """A new process takes the lost rank's place: the job ends with all its ranks."""
    result = _run([sys.executable, str(EXAMPLES / "train_ddp_recovery.py"), "--world-size", "3",
                   "--replace"])
    assert "OK: 3 of 3 ranks" in result.stdout, result.stdout
    assert "replacement joined generation 1" in result.stdout, result.stdout

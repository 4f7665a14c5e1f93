"""A Python rank interrupted under weftrun dumps its flight recorder: weft's signal handler
writes the dump, then hands SIGINT to Python's own handler (KeyboardInterrupt), and weftrun
prints every rank's last ops side by side."""

import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest

WEFTRUN = os.environ.get("WEFT_WEFTRUN")

PROGRAM = textwrap.dedent("""
    import sys, time
    import numpy as np
    import weft.distributed as dist

    dist.init_process_group()
    data = np.ones(2, dtype=np.float32)
    for _ in range(3):
        dist.all_reduce(data)
    print("ready", flush=True)
    if dist.get_rank() == 1:
        time.sleep(60)  # in Python: SIGINT becomes KeyboardInterrupt here
    else:
        dist.all_reduce(data)  # blocked in weft until interrupted
""")


@pytest.mark.skipif(not WEFTRUN, reason="WEFT_WEFTRUN not set (weftrun not built)")
def test_interrupted_python_ranks_show_their_last_ops(tmp_path):
    script = tmp_path / "probe.py"
    script.write_text(PROGRAM)
    environment = dict(os.environ)
    for name in ("RANK", "WORLD_SIZE", "WEFT_STORE_ADDR", "MASTER_ADDR", "MASTER_PORT"):
        environment.pop(name, None)
    launcher = subprocess.Popen([WEFTRUN, "-n", "2", sys.executable, str(script)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=environment)
    try:
        ready = 0
        deadline = time.monotonic() + 60
        while ready < 2 and time.monotonic() < deadline:
            line = launcher.stdout.readline()
            if not line:
                break
            ready += line.rstrip().endswith("ready")
        assert ready == 2, launcher.stderr.read()
        time.sleep(0.3)  # rank 0 enters its fourth all_reduce
        launcher.send_signal(signal.SIGINT)
        _, err = launcher.communicate(timeout=30)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.communicate()
    assert launcher.returncode == 128 + signal.SIGINT, err
    assert "last ops of each rank (flight recorder" in err, err
    # Rank 0 was in its all_reduce #3 (which fails once rank 1 leaves, and its dump is
    # rewritten then); rank 1, asleep in Python, had finished #2.
    assert re.search(r"3 all_reduce 8B (running|peer_failure|aborted) +\| 2 all_reduce 8B done",
                     err), err

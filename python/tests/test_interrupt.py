"""Ctrl-C interrupts a blocked call, aborts the group, and the peer fails fast too."""

import os
import signal
import threading
import time

import numpy as np
import pytest

import weft
import weft.distributed as dist
from _ranks import run


def _interrupted(rank, n):
    if rank == 0:
        threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        start = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            dist.recv(np.zeros(4), src=1)  # rank 1 never sends
        assert time.monotonic() - start < 5
        with pytest.raises(weft.AbortedError):
            dist.send(np.zeros(4), dst=1)
    else:
        start = time.monotonic()
        with pytest.raises(weft.AbortedError, match="interrupted"):
            dist.recv(np.zeros(4), src=0)
        assert time.monotonic() - start < 5


def test_ctrl_c_interrupts_a_blocked_recv():
    run(_interrupted, 2)

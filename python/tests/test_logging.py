"""weft's log lines: into Python's logging (weft.enable_python_logging) with rank and group in
their prefix, WEFT_DEBUG_FILE's one file per rank, and stderr untouched by default.

Each job runs in a fresh interpreter: weft reads WEFT_DEBUG* once per process, and this one
may have read them already."""

import os
import subprocess
import sys
import textwrap

import _ranks  # noqa: F401  (keeps the helpers' import path, as the other tests)

import weft

# A job of 3 ranks (forked), each checking what reached its logging: version, settings, the
# path to every peer, all at INFO with the rank in the prefix; none of it on stderr. Init and
# destroy only: they log all of this, and destroy joins weft's threads while they log.
_BRIDGE_JOB = textwrap.dedent("""
    import logging, sys
    import weft, weft.distributed as dist

    class Keep(logging.Handler):
        def __init__(self):
            super().__init__(level=1)
            self.records = []
        def emit(self, record):
            self.records.append(record)

    keep = Keep()
    logging.getLogger("weft").addHandler(keep)
    logging.getLogger("weft").setLevel(logging.DEBUG)
    weft.enable_python_logging()   # before the fork: each rank's bridge restarts in the child

    def body(rank, n):
        dist.init_process_group("weft")
        dist.destroy_process_group()
        weft.flush_python_logging()
        lines = [(r.name, r.levelno, r.getMessage()) for r in keep.records]
        text = "\\n".join(m for _, _, m in lines)
        def has(name, *parts):
            return any(nm == name and lv == logging.INFO and all(p in m for p in parts)
                       for nm, lv, m in lines)
        me = f"rank {rank} group default"
        assert has("weft.init", me, "init] weft " + weft.__version__), text
        assert has("weft.init", me, "WEFT_DEBUG=info", "WEFT_JOB_TOKEN=(hidden)"), text
        assert "not-for-logs" not in text, text
        for peer in range(n):
            if peer != rank:
                # shm, or tcp when the peer was gone before its memory could be mapped.
                assert has("weft.transport", me, f"reaches rank {peer} through ", "127.0.0.1:"), text
        print(f"rank {rank} ok: {len(lines)} lines", flush=True)

    weft.spawn(body, args=(3,), nprocs=3, start_method="fork", timeout=60)
""")


def _run(script, tmp_path, **env):
    environment = dict(os.environ)
    for name in [n for n in environment if n.startswith("WEFT_DEBUG")]:
        del environment[name]
    environment.update(env)
    return subprocess.run([sys.executable, "-c", script], env=environment, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)


def test_a_job_s_info_lines_reach_python_logging_with_the_rank(tmp_path):
    result = _run(_BRIDGE_JOB, tmp_path, WEFT_DEBUG="info", WEFT_JOB_TOKEN="not-for-logs")
    assert result.returncode == 0, result.stdout + result.stderr
    for rank in range(3):
        assert f"rank {rank} ok" in result.stdout, result.stdout + result.stderr
    # The bridge took the lines: none on stderr.
    assert "[weft INFO" not in result.stderr, result.stderr


_FILE_JOB = textwrap.dedent("""
    import weft, weft.distributed as dist

    def body(rank, n):
        dist.init_process_group("weft")
        dist.destroy_process_group()

    weft.spawn(body, args=(2,), nprocs=2, start_method="fork", timeout=60)
""")


def test_weft_debug_file_writes_one_file_per_rank(tmp_path):
    pattern = str(tmp_path / "log.%r")
    result = _run(_FILE_JOB, tmp_path, WEFT_DEBUG="info", WEFT_DEBUG_FILE=pattern)
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.0", "log.1"]
    for rank in range(2):
        text = (tmp_path / f"log.{rank}").read_text()
        lines = text.splitlines()
        assert lines and all(line.startswith("[weft ") for line in lines), text
        assert all(f" rank {rank} group default " in line for line in lines), text
        assert f"init] weft {weft.__version__}" in text, text
        assert f"reaches rank {1 - rank} through " in text, text
    assert "[weft INFO" not in result.stderr, result.stderr


def test_without_the_bridge_lines_stay_on_stderr(tmp_path):
    result = _run(_FILE_JOB, tmp_path, WEFT_DEBUG="info", WEFT_DEBUG_SUBSYS="init")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("[weft ")]
    assert any(" rank 0 group default init] weft " in line for line in lines), result.stderr
    assert any(" rank 1 group default init] weft " in line for line in lines), result.stderr
    # WEFT_DEBUG_SUBSYS=init: no transport lines.
    assert all(line.split("] ")[0].endswith(" init") for line in lines), result.stderr


def test_levels_map_to_logging_and_disable_restores_stderr(tmp_path):
    script = textwrap.dedent("""
        import logging, weft
        records = []
        class Keep(logging.Handler):
            def emit(self, record):
                records.append((record.name, record.levelname, record.getMessage()))
        logging.getLogger("weft").addHandler(Keep())
        logging.getLogger("weft").setLevel(1)
        weft.enable_python_logging("trace")
        for level in range(5):
            weft._weft._log(level, f"level {level}")
        weft.flush_python_logging()
        weft.disable_python_logging()
        weft._weft._log(1, "back on stderr")
        assert [(n, lv) for n, lv, _ in records] == [
            ("weft.python", "ERROR"), ("weft.python", "WARNING"), ("weft.python", "INFO"),
            ("weft.python", "DEBUG"), ("weft.python", "TRACE")], records
        assert all(m.endswith(f"level {i}") for i, (_, _, m) in enumerate(records)), records
        print("ok")
    """)
    result = _run(script, tmp_path)
    assert result.returncode == 0 and "ok" in result.stdout, result.stdout + result.stderr
    assert "python] back on stderr" in result.stderr, result.stderr
    assert "level 2" not in result.stderr, result.stderr

"""Run the distributed acceptance suite of the installed torch against a c10d backend.

The suite is ``DistributedTest._DistTestBase`` from the installed torch's own
``torch/testing/_internal/distributed/distributed_test.py``: torch 2.x's wheel in the virtual
environment, or Debian's torch 1.13 under /usr/bin/python3. The backend is a built-in one
(gloo) or a plugin module imported in the runner and in every spawned rank. Writes a JSON report
and ends with the line ``N passed, N failed, N skipped``; exits non-zero when a test fails.

  .venv/bin/python python/torchsuite/run_suite.py --backend gloo --world-size 3 --out gloo.json
  PYTHONPATH=build/python .venv/bin/python python/torchsuite/run_suite.py --backend weft \\
      --plugin weft.torch --baseline python/torchsuite/results/gloo_ws3_torch2.json \\
      --unreachable python/torchsuite/results/gloo_plugin_ws3_torch2.json --no-skips
  PYTHONPATH=build/python /usr/bin/python3 python/torchsuite/run_suite.py --backend weft \\
      --plugin weft.torch --baseline python/torchsuite/results/gloo_ws3_torch113.json \\
      --unreachable python/torchsuite/results/gloo_plugin_ws3_torch113.json --no-skips

It does what upstream's test/distributed/test_distributed_spawn.py does under
test/run_test.py (neither ships in the wheel, nor in Debian's python3-torch):

* BACKEND and WORLD_SIZE are set, and INIT_METHOD (env:// unless --init-method file), all
  before ``distributed_test`` is imported: BACKEND and INIT_METHOD are read at import, and the
  skip decorators are evaluated when the class is defined, consulting
  ``DistTestCases.backend_feature`` / ``skip_collective``. So the plugin is imported and the
  feature sets are filled in first. TEMP_DIR (with barrier/ and test_dir/) is set too, though
  ``TestDistBackend.setUp`` replaces it with a fresh directory for every test.
* ``TestDistBackendWithSpawn(TestDistBackend, DistributedTest._DistTestBase)`` spawns WORLD_SIZE
  ranks per test with the "spawn" start method. Every rank imports this file again as
  ``__mp_main__`` and finds the class there, so the bootstrap runs again in each rank; the
  settings reach it through environment variables (TORCHSUITE_*).

On torch 2.x nothing is shimmed: the wheel ships the whole suite, and its one PyPI requirement
beyond torch, ``expecttest``, is installed in the virtual environment
(scripts/install-torch2.sh). On torch 1.x the bootstrap first calls ``torch113.prepare()``
(beside this file), which makes up in memory for what Debian's package lacks: ``expecttest``
itself, and an importable ``torch.distributed._shard`` on Python 3.11, which the DDP tests
need. There, a plugin creator is registered without ``devices`` (1.13's ``register_backend``
has no such argument; every backend serves CPU tensors).
"""

import argparse
import fnmatch
import json
import multiprocessing
import multiprocessing.context
import multiprocessing.spawn
import os
import platform
import shutil
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CLASS_NAME = "TestDistBackendWithSpawn"
BUILTIN = {"gloo", "nccl", "ucc", "mpi", "xccl"}
# Substrings of test names (as -k): the collectives without DDP, a quick smoke set.
PRESETS = {
    "collectives": [
        "test_all_reduce", "test_broadcast", "test_all_gather", "test_reduce",
        "test_scatter", "test_gather", "test_barrier", "test_send_recv", "test_isend",
        "test_irecv", "test_all_to_all", "test_reduce_scatter", "test_new_group",
    ],
}
# Characters of a failure's traceback kept in the report (its end, where the error is).
DETAIL_CHARS = 3000


def _bootstrap():
    """Builds the test class; runs in the runner and in every spawned rank."""
    for path in filter(None, os.environ.get("TORCHSUITE_PLUGIN_PATH", "").split(os.pathsep)):
        if path not in sys.path:
            sys.path.insert(0, path)

    import torch
    import torch.distributed as dist

    if int(torch.__version__.split(".")[0]) < 2:
        if HERE not in sys.path:
            sys.path.insert(0, HERE)
        import torch113

        torch113.prepare()

    backend = os.environ["BACKEND"]
    plugin = os.environ.get("TORCHSUITE_PLUGIN", "")
    if plugin:
        import importlib
        import inspect

        module_name, _, creator = plugin.partition(":")
        module = importlib.import_module(module_name)
        if creator and not hasattr(dist.Backend, backend.upper()):
            register = dist.Backend.register_backend
            devices = {"devices": ["cpu"]} if "devices" in inspect.signature(
                register).parameters else {}
            register(backend, getattr(module, creator), **devices)

    # The skip decorators read these sets while distributed_test defines its classes.
    from torch.testing._internal.common_distributed import DistTestCases

    for feature in filter(None, os.environ.get("TORCHSUITE_FEATURES", "").split(",")):
        DistTestCases.backend_feature.setdefault(feature, set()).add(backend)
    for collective in filter(None, os.environ.get("TORCHSUITE_SKIP_COLLECTIVES", "").split(",")):
        DistTestCases.skip_collective.setdefault(collective, set()).add(backend)

    torch.backends.cuda.matmul.allow_tf32 = False
    from torch.testing._internal.distributed.distributed_test import (
        DistributedTest,
        TestDistBackend,
    )

    class TestDistBackendWithSpawn(TestDistBackend, DistributedTest._DistTestBase):
        def setUp(self):
            super().setUp()
            self._spawn_processes()
            torch.backends.cudnn.flags(enabled=True, allow_tf32=False).__enter__()

        def _spawn_processes(self):
            if os.environ.get("TORCHSUITE_START_METHOD", "spawn") == "spawn":
                super()._spawn_processes()
            else:
                self._start_processes(_ForkServerProcess)

    # The ranks unpickle the class by this name from __mp_main__ (this file, imported again).
    TestDistBackendWithSpawn.__qualname__ = CLASS_NAME
    globals()[CLASS_NAME] = TestDistBackendWithSpawn
    return TestDistBackendWithSpawn


class _ForkServerProcess(multiprocessing.context.ForkServerProcess):
    """A rank forked by the fork server, in the environment of its test.

    The fork server has imported torch, the plugin and the suite once (it preloads this file),
    so a rank starts in well under a second instead of importing them for several seconds. A
    spawned rank inherits the runner's environment as it is when the test starts, which
    TestDistBackend.setUp has just changed (TEMP_DIR, INIT_METHOD); a forked one would inherit
    the fork server's, so the process carries the runner's environment and applies it first.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._environment = dict(os.environ)

    def run(self):
        os.environ.clear()
        os.environ.update(self._environment)
        super().run()


if __name__ == "__mp_main__" and os.environ.get("TORCHSUITE_ACTIVE") == "1":
    _bootstrap()


class _Result(unittest.TextTestResult):
    """Records every test's name, outcome, time and skip reason or error."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.records = []
        self._started = {}

    def startTest(self, test):
        self._started[test.id()] = time.time()
        super().startTest(test)

    def _record(self, test, outcome, detail=""):
        started = self._started.get(test.id(), time.time())
        record = {"test": test.id().split(".")[-1], "outcome": outcome,
                  "seconds": round(time.time() - started, 1)}
        if detail:
            record["detail"] = detail
        self.records.append(record)

    def addSuccess(self, test):
        super().addSuccess(test)
        self._record(test, "passed")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._record(test, "failed", self.failures[-1][1][-DETAIL_CHARS:])

    def addError(self, test, err):
        super().addError(test, err)
        self._record(test, "error", self.errors[-1][1][-DETAIL_CHARS:])

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._record(test, "skipped", str(reason))

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._record(test, "expected_failure")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._record(test, "unexpected_success")


def _matches(name, patterns):
    """A pattern with a glob character is an fnmatch pattern, otherwise a substring."""
    for pattern in patterns:
        if any(c in pattern for c in "*?["):
            if fnmatch.fnmatchcase(name, pattern):
                return True
        elif pattern in name:
            return True
    return False


def _static_skip(cls, name):
    method = getattr(cls, name)
    if getattr(method, "__unittest_skip__", False):
        return getattr(method, "__unittest_skip_why__", "") or "skipped"
    return ""


def _to_json(report):
    """The report with one line per test, so that it stays small and diffs well."""
    head = json.dumps({k: v for k, v in report.items() if k != "results"}, indent=1)
    rows = ",\n".join("  " + json.dumps(r) for r in report["results"])
    return head[:-2] + ',\n "results": [\n' + rows + "\n ]\n}\n"


def _parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", default="gloo", help="backend name (default: gloo)")
    ap.add_argument("--world-size", type=int, default=3,
                    help="ranks per test (default: 3, upstream's setting for gloo on CPU)")
    ap.add_argument("--plugin", default="",
                    help="MODULE, which registers the backend when imported, or MODULE:CREATOR, "
                         "which the runner registers for the cpu device; imported in every rank")
    ap.add_argument("--plugin-path", action="append", default=[],
                    help="directory put on sys.path and PYTHONPATH (repeatable)")
    ap.add_argument("--features", default=None,
                    help="comma list of DistTestCases.backend_feature sets the backend joins "
                         "(plugin, subgroup, ddp, gpu, cuda); default: plugin,subgroup,ddp for "
                         "a plugin backend, none for a built-in one")
    ap.add_argument("--skip-collectives", default="",
                    help="comma list of DistTestCases.skip_collective keys the backend lacks "
                         "(allgather_coalesced, reduce, 'sendrecv anysource', 'cpu barrier')")
    ap.add_argument("--init-method", choices=["env", "file"], default="env",
                    help="INIT_METHOD at import (upstream runs both); only "
                         "test_barrier_timeout_global depends on it (it needs file)")
    ap.add_argument("-k", dest="patterns", action="append", default=[],
                    help="run tests whose name contains PATTERN or matches it as a glob "
                         "(repeatable)")
    ap.add_argument("--exclude", action="append", default=[], help="deselect as -k selects")
    ap.add_argument("--preset", choices=sorted(PRESETS), help="add a list of -k patterns")
    ap.add_argument("--baseline", default=None,
                    help="a report of this runner: run only the tests that passed there")
    ap.add_argument("--unreachable", default=None,
                    help="a report of gloo registered as a plugin (gloo_plugin.py): the tests "
                         "that skipped there are gated on the backend's name, out of any "
                         "plugin's reach; deselect them")
    ap.add_argument("--no-skips", action="store_true",
                    help="a selected test that skips counts as failed (with --baseline and "
                         "--unreachable, every selected test is one a plugin can reach)")
    ap.add_argument("--timeout", type=int, default=None,
                    help="seconds a test's ranks may take (DISTRIBUTED_TESTS_DEFAULT_TIMEOUT, "
                         "default 300; a few tests have their own, longer ones)")
    ap.add_argument("--start-method", choices=["forkserver", "spawn"], default="forkserver",
                    help="how the ranks start: forked from a server that has imported torch and "
                         "the suite once (default), or spawned, importing them afresh for every "
                         "test as upstream does (several times slower)")
    ap.add_argument("--out", default="suite_result.json", help="JSON report to write")
    ap.add_argument("--list", action="store_true",
                    help="print the selected tests and their static skips; run nothing")
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per test")
    return ap.parse_args()


def main():
    args = _parse_args()
    features = args.features
    if features is None:
        features = "" if args.backend in BUILTIN else "plugin,subgroup,ddp"
    plugin_path = [os.path.abspath(p) for p in args.plugin_path]

    temp_dir = tempfile.mkdtemp(prefix="torchsuite_")
    os.makedirs(os.path.join(temp_dir, "barrier"))
    os.makedirs(os.path.join(temp_dir, "test_dir"))
    os.environ.update({
        "TORCHSUITE_ACTIVE": "1",
        "TORCHSUITE_PLUGIN": args.plugin,
        "TORCHSUITE_PLUGIN_PATH": os.pathsep.join(plugin_path),
        "TORCHSUITE_FEATURES": features,
        "TORCHSUITE_SKIP_COLLECTIVES": args.skip_collectives,
        "TORCHSUITE_START_METHOD": args.start_method,
        "BACKEND": args.backend,
        "WORLD_SIZE": str(args.world_size),
        "TEMP_DIR": temp_dir,
        "INIT_METHOD": "env://" if args.init_method == "env" else f"file://{temp_dir}/",
    })
    if args.timeout:
        os.environ["DISTRIBUTED_TESTS_DEFAULT_TIMEOUT"] = str(args.timeout)
    if plugin_path:
        os.environ["PYTHONPATH"] = os.pathsep.join(
            plugin_path + [p for p in [os.environ.get("PYTHONPATH")] if p])
    # torch.testing._internal.common_utils parses sys.argv when imported: hand it nothing.
    sys.argv = sys.argv[:1]

    try:
        return _run(args, features)
    finally:
        shutil.rmtree(temp_dir, ignore_errors=True)


def _run(args, features):
    init_method = os.environ["INIT_METHOD"]  # TestDistBackend.setUp overwrites it
    cls = _bootstrap()
    import torch

    names = sorted(n for n in dir(cls) if n.startswith("test_"))
    patterns = args.patterns + (PRESETS[args.preset] if args.preset else [])
    if patterns:
        names = [n for n in names if _matches(n, patterns)]
    if args.exclude:
        names = [n for n in names if not _matches(n, args.exclude)]
    if args.baseline:
        with open(args.baseline) as f:
            passed = {r["test"] for r in json.load(f)["results"] if r["outcome"] == "passed"}
        unknown = sorted(passed - set(dir(cls)))
        if unknown:
            print(f"baseline tests this torch does not have: {' '.join(unknown)}",
                  file=sys.stderr)
        names = [n for n in names if n in passed]
    if args.unreachable:
        with open(args.unreachable) as f:
            gated = {r["test"] for r in json.load(f)["results"] if r["outcome"] == "skipped"}
        names = [n for n in names if n not in gated]

    if args.list:
        for name in names:
            skip = _static_skip(cls, name)
            print(name + (f"   [static skip: {skip}]" if skip else ""))
        print(f"{len(names)} tests selected")
        return 0
    if not names:
        print("no test selected", file=sys.stderr)
        return 2

    if args.start_method == "forkserver":
        # The fork server starts with the first test, in this environment, and imports this
        # file as __mp_main__ (forkserver_main.py): the bootstrap above, once for the whole run.
        # The path is the one a rank's preparation compares its __main__ with; the server does
        # not put the runner's sys.path in place before it preloads, so it finds the module
        # through PYTHONPATH.
        os.environ["TORCHSUITE_MAIN_PATH"] = multiprocessing.spawn.get_preparation_data(
            "torchsuite")["init_main_from_path"]
        os.environ["PYTHONPATH"] = os.pathsep.join(
            filter(None, [HERE, os.environ.get("PYTHONPATH", "")]))
        multiprocessing.set_forkserver_preload(["forkserver_main"])
    suite = unittest.TestSuite(cls(name) for name in names)
    runner = unittest.TextTestRunner(stream=sys.stderr, verbosity=2 if args.verbose else 1,
                                     resultclass=_Result)
    started = time.time()
    result = runner.run(suite)
    wall = time.time() - started

    counts = {k: 0 for k in ("passed", "failed", "error", "skipped", "expected_failure",
                             "unexpected_success")}
    for record in result.records:
        counts[record["outcome"]] += 1
    report = {
        "torch": torch.__version__, "python": platform.python_version(),
        "backend": args.backend, "world_size": args.world_size, "plugin": args.plugin,
        "features": features, "skip_collectives": args.skip_collectives,
        "init_method": init_method.split(":")[0], "start_method": args.start_method,
        "patterns": patterns, "exclude": args.exclude, "baseline": args.baseline,
        "unreachable": args.unreachable,
        "selected": len(names), "wall_seconds": round(wall, 1), "counts": counts,
        "results": result.records,
    }
    with open(args.out, "w") as f:
        f.write(_to_json(report))

    failed = counts["failed"] + counts["error"] + counts["unexpected_success"]
    if args.no_skips and counts["skipped"]:
        skipped = [r["test"] for r in result.records if r["outcome"] == "skipped"]
        print(f"skipped, though a plugin backend reaches them: {' '.join(skipped)}")
        failed += counts["skipped"]
    print(f"{len(names)} selected in {wall:.0f} s: {counts['failed']} failures, "
          f"{counts['error']} errors, {counts['unexpected_success']} unexpected successes, "
          f"{counts['expected_failure']} expected failures; report: {args.out}")
    print(f"{counts['passed']} passed, {failed} failed, {counts['skipped']} skipped")
    return 0 if failed == 0 and result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())

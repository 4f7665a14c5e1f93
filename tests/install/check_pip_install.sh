#!/usr/bin/env bash
# Checks `pip install .` the way a user runs it: into a fresh virtual environment made with
# --system-site-packages (so that Debian's numpy and torch are seen), offline, with the build
# tools the environment already has; then uses the installed package from outside the source
# tree (a 2-rank all_reduce through weft.spawn against numpy, and the torch backend's import),
# uninstalls it and checks that nothing is left.
#
#   check_pip_install.sh [PYTHON]      (default /usr/bin/python3)
# Environment: KEEP_TMP=1 keeps the temporary directory.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
python=${1:-/usr/bin/python3}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-pip-check.XXXXXX")
cleanup() {
  local status=$?
  if [[ $status -ne 0 || ${KEEP_TMP:-0} == 1 ]]; then
    echo "check_pip_install: kept $tmp for inspection"
  else
    rm -rf "$tmp"
  fi
}
trap cleanup EXIT
step() { echo; echo "=== check_pip_install: $* ==="; }
fail() { echo "check_pip_install: FAILED: $*" >&2; exit 1; }

step "virtual environment from $python"
"$python" -m venv --system-site-packages "$tmp/venv"
venv_python=$tmp/venv/bin/python

step "pip install --no-build-isolation --no-index $source_dir"
"$venv_python" -m pip install --no-build-isolation --no-index "$source_dir"

step "the installed package, from outside the source tree"
cat >"$tmp/use_weft.py" <<'PY'
import os
import sys

import numpy as np

import weft
import weft.distributed as dist


def worker(rank, world_size):
    dist.init_process_group("weft")
    data = np.arange(5, dtype=np.float64) * (rank + 1)
    dist.all_reduce(data)
    expected = np.arange(5, dtype=np.float64) * sum(r + 1 for r in range(world_size))
    np.testing.assert_array_equal(data, expected)
    dist.destroy_process_group()


if __name__ == "__main__":
    location = os.path.dirname(weft.__file__)
    assert location.startswith(sys.prefix), f"weft imported from {location}, not the venv"
    weft.spawn(worker, args=(2,), nprocs=2)
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        import weft.torch  # noqa: F401  (registers the backend)
    print(f"weft {weft.__version__} from {location}: all_reduce OK, torch backend "
          f"{'imported' if torch is not None else 'skipped (no torch)'}")
PY
(cd "$tmp" && env -u PYTHONPATH "$venv_python" use_weft.py) || fail "the installed package does not work"

step "pip uninstall"
"$venv_python" -m pip uninstall -y weft
left=$(find "$tmp/venv" -path '*-packages/weft*')
[[ -z $left ]] || fail "pip uninstall left behind:
$left"
if (cd "$tmp" && env -u PYTHONPATH "$venv_python" -c "import weft" 2>/dev/null); then
  fail "weft is still importable after pip uninstall"
fi
echo
echo "check_pip_install: OK"

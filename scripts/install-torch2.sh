#!/usr/bin/env bash
# Makes the project's torch 2.x environment: a virtual environment (default .venv/ in the
# clone, or $WEFT_TORCH2_VENV) holding torch 2.13.0's CPU build, numpy, pytest and
# scikit-learn, for the tests and examples of the backend on torch 2.x. Safe to run again:
# it installs nothing that is already there. Prints the environment's python on its last line.
#
# The version is pinned with its "+cpu" tag on purpose: that build is not on PyPI, so when no
# local copy of it is on the machine pip fails at once instead of fetching a CUDA build of
# several GB.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${WEFT_TORCH2_VENV:-$root/.venv}
torch_version=${WEFT_TORCH2_VERSION:-2.13.0}
base_python=${WEFT_TORCH2_BASE_PYTHON:-$(command -v python3)}

if [ ! -x "$venv/bin/python" ]; then
  if ! "$base_python" -c "import venv, ensurepip" >/dev/null 2>&1; then
    echo "[weft] installing python3-venv" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-venv >&2
  fi
  echo "[weft] creating $venv (from $base_python)" >&2
  "$base_python" -m venv --system-site-packages "$venv" >&2
fi
py=$venv/bin/python

have() { "$py" -c "$1" >/dev/null 2>&1; }

if ! have "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$torch_version')"; then
  echo "[weft] installing torch $torch_version (CPU build) into $venv" >&2
  "$py" -m pip install -q "torch==$torch_version+cpu" >&2
fi
if have "import torch, sys; sys.exit(torch.version.cuda is None)"; then
  echo "[weft] $venv holds a CUDA build of torch; remove it and run again" >&2
  exit 1
fi
missing=()
have "import numpy" || missing+=(numpy)
have "import pytest" || missing+=(pytest)
have "import sklearn" || missing+=(scikit-learn)
have "import expecttest" || missing+=(expecttest)
if [ ${#missing[@]} -gt 0 ]; then
  echo "[weft] installing into $venv: ${missing[*]}" >&2
  "$py" -m pip install -q "${missing[@]}" >&2
fi
echo "$py"

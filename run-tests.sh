#!/usr/bin/env bash
# Installs what is missing, builds weft and runs every test (CTest). Exits non-zero on a failure.
set -euo pipefail
root=$(cd "$(dirname "$0")" && pwd)
"$root/scripts/install-deps.sh" tests
# torch 2.x (CPU build) in .venv/: the torch backend's tests run on it and on Debian's 1.13.
"$root/scripts/install-torch2.sh" >/dev/null
"$root/scripts/build.sh"
build=${WEFT_BUILD_DIR:-$root/build}
cd "$build"
# WEFT_EXTENDED_TESTS=1 adds the extended tests (PyTorch's backend suite on both torches, and
# `pip install .`: a few minutes).
extended=(-LE extended)
if [ "${WEFT_EXTENDED_TESTS:-0}" = 1 ]; then
  extended=()
fi
# One test more than cores by default: many tests spend part of their time waiting (for a
# timeout to fire, a simulated host's link, a peer process starting), and a core they leave is
# taken by the next test.
ctest --no-tests=error --output-on-failure -j "${WEFT_TEST_JOBS:-$(($(nproc) + 1))}" --timeout 1500 \
  "${extended[@]}"

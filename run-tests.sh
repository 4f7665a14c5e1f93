#!/usr/bin/env bash
# Installs what is missing, builds weft and runs every test (CTest). Exits non-zero on a failure.
set -euo pipefail
root=$(cd "$(dirname "$0")" && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
build=${WEFT_BUILD_DIR:-$root/build}
cd "$build"
ctest --output-on-failure -j "${WEFT_TEST_JOBS:-2}" --timeout 600

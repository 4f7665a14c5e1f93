#!/usr/bin/env bash
# The main job: installs what is missing, builds weft, and runs a 4-rank demo on this host
# with weftrun. Usage: ./run-demo.sh [number of ranks]
set -euo pipefail
root=$(cd "$(dirname "$0")" && pwd)
ranks=${1:-4}
"$root/scripts/install-deps.sh" cpp
"$root/scripts/build.sh"
build=${WEFT_BUILD_DIR:-$root/build}
exec "$build/tools/weftrun/weftrun" -n "$ranks" "$build/examples/cpp/hello_ranks"

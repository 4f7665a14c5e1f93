#!/usr/bin/env bash
# Configures and builds weft into build/ (or $WEFT_BUILD_DIR). Incremental when run again.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${WEFT_BUILD_DIR:-$root/build}
jobs=${WEFT_JOBS:-$(nproc)}
source "$root/scripts/cmake-generator.sh"
mapfile -t generator < <(cmake_generator_args "$build")
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=${WEFT_BUILD_TYPE:-RelWithDebInfo} \
  >/dev/null
cmake --build "$build" -j "$jobs"

#!/usr/bin/env bash
# thread-safety-check.sh — clang's thread-safety analysis over libweft (docs/RELIABILITY.md,
# "Thread-safety analysis"): configures a clang tree of its own (build-tsa/, or
# $WEFT_TSA_BUILD_DIR) with -Wthread-safety as errors and builds the library's layers. Exits
# non-zero on the first violation, printing clang's report (which member, which lock, where).
#
#   scripts/thread-safety-check.sh           # the library (src/): what is annotated
#   WEFT_TSA_ALL=1 scripts/thread-safety-check.sh   # also tools, tests and examples
#
# Incremental when run again; ccache is used when installed. WEFT_JOBS sets the parallelism
# (default: the number of cores). Exit 77 when clang++ is missing (CI: skipped).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${WEFT_TSA_BUILD_DIR:-$root/build-tsa}
jobs=${WEFT_JOBS:-$(nproc)}
clangxx=${WEFT_TSA_CXX:-$(command -v clang++ || true)}
if [ -z "$clangxx" ]; then
  echo "thread-safety-check.sh: SKIPPED: clang++ not found" >&2
  exit 77
fi
clangc="$(dirname "$clangxx")/clang"
[ -x "$clangc" ] || clangc="$(command -v clang || echo "$clangxx")"
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
all=${WEFT_TSA_ALL:-0}
onoff() { [ "$all" = 1 ] && echo ON || echo OFF; }
started=$(date +%s)
source "$root/scripts/cmake-generator.sh"
mapfile -t generator < <(cmake_generator_args "$build")
mkdir -p "$build"
# -O0, no debug information: the analysis is the compiler's front end, and code generation only
# costs time here.
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O0 -DNDEBUG" \
  -DCMAKE_CXX_COMPILER="$clangxx" -DCMAKE_C_COMPILER="$clangc" "${launcher[@]}" -DWEFT_UNITY_BUILD=OFF \
  -DWEFT_THREAD_SAFETY_ANALYSIS=ON -DWEFT_BUILD_PYTHON=OFF \
  -DWEFT_BUILD_TESTS="$(onoff)" -DWEFT_BUILD_EXAMPLES="$(onoff)" \
  -DWEFT_BUILD_BENCHMARKS=OFF -DWEFT_BUILD_TOOLS="$(onoff)" >"$build/configure.log" 2>&1 || {
  cat "$build/configure.log" >&2
  exit 1
}
if ! grep -q '^WEFT_HAVE_WTHREAD_SAFETY:INTERNAL=1' "$build/CMakeCache.txt"; then
  echo "thread-safety-check.sh: $clangxx does not take -Wthread-safety" >&2
  exit 1
fi
if [ "$all" = 1 ]; then
  targets=(all)
else
  targets=(weft_static)  # every layer's objects
fi
# The analysis must be live: a member read without its lock has to fail to compile.
if printf '%s\n' '#include "util/mutex.h"' \
  'struct S { weft::util::Mutex m; int x WEFT_GUARDED_BY(m) = 0; int f() { return x; } };' |
  "$clangxx" -std=c++20 -I"$root/src" -Wthread-safety -Werror=thread-safety -fsyntax-only \
    -x c++ - 2>/dev/null; then
  echo "thread-safety-check.sh: a violation compiled: the annotations are not in effect" >&2
  exit 1
fi
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
cmake --build "$build" -j "$jobs" --target "${targets[@]}"
echo "thread-safety-check.sh: no thread-safety violations ($clangxx, $(($(date +%s) - started)) s)"

#!/usr/bin/env bash
# run_fuzzers.sh — builds weft's libFuzzer targets with clang (a build of their own: WEFT_FUZZ=ON
# compiles only the sources they exercise) and runs each for a bounded time on a corpus seeded
# by weft's own encoders. Fails on any crash, sanitizer report or timeout, printing the
# reproducer's path: `<target> <reproducer>` replays it.
#
# Usage: tests/fuzz/run_fuzzers.sh [BUILD_DIR]      (default: <repo>/build-fuzz)
#   WEFT_FUZZ_SECONDS   seconds per target (default 16); 600 for a longer hunt
#   WEFT_FUZZ_TARGETS   which targets (default: all five)
# Exit 77 when clang or libFuzzer is missing (ctest reports the test as skipped).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="${1:-$repo/build-fuzz}"
seconds="${WEFT_FUZZ_SECONDS:-16}"
targets="${WEFT_FUZZ_TARGETS:-fuzz_store_protocol fuzz_handshake fuzz_frame_header fuzz_shm_record fuzz_window_record}"

skip() {
  echo "run_fuzzers.sh: SKIPPED: $1 (scripts/install-deps.sh tests installs clang and libFuzzer)"
  exit 77
}
clangxx="${WEFT_FUZZ_CXX:-$(command -v clang++ || true)}"
[ -n "$clangxx" ] || skip "clang++ not found"
clangc="$(dirname "$clangxx")/clang"
[ -x "$clangc" ] || clangc="$(command -v clang || echo "$clangxx")"
echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
  "$clangxx" -x c++ -fsanitize=fuzzer - -o /dev/null 2>/dev/null || skip "$clangxx cannot link libFuzzer"

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
started=$(date +%s)
# The library's sources at -O1 with line tables, as the targets themselves (tests/fuzz/
# CMakeLists.txt): libFuzzer's advice, and a shorter build.
cmake -S "$repo" -B "$build" -DWEFT_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DCMAKE_CXX_COMPILER="$clangxx" -DCMAKE_C_COMPILER="$clangc" "${launcher[@]}" >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; echo "run_fuzzers.sh: configure failed"; exit 1; }
cmake --build "$build" -j1 -- $targets >"$build/build.log" 2>&1 ||
  { tail -40 "$build/build.log"; echo "run_fuzzers.sh: build failed"; exit 1; }
echo "run_fuzzers.sh: built in $(($(date +%s) - started)) s; ${seconds} s per target"

failed=0
for target in $targets; do
  binary="$build/tests/fuzz/$target"
  corpus="$build/corpus/$target"
  crashes="$build/crashes/$target"
  mkdir -p "$corpus" "$crashes"
  WEFT_FUZZ_WRITE_SEEDS="$corpus" "$binary" >/dev/null 2>&1 ||
    { echo "run_fuzzers.sh: $target could not write its seeds"; failed=1; continue; }
  log="$build/$target.log"
  # -timeout: one input taking seconds is a hang; -rss_limit_mb: a claimed length allocated.
  if "$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$crashes/" -print_final_stats=1 "$corpus" >"$log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
    echo "run_fuzzers.sh: $target: ${runs:-?} inputs, no crash"
  else
    failed=1
    echo "run_fuzzers.sh: $target FAILED; its log ($log) ends:"
    grep -v '^#' "$log" | tail -30
    for reproducer in "$crashes"/*; do
      [ -e "$reproducer" ] && echo "run_fuzzers.sh: reproducer: $reproducer (replay: $binary $reproducer)"
    done
  fi
done
echo "run_fuzzers.sh: $(($(date +%s) - started)) s in all"
exit $failed

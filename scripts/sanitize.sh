#!/usr/bin/env bash
# Builds weft with a sanitizer into a tree of its own and runs the tests there (docs/RELIABILITY.md,
# "Sanitizers").
#
#   scripts/sanitize.sh address [CTEST ARGS...]   ASan + LeakSanitizer + UBSan, into build-asan/
#   scripts/sanitize.sh thread  [CTEST ARGS...]   ThreadSanitizer, into build-tsan/
#   scripts/sanitize.sh ci                        the bounded selection .ci/run runs (below)
#
# Without CTEST ARGS the whole suite runs except the extended tests: `-LE extended`. Any CTEST
# ARGS replace that (e.g. `-R '^Shrink\.'`, `-L soak`). The Python package, the torch backend,
# the fuzz targets and the install test are not built in a sanitized tree (CMakeLists.txt).
#   WEFT_SANITIZE_BUILD_DIR  the tree (default build-asan/ or build-tsan/ in the checkout)
#   WEFT_SANITIZE_TARGETS    build only these targets (default: everything)
#   WEFT_JOBS                parallel compile jobs (default: nproc)
#   WEFT_TEST_JOBS           ctest -j (default 2)
# Any report fails the test that made it: UBSan aborts (-fno-sanitize-recover), ASan and
# LeakSanitizer exit non-zero, TSan exits 66 at the end of a process that had a report.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage() {
  echo "usage: scripts/sanitize.sh address|thread [CTEST ARGS...] | scripts/sanitize.sh ci" >&2
  exit 2
}
[ $# -ge 1 ] || usage
kind=$1
shift

# The bounded selection for CI (docs/RELIABILITY.md, "Sanitizers", has its times):
#   address  every gtest tier whole (unit, reduce, in-process, multi-process, launchers, shrink,
#            address choice, weftrun), and one test each of the scale, soak, bench and examples
#            tiers: the smallest sweep, the bounded soak, weft-bench's options, hello_ranks
#   thread   the unit tier, and the in-process tier less the suites in tsan_ci_skip: the
#            algorithm sweeps, half its time under TSan, which reach the transports and
#            windows the rest of the tier reaches
# The rest (the larger sweeps, weft-bench's runs, the other examples, TSan on the other tiers)
# runs with `scripts/sanitize.sh address|thread` and no CTEST ARGS: the whole suite.
if [ "$kind" = ci ]; then
  [ $# -eq 0 ] || usage
  unset WEFT_SANITIZE_BUILD_DIR  # one tree each: build-asan/ and build-tsan/
  started=$SECONDS
  tiers="weft_unit_test weft_reduce_test weft_inproc_test weft_multiproc_test weft_launchers_test"
  tiers+=" weft_shrink_test weft_address_test weft_address_choice_test"
  weftrun_tests="weftrun_test weft_trace_test weftrun_host_list_test weftrun_hosts_test"
  weftrun_tests+=" weftrun_trace_merge_test"
  samples="weft_scale_sweep weft_soak_rank weft-bench example_hello_ranks"
  WEFT_SANITIZE_TARGETS="$tiers $weftrun_tests $samples" "$0" address \
    -L "^(${tiers// /|}|weftrun)\$" -E '^CostModelCli'
  WEFT_SANITIZE_TARGETS="$tiers $weftrun_tests $samples" "$0" address \
    -R '^(scale\.sweep_32_ranks_shm|soak\.bounded|weft_bench_options|examples\.hello_ranks\.np4)$'
  echo "[sanitize] ci: address (every tier): $((SECONDS - started)) s"
  tsan_started=$SECONDS
  tsan_ci_skip='MovingAlgorithms|ReducingAlgorithms|WorldSizes'
  WEFT_SANITIZE_TARGETS="weft_unit_test weft_inproc_test" "$0" thread \
    -L '^(weft_unit_test|weft_inproc_test)$' -E "^(CostModelCli|(${tsan_ci_skip})[./])"
  echo "[sanitize] ci: thread (unit, in-process): $((SECONDS - tsan_started)) s"
  echo "[sanitize] ci: $((SECONDS - started)) s in all"
  exit 0
fi

case "$kind" in
  address) build=${WEFT_SANITIZE_BUILD_DIR:-$root/build-asan} ;;
  thread) build=${WEFT_SANITIZE_BUILD_DIR:-$root/build-tsan} ;;
  *) usage ;;
esac
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(-LE extended)

launcher=()
if command -v ccache >/dev/null; then
  # Paths relative to the checkout, so that another clone hits the same cache entries.
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=1
fi
started=$SECONDS
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_SANITIZE="$kind" \
  -DWEFT_BUILD_BENCHMARKS=OFF "${launcher[@]}" >/dev/null
targets=()
for target in ${WEFT_SANITIZE_TARGETS:-}; do targets+=(--target "$target"); done
cmake --build "$build" -j "${WEFT_JOBS:-$(nproc)}" "${targets[@]}"
echo "[sanitize] $kind: built in $((SECONDS - started)) s"

supp=$root/scripts/sanitizers
export ASAN_OPTIONS=detect_leaks=1:strict_init_order=1:check_initialization_order=1
export LSAN_OPTIONS=suppressions=$supp/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=suppressions=$supp/tsan.supp:print_suppressions=0:second_deadlock_stack=1
cd "$build"
ctest --no-tests=error --output-on-failure -j "${WEFT_TEST_JOBS:-2}" --timeout 900 "${args[@]}"

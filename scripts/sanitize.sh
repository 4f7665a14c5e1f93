#!/usr/bin/env bash
# Builds weft with a sanitizer into a tree of its own and runs the tests there (docs/RELIABILITY.md,
# "Sanitizers").
#
#   scripts/sanitize.sh address [CTEST ARGS...]   ASan + LeakSanitizer + UBSan, into build-asan/
#   scripts/sanitize.sh thread  [CTEST ARGS...]   ThreadSanitizer, into build-tsan/
#   scripts/sanitize.sh ci                        the tiers CI runs under each (below)
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

# ci: what .ci/run runs: the tiers where the sanitizers find most for their cost, built alone
# (the library and these tiers' executables), under ASan+UBSan and then under TSan. The unit
# tier; the in-process tier, whose ranks are threads of one process, so that the shared-memory
# protocols and the transports' and stores' threads race in one address space, where TSan sees
# them; and weftrun's own tests, where the launcher's signal handling and store server are
# threads of one process too. Every finding in the library or weftrun that docs/RELIABILITY.md
# lists ("Sanitizers") came from these tiers or has a test in them now. The rest of the suite
# runs the same library code in rank processes: `scripts/sanitize.sh address|thread` runs it
# whole, on demand.
ci_targets="weft_unit_test weft_inproc_test weftrun_test"
ci_tiers='^(weft_unit_test|weft_inproc_test|weftrun)$'
# Left out of CI's TSan run (they run under ASan+UBSan in CI, and under TSan on demand): the
# in-process sweeps that repeat one collective's paths over many sizes and world sizes, and the
# point-to-point tests whose cost is the size of their buffers. Under TSan their time goes to the
# kernel, not to the checks: every first write to a page of TSan's shadow memory is a fault that
# flushes the other cores' TLBs, and on a VM those flushes are expensive (docs/RELIABILITY.md,
# "Where it runs"). One large-data test of each protocol stays in: the single-copy all_to_all
# (SharedMemoryAllToAllLargeReadsFromTheSenders), all_gather's streamed output
# (SharedMemoryAllGatherLargeUnevenAndStreamed), broadcast in many rounds, large reductions
# (ReducingAlgorithms.LargeCount), and every test of a wait, cancel or park in mid-message.
ci_thread_skipped='^(MovingAlgorithms\.(SharedMemoryAllGather|SharedMemoryEvenAllGather|SharedMemoryAllToAllLargeThroughTheSlotsWhenSingleCopyIsOff|SharedMemoryEvenAllToAll|SharedMemoryAllToAllWithAnySplits|BruckAllGather|RingAllGather)|ReducingAlgorithms\.(ManySegments|RabenseifnerOffPowersOfTwo)|Paths/PointToPoint\.LargeMessage256MiB/.*)$'
if [ "$kind" = ci ]; then
  [ $# -eq 0 ] || usage
  unset WEFT_SANITIZE_BUILD_DIR
  export WEFT_SANITIZE_TARGETS=$ci_targets
  started=$SECONDS
  "$0" address -L "$ci_tiers"
  echo "[sanitize] ci: address (unit, in-process and weftrun tiers): $((SECONDS - started)) s"
  tsan_started=$SECONDS
  "$0" thread -L "$ci_tiers" -E "$ci_thread_skipped"
  echo "[sanitize] ci: thread (unit, in-process and weftrun tiers): $((SECONDS - tsan_started)) s"
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
# -O1 and line tables only: what the sanitizers' own documentation advises; reports still name
# file and line, and a tree compiles much faster than at -O2 -g.
optimize="-O1 -g1 -DNDEBUG"
source "$root/scripts/cmake-generator.sh"
mapfile -t generator < <(cmake_generator_args "$build")
started=$SECONDS
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_SANITIZE="$kind" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$optimize" -DCMAKE_C_FLAGS_RELWITHDEBINFO="$optimize" \
  -DWEFT_BUILD_BENCHMARKS=OFF -DWEFT_OFI=OFF "${launcher[@]}" >/dev/null
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

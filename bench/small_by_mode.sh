#!/usr/bin/env bash
# small_by_mode.sh — weft beside Open MPI at their smallest size (8 B; 16 B where 8 B does not
# split into a float per rank), every shared-memory collective, with each
# invocation tagged by the mode the host ran the two vCPUs in (docs/PERFORMANCE.md, "Two
# modes"): bench/line_round_trip.c measures a cache line's round trip just before and just after
# it; an invocation counts as "fast" (both below 250 ns) or "slow" (both above), and one whose
# mode changed is left out. Prints the median med_us per op, mode and system, and Open MPI's
# time / weft's (> 1: weft faster).
#
# Usage: bench/small_by_mode.sh [-B BUILD] [-N RANKS] [-r ROUNDS] [-b BYTES]
#   -B  build directory with weft-bench, weftrun and anchors-shm (bench/shm_compare.sh builds it)
#   -N  ranks (default 2)      -r  rounds, each one weft and one Open MPI invocation (default 8)
#   -b  another size than the smallest (e.g. 64K: every op at that size instead)
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$repo/build"; ranks=2; rounds=8; bytes=8; most=16
while getopts "B:N:r:b:h" opt; do
  case "$opt" in
    B) build="$OPTARG" ;; N) ranks="$OPTARG" ;; r) rounds="$OPTARG" ;;
    b) bytes="$OPTARG"; most="$OPTARG" ;;
    *) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
  esac
done
anchors="$build/anchors-shm/build"
for f in "$build/tools/weftrun/weftrun" "$build/tools/weft-bench/weft-bench" \
  "$anchors/mpi_coll_bench.openmpi" "$anchors/mpi_reduce_bench.openmpi"; do
  [[ -x "$f" ]] || { echo "missing $f (run bench/shm_compare.sh once)" >&2; exit 1; }
done
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
source "$repo/bench/vcpu_mode.sh"
vcpu_mode_build "$work" || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
oversubscribe=""; (( ranks > $(nproc) )) && oversubscribe=--oversubscribe
mpi() { timeout 300 mpirun.openmpi -np "$ranks" $oversubscribe --mca btl_tcp_if_include lo \
  --mca oob_tcp_if_include lo "$@"; }

run_weft() {  # CSV
  timeout 300 "$build/tools/weftrun/weftrun" --no-prefix -n "$ranks" \
    "$build/tools/weft-bench/weft-bench" \
    all_reduce,broadcast,reduce,all_gather,reduce_scatter,all_to_all,barrier -b "$bytes" -e "$most" -c 1 \
    --target-seconds 0.05 --csv "$1" >/dev/null 2>&1
}
run_openmpi() {  # CSV
  mpi "$anchors/mpi_coll_bench.openmpi" -H -t 0.05 -b "$bytes" -e "$most" -C "$(nproc)" \
    -o allreduce,broadcast,allgather,reduce_scatter,alltoall,barrier >"$1" 2>/dev/null &&
    mpi "$anchors/mpi_reduce_bench.openmpi" -t 0.05 -b "$bytes" -e "$bytes" -C "$(nproc)" >>"$1" 2>/dev/null
}
for r in $(seq "$rounds"); do
  for system in weft openmpi; do
    before=$(vcpu_mode); "run_$system" "$work/$system.$r.csv"; after=$(vcpu_mode)
    [[ $before == "$after" ]] && mv "$work/$system.$r.csv" "$work/$system.$r.$before.csv"
  done
done
/usr/bin/python3 - "$work" <<'PY'
import collections, csv, glob, statistics, sys
work = sys.argv[1]
names = {"all_reduce": "allreduce", "all_gather": "allgather", "all_to_all": "alltoall"}
ops = ["allreduce", "broadcast", "reduce", "allgather", "reduce_scatter", "alltoall", "barrier"]
def times(system, mode):
    files = glob.glob(f"{work}/{system}.*.{mode}.csv")
    found = collections.defaultdict(list)
    for name in files:
        smallest = {}  # op -> (bytes, med_us)
        for row in csv.reader(open(name)):
            if len(row) < 17 or row[0] == "system" or row[16] != "ok":
                continue
            op, size = names.get(row[5], row[5]), int(row[8])
            if op not in smallest or size < smallest[op][0]:
                smallest[op] = (size, float(row[11]))
        for op, cell in smallest.items():
            found[op].append(cell)
    return found, len(files)
for mode in ["fast", "slow"]:
    (weft, nw), (ompi, no) = times("weft", mode), times("openmpi", mode)
    print(f"{mode} mode: {nw} weft and {no} Open MPI invocations; median us")
    print(f"{'op':16}{'bytes':>6}{'weft':>8}{'Open MPI':>10}{'ratio':>8}")
    for op in ops:
        median = lambda cells: statistics.median(t for _, t in cells) if cells else float("nan")
        w, o = median(weft[op]), median(ompi[op])
        size = min((b for b, _ in weft[op] + ompi[op]), default=0)
        print(f"{op:16}{size:6}{w:8.3f}{o:10.3f}{o / w:8.2f}")
PY

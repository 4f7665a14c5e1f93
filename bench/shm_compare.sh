#!/usr/bin/env bash
# shm_compare.sh — weft on one host (shared memory, its default) beside Open MPI (default:
# ob1 + vader shared memory with CMA), MPICH (ch4:ucx, shared memory) and torch gloo, measured
# in the same run, interleaved, with the anchors' sizes, timing method and CSV schema.
#
# For each run and rank count (order of systems rotated each run) it writes
# OUT/run<k>/<system>_n<N>.csv, then shared/anchors/summarize.py makes run<k>/SUMMARY*.md and
# this script makes OUT/COMPARE.md (median over runs of med_us, busbw, and the ratios weft /
# Open MPI and weft / gloo read against issue 5's targets), OUT/membw.csv (the memory-bandwidth
# bound of shared/anchors/membw.c) and OUT/plots/ (bench/plot_busbw.py).
#
# Usage: bench/shm_compare.sh [-B BUILD] [-o OUT] [-r RUNS] [-N 2,4] [-t SEC] [-e 64M]
#                             [-s weft,openmpi,mpich,gloo] [-l LOAD] [-k ROUNDS] [-m ROUNDS] [-n]
#   -B  build directory with weft-bench and weftrun (default <repo>/build; built if missing)
#   -n  do not build the anchors again (use BUILD/anchors-shm from an earlier run)
#   -k  small rounds per run and rank count (default 3): after each run's sweeps, every system
#       again at 8 and 16 B only, in turn, into OUT/small/; the 8 B cells (and barrier) are the
#       median over the runs and these rounds. A 2-rank 8 B call takes about one cache line's
#       round trip, which a VM's host can change every few seconds (docs/PERFORMANCE.md,
#       "Two modes"): one sample per run and system left those cells to the modes of a few
#       moments; samples taken in turn, seconds apart, see the same modes.
#   -m  mode rounds per run and rank count (default 3): after the small rounds, weft and Open MPI
#       in turn run all_reduce at 64 KiB, 1 MiB and 16 MiB into OUT/bymode/. Every small and mode
#       round is tagged with the vCPU mode (bench/vcpu_mode.sh) read just before and just after
#       it, in a .mode file beside its CSV ("mixed" when the two differ); COMPARE.md then also
#       compares the systems within each mode. 4 ranks on 2 cores slow down several times in
#       the slow mode, so a cell of the sweeps can pair one system's slow-mode samples with the
#       other's fast-mode ones; the mode rounds compare like with like.
# MPICH busy-polls when ranks outnumber cores: at 4 ranks it runs up to 16 MiB, 0.05 s a size
# (as shared/anchors/run_all.sh does).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
anchors="${ANCHORS:-$(cd "$repo/../shared/anchors" 2>/dev/null && pwd)}"
PY=/usr/bin/python3
build="$repo/build"; out=""; runs=1; ranks_list="2,4"; target=0.1; maxb=64M
systems="weft,openmpi,mpich,gloo"; max_load=1.0; build_anchors=1; small_rounds=3; mode_rounds=3
while getopts "B:o:r:N:t:e:s:l:k:m:nh" opt; do
  case "$opt" in
    B) build="$OPTARG" ;; o) out="$OPTARG" ;; r) runs="$OPTARG" ;; N) ranks_list="$OPTARG" ;;
    t) target="$OPTARG" ;; e) maxb="$OPTARG" ;; s) systems="$OPTARG" ;; l) max_load="$OPTARG" ;;
    k) small_rounds="$OPTARG" ;; m) mode_rounds="$OPTARG" ;; n) build_anchors=0 ;;
    *) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
  esac
done
log() { echo "[shm_compare $(date +%H:%M:%S)] $*" >&2; }
[[ -f "$anchors/summarize.py" ]] || { log "shared/anchors not found (set ANCHORS=)"; exit 1; }
out="${out:-$repo/bench/results/shm_$(date +%Y-%m-%d_%H%M)}"
mkdir -p "$out"; out="$(cd "$out" && pwd)"
cores=$(nproc)
ops="allreduce,broadcast,allgather,reduce_scatter,alltoall,barrier"
wops="all_reduce,broadcast,reduce,all_gather,reduce_scatter,all_to_all,barrier"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

weftrun="$build/tools/weftrun/weftrun"; weftbench="$build/tools/weft-bench/weft-bench"
[[ -x "$weftbench" && -x "$weftrun" ]] || "$repo/scripts/build.sh" >&2 || exit 1
abuild="$build/anchors-shm"  # binaries stay out of the results directory
if (( build_anchors )); then
  command -v mpicc.openmpi >/dev/null || { log "apt-get install openmpi-bin libopenmpi-dev mpich libmpich-dev"; exit 1; }
  mkdir -p "$abuild"; cp "$anchors"/build.sh "$anchors"/*.c "$anchors"/*.cc "$abuild"/
  "$abuild/build.sh" >"$abuild/build.log" 2>&1 || { log "anchor build failed"; exit 1; }
  # The anchors have no reduce: bench/mpi_reduce_bench.c times MPI_Reduce their way.
  # MPICH's only when it is one of the systems: a machine without it measures the others.
  mpicc.openmpi -O2 -o "$abuild/build/mpi_reduce_bench.openmpi" "$here/mpi_reduce_bench.c" &&
    { [[ ,$systems, != *,mpich,* ]] ||
      mpicc.mpich -O2 -o "$abuild/build/mpi_reduce_bench.mpich" "$here/mpi_reduce_bench.c"; } ||
    { log "mpi_reduce_bench build failed"; exit 1; }
fi
source "$here/vcpu_mode.sh"
mkdir -p "$abuild" && vcpu_mode_build "$abuild" || { log "cannot build bench/line_round_trip.c"; exit 1; }
{
  echo "date: $(date -Is)"; echo "host: $(uname -sr), $cores cores, $(lscpu | sed -n 's/^Model name: *//p')"
  # The build's own sources (-B may name another checkout's build).
  weft_src="$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null)"
  weft_src="${weft_src:-$repo}"
  echo "weft: $(git -C "$weft_src" rev-parse --short HEAD)$(git -C "$weft_src" diff --quiet HEAD -- src include tools || echo ' + uncommitted changes')"
  echo "openmpi: $(mpirun.openmpi --version 2>/dev/null | head -1)"; echo "mpich: $(mpichversion 2>/dev/null | head -1)"
  echo "loadavg at start: $(cat /proc/loadavg)"; echo "target $target s per size, sizes 8 B .. $maxb (x4), runs $runs"
} >"$out/meta.txt"
"$abuild/build/membw" -H >"$out/membw.csv" 2>/dev/null || true

wait_quiet() {  # bounded: at most 60 s
  for _ in $(seq 12); do
    awk -v l="$(cut -d' ' -f1 /proc/loadavg)" -v m="$max_load" 'BEGIN { exit !(l < m) }' && return
    sleep 5
  done
  log "load $(cut -d' ' -f1 /proc/loadavg): running anyway"
}

run_weft() {  # N CSV MAX TARGET: 8 B alone, then 16 B x4 .. MAX (the anchors' size list), merged
  local n=$1 csv=$2 most=$3 target=$4 part
  for part in "8 8 1" "16 $most 4"; do
    set -- $part
    timeout --kill-after=10 900 "$weftrun" --no-prefix -n "$n" "$weftbench" "$wops" -b "$1" \
      -e "$2" -f "$3" -c 1 --target-seconds "$target" --config shm --cores "$cores" \
      --csv "$csv.$1" >/dev/null 2>>"${csv%.csv}.err" || return 1
  done
  awk -F, 'FNR == 1 { if (NR == 1) print; next } !seen[$6 "," $9]++' "$csv.8" "$csv.16" >"$csv"
  rm -f "$csv.8" "$csv.16"
}

mpi_openmpi() {  # N ARGS...: Open MPI over shared memory (its default)
  local n=$1 over=(); shift
  (( n > cores )) && over=(--oversubscribe)
  timeout --kill-after=10 900 mpirun.openmpi -np "$n" "${over[@]}" \
    --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo "$@"
}

tag_mode() {  # CSV COMMAND...: runs it between two reads of the vCPU mode, into CSV.mode
  local before after
  before=$(vcpu_mode); "${@:2}"; local rc=$?; after=$(vcpu_mode)
  [[ $before == "$after" ]] && echo "$before" >"${1%.csv}.mode" || echo mixed >"${1%.csv}.mode"
  return $rc
}

mode_round() {  # RUN N SYSTEM ROUND: all_reduce 1, 4 and 16 MiB, tagged by mode, into OUT/bymode
  local n=$2 sys=$3 csv="$out/bymode/${3}_n${2}_run$1_round$4.csv"
  log "run $1, mode round $4: $sys, $n ranks"
  case "$sys" in
    weft) tag_mode "$csv" timeout --kill-after=10 900 "$weftrun" --no-prefix -n "$n" "$weftbench" \
            all_reduce -b 1M -e 16M -f 4 -c 1 --target-seconds "$target" --config shm \
            --cores "$cores" --csv "$csv" >/dev/null 2>>"${csv%.csv}.err" ;;
    openmpi) tag_mode "$csv" mpi_openmpi "$n" "$abuild/build/mpi_coll_bench.openmpi" -H \
               -t "$target" -b 1M -e 16M -f 4 -o allreduce -C "$cores" -c default \
               >"$csv" 2>"${csv%.csv}.err" ;;
  esac || log "$sys n=$n failed (see ${csv%.csv}.err)"
  find "$out/bymode" -name '*.err' -empty -delete
}

run_openmpi() {  # N CSV MAX TARGET: the anchor, then MPI_Reduce the same way
  mpi_openmpi "$1" "$abuild/build/mpi_coll_bench.openmpi" -H -t "$4" -e "$3" -o "$ops" \
    -C "$cores" -c default >"$2" 2>"${2%.csv}.err" &&
    mpi_openmpi "$1" "$abuild/build/mpi_reduce_bench.openmpi" -t "$4" -e "$3" -C "$cores" \
      -c default >>"$2" 2>>"${2%.csv}.err"
}

run_mpich() {  # N CSV MAX TARGET
  local n=$1 csv=$2 e=$3 t=$4
  (( n > cores )) && { [[ $e == 16 ]] || e=16M; t=0.05; }
  timeout --kill-after=10 900 mpirun.mpich -iface lo -np "$n" \
    "$abuild/build/mpi_coll_bench.mpich" -H -t "$t" -e "$e" -o "$ops" -C "$cores" \
    -c default >"$csv" 2>"${csv%.csv}.err" &&
    timeout --kill-after=10 900 mpirun.mpich -iface lo -np "$n" \
      "$abuild/build/mpi_reduce_bench.mpich" -t "$t" -e "$e" -C "$cores" \
      -c default >>"$csv" 2>>"${csv%.csv}.err"
}

run_gloo() {  # N CSV MAX TARGET
  GLOO_SOCKET_IFNAME=lo timeout --kill-after=10 900 $PY "$anchors/torch_gloo_bench.py" \
    -n "$1" -H -t "$4" -e "$3" -o "$ops" --cores "$cores" --config tcp-lo \
    >"$2" 2>"${2%.csv}.err"
}

step() {  # RUN N SYSTEM [SMALL_ROUND]: the whole sweep, or 8 and 16 B only into OUT/small
  local dir="$out/run$1" n=$2 sys=$3 e="$maxb" tag=()
  local csv="$dir/${sys}_n$n.csv"
  if [[ -n "${4:-}" ]]; then
    dir="$out/small"; e=16; csv="$dir/${sys}_n${n}_run$1_round$4.csv"; tag=(tag_mode "$csv")
    log "run $1, small round $4: $sys, $n ranks"
  else
    wait_quiet; log "run $1: $sys, $n ranks (load $(cut -d' ' -f1 /proc/loadavg))"
  fi
  "${tag[@]}" "run_$sys" "$n" "$csv" "$e" "$target" || log "$sys n=$n failed (see ${csv%.csv}.err)"
  find "$dir" -name '*.err' -empty -delete
}

IFS=, read -r -a sys_arr <<<"$systems"; IFS=, read -r -a n_arr <<<"$ranks_list"
for ((r = 1; r <= runs; r++)); do
  mkdir -p "$out/run$r"
  for n in "${n_arr[@]}"; do
    k=${#sys_arr[@]}
    for ((i = 0; i < k; i++)); do step "$r" "$n" "${sys_arr[$(((i + r - 1) % k))]}"; done
    mkdir -p "$out/small"
    for ((j = 1; j <= small_rounds; j++)); do
      for ((i = 0; i < k; i++)); do
        sys=${sys_arr[$(((i + r + j - 1) % k))]}
        [[ $sys == gloo ]] || step "$r" "$n" "$sys" "$j"  # gloo: no target at 8 B
      done
    done
    mkdir -p "$out/bymode"
    for ((j = 1; j <= mode_rounds; j++)); do
      for ((i = 0; i < k; i++)); do
        sys=${sys_arr[$(((i + r + j - 1) % k))]}
        [[ $sys == weft || $sys == openmpi ]] && mode_round "$r" "$n" "$sys" "$j"
      done
    done
  done
  $PY "$anchors/summarize.py" "$out/run$r" >/dev/null
  rm -f "$out/run$r/SUMMARY.md"  # the mean-based one; SUMMARY_median.md is the one to read
done
echo "loadavg at end: $(cat /proc/loadavg)" >>"$out/meta.txt"
$PY "$here/shm_compare_table.py" "$out" | tee "$out/COMPARE.md"
$PY "$here/plot_busbw.py" "$out" -o "$out/plots" --exclude gloo-native >/dev/null 2>&1 ||
  log "no plots (python3-matplotlib missing?)"
grep -l ',FAIL$' "$out"/run*/*.csv >/dev/null 2>&1 && { log "CHECK FAILED rows"; exit 1; }
log "results: $out"

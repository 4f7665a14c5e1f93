#!/usr/bin/env bash
# collectives_compare.sh — weft's collectives next to Open MPI (TCP and shared memory) and torch
# gloo, measured in the same run, interleaved, with the anchors' sizes and adaptive timing.
#
# Builds weft-bench and weftrun (CMake, -j2) and the Open MPI anchor (a copy of
# shared/anchors/build.sh and its sources, built inside the build directory), then, -r times,
# for each rank count in -N, one step per system (order rotated each run):
#   weft      tcp-lo       weftrun -n N weft-bench OPS --csv --target-seconds T --config tcp-lo
#                          (WEFT_TRANSPORT=tcp WEFT_SOCKET_IFNAME=lo; the check is on)
#   tcp       ob1-tcp-lo   Open MPI, pml ob1, btl self,tcp, btl_tcp_if_include lo  (compare)
#   gloo      tcp-lo       torch.distributed gloo, GLOO_SOCKET_IFNAME=lo           (compare)
#   shm       default      Open MPI default path (ob1 + vader shared memory, CMA)  (reference
#                          only: weft's own shared-memory path is measured by shm_compare.sh)
# Before each step it waits (bounded) for the 1-minute load average to drop below -l and
# records the load at the start and end of the step (timings.csv). All CSVs (anchors' schema)
# go to OUT/run<k>/, shared/anchors/summarize.py writes run<k>/SUMMARY.md and
# SUMMARY_median.md, and this script writes OUT/COMPARE.md: per op and rank count, the median
# over runs of each system's med_us (median timed batch) and busbw at 8 B, 64 KiB, 1 MiB,
# 16 MiB, 64 MiB, with the ratios weft/Open MPI tcp and weft/gloo (time; < 1: weft faster),
# and OUT/plots/busbw_<op>.png: busbw against size, weft beside the anchors (bench/plot_busbw.py;
# -S re-makes them too).
#
# Usage: bench/collectives_compare.sh [options]
#   -B DIR     build directory (default <repo>/build-perf)
#   -o DIR     results directory (default <repo>/bench/results/<YYYY-mm-dd_HHMM>)
#   -r N       runs of every (ranks, system) step, interleaved (default 1)
#   -N LIST    rank counts (default 2,4; 4 ranks on 2 cores is oversubscribed)
#   -s LIST    systems, from weft,tcp,gloo,shm (default all four)
#   -O LIST    weft-bench ops (default all_reduce,all_gather,broadcast,reduce_scatter,all_to_all)
#   -t SEC     target timed seconds per (op, size) (default 0.1)
#   -e BYTES   largest size (default 64M); sizes are 8 B, then 16 B x4 ... (the anchors')
#   -l LOAD    wait for the 1-min load average to drop below LOAD (default 1.5) ...
#   -w SEC     ... for at most SEC seconds before each step (default 90) ...
#   -W SEC     ... and at most SEC seconds of waiting in the whole run (default 600)
#   -n         no build: use the binaries already in the build directory
#   -S         measure nothing: re-make run*/SUMMARY*.md and COMPARE.md of the -o directory
# Anchors: ANCHORS=/path/to/shared/anchors (default <repo>/../shared/anchors).
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
anchors="${ANCHORS:-$(cd "$repo/../shared/anchors" 2>/dev/null && pwd)}"
PY=/usr/bin/python3
build="$repo/build-perf"
out=""
runs=1
ranks_list="2,4"
systems="weft,tcp,gloo,shm"
wops="all_reduce,all_gather,broadcast,reduce_scatter,all_to_all"
target=0.1
maxb=64M
max_load=1.5
step_wait=90
total_wait=600
do_build=1
summary_only=0

while getopts "B:o:r:N:s:O:t:e:l:w:W:nSh" opt; do
  case "$opt" in
    B) build="$OPTARG" ;;
    o) out="$OPTARG" ;;
    r) runs="$OPTARG" ;;
    N) ranks_list="$OPTARG" ;;
    s) systems="$OPTARG" ;;
    O) wops="$OPTARG" ;;
    t) target="$OPTARG" ;;
    e) maxb="$OPTARG" ;;
    l) max_load="$OPTARG" ;;
    w) step_wait="$OPTARG" ;;
    W) total_wait="$OPTARG" ;;
    n) do_build=0 ;;
    S) summary_only=1 ;;
    *) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
  esac
done

log() { echo "[collectives_compare $(date +%H:%M:%S)] $*" >&2; }
load1() { cut -d' ' -f1 /proc/loadavg; }
[[ -n "$anchors" && -f "$anchors/summarize.py" ]] || { log "shared/anchors not found (set ANCHORS=)"; exit 1; }
if (( summary_only )); then
  [[ -n "$out" && -d "$out" ]] || { log "-S needs -o DIR of an earlier run"; exit 2; }
  do_build=0; runs=0; systems=""
fi
out="${out:-$repo/bench/results/$(date +%Y-%m-%d_%H%M)}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cores="$(nproc)"
# the anchors' op names for the MPI and torch benches
aops="$(echo "$wops" | sed 's/all_reduce/allreduce/; s/all_gather/allgather/; s/all_to_all/alltoall/')"
T0=$(date +%s)

# --- build ------------------------------------------------------------------------------------
weftrun="$build/tools/weftrun/weftrun"
weftbench="$build/tools/weft-bench/weft-bench"
anchor_copy="$build/anchors"
mpibench="$anchor_copy/build/mpi_coll_bench.openmpi"
if (( do_build )); then
  blog="$out/build.log"
  log "building weft-bench and weftrun in $build (log: $blog)"
  { [[ -f "$build/CMakeCache.txt" ]] ||
      cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release -DWEFT_BUILD_TESTS=OFF \
        -DWEFT_BUILD_PYTHON=OFF; } >"$blog" 2>&1 &&
    cmake --build "$build" -j2 --target weft-bench weftrun >>"$blog" 2>&1 ||
    { tail -20 "$blog" >&2; log "weft build failed"; exit 1; }
  if [[ ",$systems," == *",tcp,"* || ",$systems," == *",shm,"* ]]; then
    command -v mpicc.openmpi >/dev/null ||
      { log "mpicc.openmpi missing: apt-get install -y openmpi-bin libopenmpi-dev"; exit 1; }
    # a copy, so that a concurrent build in shared/anchors cannot swap the binary under us
    mkdir -p "$anchor_copy"
    cp "$anchors"/build.sh "$anchors"/*.c "$anchors"/*.cc "$anchor_copy"/ 2>/dev/null
    "$anchor_copy/build.sh" >>"$blog" 2>&1 || { tail -20 "$blog" >&2; log "anchor build failed"; exit 1; }
  fi
fi
for f in "$weftrun" "$weftbench"; do
  [[ ",$systems," != *",weft,"* || -x "$f" ]] || { log "$f missing"; exit 1; }
done
[[ ",$systems," != *",tcp,"* && ",$systems," != *",shm,"* || -x "$mpibench" ]] ||
  { log "$mpibench missing"; exit 1; }

# --- meta -------------------------------------------------------------------------------------
(( summary_only )) || {
  echo "date:      $(date -Is)"
  echo "host:      $(uname -sr), $cores cores ($(lscpu | sed -n 's/^Model name: *//p')), $(free -g | awk '/Mem:/{print $2}') GiB"
  echo "weft:      $(git -C "$repo" rev-parse --short HEAD 2>/dev/null)$(git -C "$repo" diff --quiet HEAD -- src include tools 2>/dev/null || echo ' + uncommitted changes in src/include/tools') ($build)"
  echo "openmpi:   $(mpirun.openmpi --version 2>/dev/null | head -1)"
  echo "torch:     $($PY -c 'import torch; print(torch.__version__)' 2>/dev/null)"
  echo "loadavg at start: $(cat /proc/loadavg)"
  echo "busiest processes at start:"
  ps -eo pcpu,etime,comm --sort=-pcpu | sed -n '2,6p' | sed 's/^/    /'
  echo "target: $target s per (op,size); sizes 8 B, 16 B x4 ... $maxb; runs: $runs; ranks: $ranks_list"
  echo "load rule: wait up to ${step_wait}s per step (${total_wait}s in all) for load1 < $max_load"
} >"$out/meta.txt"

# --- running ----------------------------------------------------------------------------------
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OMPI_LO=(--mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)
waited=0
wait_quiet() {
  local i=0
  while ! awk -v l="$(load1)" -v m="$max_load" 'BEGIN { exit !(l < m) }'; do
    if (( i >= step_wait || waited >= total_wait )); then
      log "load still $(load1) (waited ${i}s here, ${waited}s in all): running anyway (LOADED)"
      return
    fi
    (( i == 0 )) && log "load $(load1) >= $max_load: waiting"
    sleep 5; i=$((i + 5)); waited=$((waited + 5))
  done
}

run_weft() {  # N CSV: two launches (8 B; then 16 B x4 ...) merged, as the anchors' size list
  local n=$1 csv=$2 err=$3 rc=0 part
  for part in "8 8 1" "16 $maxb 4"; do
    set -- $part
    WEFT_TRANSPORT=tcp WEFT_SOCKET_IFNAME=lo timeout --kill-after=10 900 \
      "$weftrun" --no-prefix -n "$n" "$weftbench" "$wops" -b "$1" -e "$2" -f "$3" -c 1 \
      --target-seconds "$target" --config tcp-lo --cores "$cores" --csv "$csv.$1" \
      >>"$err" 2>&1 || rc=$?
  done
  # the table is in the CSV: on success keep only other lines (warnings) in the log
  (( rc )) || { grep -v '^ *[#0-9]' "$err" >"$err.tmp"; mv "$err.tmp" "$err"; }
  # header + rows; at 4 ranks the block ops' "8 B" is 16 B and comes twice: keep the first
  awk -F, 'FNR == 1 { if (NR == 1) print; next } !seen[$6 "," $9]++' "$csv.8" "$csv.16" >"$csv" &&
    rm -f "$csv.8" "$csv.16"
  return $rc
}

step() {  # step RUN N SYSTEM
  local r=$1 n=$2 sys=$3 dir="$out/run$1" name csv l0 t0 rc=0 over=()
  (( n > cores )) && over=(--oversubscribe)
  case "$sys" in
    weft) name="weft_tcp-lo_n$n" ;;
    tcp) name="openmpi_tcp_n$n" ;;
    shm) name="openmpi_default_n$n" ;;
    gloo) name="torch-gloo_tcp-lo_n$n" ;;
    *) log "unknown system $sys"; exit 2 ;;
  esac
  csv="$dir/$name.csv"
  wait_quiet
  l0="$(load1)"
  log "run $r/$runs: $name (load $l0)"
  t0=$(date +%s)
  case "$sys" in
    weft) run_weft "$n" "$csv" "$dir/logs/$name.err" || rc=$? ;;
    tcp) timeout --kill-after=10 900 mpirun.openmpi -np "$n" "${over[@]}" "${OMPI_LO[@]}" \
           --mca pml ob1 --mca btl self,tcp "$mpibench" -H -t "$target" -e "$maxb" -o "$aops" \
           -C "$cores" -c ob1-tcp-lo >"$csv" 2>"$dir/logs/$name.err" || rc=$? ;;
    shm) timeout --kill-after=10 900 mpirun.openmpi -np "$n" "${over[@]}" "${OMPI_LO[@]}" \
           "$mpibench" -H -t "$target" -e "$maxb" -o "$aops" -C "$cores" -c default \
           >"$csv" 2>"$dir/logs/$name.err" || rc=$? ;;
    gloo) GLOO_SOCKET_IFNAME=lo timeout --kill-after=10 900 $PY "$anchors/torch_gloo_bench.py" \
            -n "$n" -H -t "$target" -e "$maxb" -o "$aops" --cores "$cores" --config tcp-lo \
            >"$csv" 2>"$dir/logs/$name.err" || rc=$? ;;
  esac
  echo "$name,$(($(date +%s) - t0)),$rc,$l0,$(load1)" >>"$dir/timings.csv"
  (( rc )) && log "$name exited $rc (see $dir/logs/$name.err)"
  return 0
}

IFS=, read -r -a sys_arr <<<"$systems"
IFS=, read -r -a n_arr <<<"$ranks_list"
for ((r = 1; r <= runs; r++)); do
  mkdir -p "$out/run$r/logs"
  echo "step,seconds,rc,load_start,load_end" >"$out/run$r/timings.csv"
  cp "$out/meta.txt" "$out/run$r/meta.txt"
  for n in "${n_arr[@]}"; do
    k=${#sys_arr[@]}
    for ((i = 0; i < k; i++)); do  # rotate the order each run, so no system always goes first
      step "$r" "$n" "${sys_arr[$(((i + r - 1) % k))]}"
    done
  done
  echo "loadavg at end of run $r: $(cat /proc/loadavg)" >>"$out/run$r/meta.txt"
  find "$out/run$r/logs" -type f -empty -delete
done
for d in "$out"/run*/; do $PY "$anchors/summarize.py" "$d" >/dev/null; done
(( summary_only )) || {
  echo "loadavg at end: $(cat /proc/loadavg)"
  echo "wall time: $(($(date +%s) - T0)) s (waiting for load: ${waited} s)"
} >>"$out/meta.txt"
status=0
if grep -l ',FAIL$' "$out"/run*/*.csv >/dev/null 2>&1; then
  log "CHECK FAILED rows:"; grep ',FAIL$' "$out"/run*/*.csv >&2; status=1
fi

# --- comparison: median over runs of med_us; ratios weft / Open MPI tcp, weft / gloo ----------
$PY - "$out" "$max_load" <<'EOF' | tee "$out/COMPARE.md"
import csv, glob, os, statistics, sys
out, max_load = sys.argv[1], float(sys.argv[2])
SIZES = [8, 64 << 10, 1 << 20, 16 << 20, 64 << 20]
OPS = ["allreduce", "allgather", "broadcast", "reduce_scatter", "alltoall"]
SYS = [("weft", "weft tcp"), ("openmpi/ob1-tcp-lo", "Open MPI tcp"), ("torch", "gloo"),
       ("openmpi/default", "Open MPI shm (ref.)")]
def sys_of(r):
    s = r["system"]
    if s.startswith("openmpi"): return "openmpi/" + r["config"]
    if s.startswith("torch"): return "torch"
    return s
def human(b):
    for unit, f in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= f and b % f == 0: return f"{b // f} {unit}"
    return f"{b} B"
def t(us):
    return "-" if us is None else (f"{us / 1000:.1f} ms" if us >= 10000 else f"{us:.0f} us" if us >= 100 else f"{us:.1f} us")
runs = sorted(glob.glob(os.path.join(out, "run*")))
data = {}   # (op, ranks, sys) -> {bytes: [rows over runs]}
loads = []
for d in runs:
    for f in glob.glob(os.path.join(d, "*.csv")):
        with open(f) as fh:
            if not fh.readline().startswith("system,config,ranks"): continue
            fh.seek(0)
            for r in csv.DictReader(fh):
                if r["op"] not in OPS: continue
                data.setdefault((r["op"], int(r["ranks"]), sys_of(r)), {}).setdefault(
                    int(r["bytes"]), []).append(r)
    tm = os.path.join(d, "timings.csv")
    if os.path.exists(tm):
        loads += [float(x["load_start"]) for x in csv.DictReader(open(tm))]
def pick(op, n, s, size):
    """median over runs of med_us for the smallest measured bytes >= size (anchors' rule)"""
    rows = data.get((op, n, s))
    if not rows: return None
    if any(x["check"] == "unsupported" for rs in rows.values() for x in rs): return "unsupported"
    cand = [b for b in rows if b >= size and rows[b][0]["med_us"]]
    if not cand: return None
    b = min(cand)
    med = statistics.median(float(x["med_us"]) for x in rows[b])
    # nccl-tests' busbw factors (the CSV's own busbw is rounded to 4 decimals)
    factor = 2 * (n - 1) / n if op == "allreduce" else 1.0 if op == "broadcast" else (n - 1) / n
    fails = sum(x["check"] == "FAIL" for x in rows[b])
    spread = [float(x["med_us"]) for x in rows[b]]
    return dict(bytes=b, us=med, busbw=b / med / 1e3 * factor, fails=fails,
                noisy=len(spread) > 1 and max(spread) > 1.5 * min(spread))
ranks = sorted({k[1] for k in data})
print(f"# weft collectives vs Open MPI (tcp, shm) and torch gloo -- {os.path.basename(out)}\n")
print(f"{len(runs)} run(s); cells: median over runs of each run's median timed batch (med_us); "
      "busbw in GB/s (nccl-tests factors). ratio = weft time / other time (< 1: weft faster). "
      "`(16 B)`: the block op's smallest size at 4 ranks. `*` = runs differ by > 1.5x. "
      "Open MPI shm is a reference only: weft has no shared-memory transport yet.\n")
if loads:
    quiet = sum(l < max_load for l in loads)
    print(f"1-min load at the start of the {len(loads)} steps: min {min(loads):.2f}, median "
          f"{statistics.median(loads):.2f}, max {max(loads):.2f}; {quiet} step(s) started below {max_load}"
          + ("" if quiet == len(loads) else " -- the others are LOADED-machine numbers") + "\n")
present = [(s, name) for s, name in SYS if any(k[2] == s for k in data)]
ratio_to = [(s, name) for s, name in present if s in ("openmpi/ob1-tcp-lo", "torch")]
for op in OPS:
    for n in ranks:
        if not any((op, n, s) in data for s, _ in present): continue
        print(f"## {op}, {n} ranks\n")
        head = "| size | " + " | ".join(f"{name} | busbw" for _, name in present) + " | " + \
            " | ".join(f"weft / {name}" for _, name in ratio_to) + " |"
        print(head)
        print("|" + "---|" * (head.count("|") - 1))
        for size in SIZES:
            cells = {s: pick(op, n, s, size) for s, _ in present}
            line = f"| {human(size)} |"
            for s, _ in present:
                c = cells[s]
                if c is None: line += " - | - |"
                elif c == "unsupported": line += " unsupported | - |"
                else:
                    note = f" ({human(c['bytes'])})" if c["bytes"] != size else ""
                    line += f" {'*' if c['noisy'] else ''}{t(c['us'])}{note}{' **FAIL**' if c['fails'] else ''} | {c['busbw']:.3g} |"
            w = cells.get("weft")
            for s, _ in ratio_to:
                o = cells[s]
                line += f" {w['us'] / o['us']:.2f}x |" if isinstance(w, dict) and isinstance(o, dict) else " - |"
            print(line)
        print()
# compact ratio table
print("## Ratios weft / Open MPI tcp and weft / gloo (time; < 1: weft faster)\n")
head = "| op | ranks | vs | " + " | ".join(human(s) for s in SIZES) + " |"
print(head); print("|" + "---|" * (head.count("|") - 1))
for op in OPS:
    for n in ranks:
        for s, name in ratio_to:
            line = f"| {op} | {n} | {name} |"
            for size in SIZES:
                w, o = pick(op, n, "weft", size), pick(op, n, s, size)
                line += f" {w['us'] / o['us']:.2f} |" if isinstance(w, dict) and isinstance(o, dict) else " - |"
            print(line)
EOF
# --- plots: weft beside the anchors, per op (bench/plot_busbw.py, median over runs) ------------
if $PY "$here/plot_busbw.py" "$out" -o "$out/plots" >"$out/plots.log" 2>&1; then
  rm -f "$out/plots.log"
else
  log "no plots: $(tail -1 "$out/plots.log") (python3-matplotlib missing?)"
fi
log "results: $out (COMPARE.md, run*/SUMMARY_median.md, plots/); total $(($(date +%s) - T0)) s"
exit "$status"

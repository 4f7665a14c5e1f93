#!/usr/bin/env bash
# pingpong_compare.sh — weft point-to-point latency/bandwidth next to Open MPI, same run.
# Over TCP loopback (weft tcp vs Open MPI tcp) and over shared memory (weft shm vs Open MPI
# vader, its shared-memory transport with CMA single copy).
#
# Builds weft-pingpong (CMake target, bench/pingpong) and mpi_pingpong (mpicc.openmpi, into the
# build directory), then runs, `-r` times each, in turn:
#   weft        tcp-lo      2 weft ranks started by this script, WEFT_TRANSPORT=tcp over 127.0.0.1
#   weft-spin0  tcp-lo-spin0  the same with WEFT_SPIN_US=0 (block at once, no spin-wait)
#   weft-shm    shm         2 weft ranks, WEFT_TRANSPORT=auto: shared memory (rings + process_vm_readv)
#   weft-shm-copy shm-copy  the same with WEFT_SHM_SINGLE_COPY=off (large messages copied through)
#   openmpi     ob1-tcp-lo  pml ob1, btl self,tcp on lo             (the TCP path to compare with)
#   openmpi     ob1-vader   pml ob1, btl self,vader (shared memory, CMA)
# and prints a table of the median (over the -r runs) of med_lat_us / med_bw_GBps per size,
# with weft tcp's ratio to Open MPI tcp and weft shm's to Open MPI vader (time: < 1 is faster). Raw rows: -o FILE.csv (one CSV, with a `run` column).
#
# Usage: bench/pingpong_compare.sh [options]
#   -B DIR     build directory (default <repo>/build-bench)
#   -o FILE    write every raw row to FILE (CSV), and plots of them to FILE's name without
#              .csv + _plots/ (busbw_pingpong.png, busbw_stream.png; bench/plot_busbw.py)
#   -r N       runs of each configuration, interleaved (default 2)
#   -z LIST    ping-pong sizes (default 8,64,1K,64K,1M,16M,64M)
#   -Z LIST    streaming sizes (default 64M; none to skip)
#   -w N       streaming window (default 8)
#   -t SEC     target timed seconds per (op, size) (default 0.5)
#   -s LIST    configurations to run, from weft,weft-spin0,weft-shm,weft-shm-copy,tcp,vader
#              (default all six)
#   -l LOAD    wait up to 60 s for the 1-min load average to drop below LOAD (default 0.7)
#   -n         no build: use the binaries already in the build directory
#
# CSV columns (both programs): system,config,ranks,op,bytes,iters,window,lat_us,med_lat_us,
#   min_lat_us,max_lat_us,bw_GBps,med_bw_GBps,check  (+ run,load1 added by this script)
#   pingpong: lat_us = mean round trip / 2; stream: lat_us = time per message of a window;
#   bw_GBps = bytes / lat_us (1e9 B/s; for point to point algbw = busbw); med_* = median batch.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
build="$repo/build-bench"
out=""
runs=2
sizes="8,64,1K,64K,1M,16M,64M"
stream_sizes="64M"
window=8
target=0.5
configs="weft,weft-spin0,weft-shm,weft-shm-copy,tcp,vader"
max_load=0.7
do_build=1

while getopts "B:o:r:z:Z:w:t:s:l:nh" opt; do
  case "$opt" in
    B) build="$OPTARG" ;;
    o) out="$OPTARG" ;;
    r) runs="$OPTARG" ;;
    z) sizes="$OPTARG" ;;
    Z) stream_sizes="$OPTARG" ;;
    w) window="$OPTARG" ;;
    t) target="$OPTARG" ;;
    s) configs="$OPTARG" ;;
    l) max_load="$OPTARG" ;;
    n) do_build=0 ;;
    *) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
  esac
done

log() { echo "[pingpong_compare] $*" >&2; }
load1() { cut -d' ' -f1 /proc/loadavg; }

mpi_dir="$build/pingpong-mpi"
weft_bin=""
mpi_bin="$mpi_dir/mpi_pingpong"

# --- build ------------------------------------------------------------------------------------
build_weft() {
  local blog="$build/pingpong-build.log"
  if [[ ! -f "$build/CMakeCache.txt" ]]; then
    cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release -DWEFT_BUILD_TESTS=OFF \
      -DWEFT_BUILD_EXAMPLES=OFF >"$blog" 2>&1 || { cat "$blog" >&2; return 1; }
  fi
  if cmake --build "$build" --target weft-pingpong -j2 >"$blog" 2>&1; then
    weft_bin="$(find "$build" -path "$build/pingpong-standalone" -prune -o -type f \
      -name weft-pingpong -perm -u+x -print | head -1)"
    return
  fi
  # The target is missing when bench/CMakeLists.txt does not add bench/pingpong (or returns
  # early without Google Benchmark): link the static library by hand instead.
  log "no CMake target weft-pingpong in $build (see $blog); compiling it against libweft.a"
  if ! cmake --build "$build" --target weft_static -j2 >"$blog" 2>&1; then
    [[ -f "$build/libweft.a" ]] || { tail -20 "$blog" >&2; return 1; }
    log "WARNING: weft_static does not build right now (see $blog); using the existing $build/libweft.a"
  fi
  mkdir -p "$build/pingpong-standalone"
  weft_bin="$build/pingpong-standalone/weft-pingpong"
  c++ -std=c++20 -O2 -DNDEBUG -I"$repo/include" -o "$weft_bin" "$here/pingpong/weft_pingpong.cc" \
    "$build/libweft.a" -pthread
}

if [[ ",$configs," == *",weft"* ]]; then
  if (( do_build )); then build_weft; else
    weft_bin="$(find "$build" -type f -name weft-pingpong -perm -u+x -print | head -1)"
  fi
  [[ -x "$weft_bin" ]] || { log "weft-pingpong not found under $build"; exit 1; }
  log "weft binary: $weft_bin"
fi
if [[ ",$configs," == *",tcp,"* || ",$configs," == *",vader,"* ]]; then
  command -v mpirun.openmpi >/dev/null || { log "mpirun.openmpi missing: apt-get install -y openmpi-bin libopenmpi-dev"; exit 1; }
  if (( do_build )); then
    mkdir -p "$mpi_dir"
    mpicc.openmpi -O2 -o "$mpi_bin" "$here/pingpong/mpi_pingpong.c"
  fi
  [[ -x "$mpi_bin" ]] || { log "$mpi_bin not found"; exit 1; }
fi

# --- running ----------------------------------------------------------------------------------
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
bench_args=(-z "$sizes" -Z "$stream_sizes" -w "$window" -t "$target")
tmp="$(mktemp -d /tmp/pingpong_compare.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
all="$tmp/all.csv"
: >"$all"

wait_quiet() {
  local i
  for ((i = 0; i < 60; i++)); do
    awk -v l="$(load1)" -v m="$max_load" 'BEGIN { exit !(l < m) }' && return 0
    sleep 1
  done
  log "load still $(load1) after 60 s; running anyway"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

run_weft() {  # $1 = csv out, $2 = config tag, rest = extra environment
  local csv="$1" tag="$2" port pid0 rc0 rc1
  shift 2
  port="$(free_port)"
  local env=(WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" WEFT_TRANSPORT=tcp
             WEFT_SOCKET_IFNAME=lo "$@")
  env "${env[@]}" RANK=0 timeout 600 "$weft_bin" -H -c "$tag" "${bench_args[@]}" >"$csv" \
    2>"$tmp/weft0.err" &
  pid0=$!
  env "${env[@]}" RANK=1 timeout 600 "$weft_bin" -c "$tag" "${bench_args[@]}" >/dev/null \
    2>"$tmp/weft1.err" && rc1=0 || rc1=$?
  wait "$pid0" && rc0=0 || rc0=$?
  if (( rc0 || rc1 )); then
    log "weft run failed (rank 0 rc=$rc0, rank 1 rc=$rc1)"; cat "$tmp"/weft*.err >&2; return 1
  fi
}

run_mpi() {  # $1 = csv out, $2 = config tag, rest = mca arguments
  local csv="$1" tag="$2"; shift 2
  timeout 600 mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 "$@" "$mpi_bin" -H \
    -c "$tag" "${bench_args[@]}" >"$csv" 2>"$tmp/mpi.err" || {
    log "Open MPI $tag run failed"; cat "$tmp/mpi.err" >&2; return 1; }
}

status=0
for ((r = 1; r <= runs; r++)); do
  for cfg in ${configs//,/ }; do
    wait_quiet
    l0="$(load1)"
    csv="$tmp/$cfg.$r.csv"
    log "run $r/$runs: $cfg (load $l0)"
    case "$cfg" in
      weft) run_weft "$csv" tcp-lo || status=1 ;;
      weft-spin0) run_weft "$csv" tcp-lo-spin0 WEFT_SPIN_US=0 || status=1 ;;
      weft-shm) run_weft "$csv" shm WEFT_TRANSPORT=auto || status=1 ;;
      weft-shm-copy) run_weft "$csv" shm-copy WEFT_TRANSPORT=auto WEFT_SHM_SINGLE_COPY=off || status=1 ;;
      tcp) run_mpi "$csv" ob1-tcp-lo --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo \
             --mca oob_tcp_if_include lo || status=1 ;;
      vader) run_mpi "$csv" ob1-vader --mca pml ob1 --mca btl self,vader \
               --mca oob_tcp_if_include lo || status=1 ;;
      *) log "unknown configuration $cfg"; exit 2 ;;
    esac
    [[ -s "$csv" ]] || continue
    [[ -s "$all" ]] || echo "$(head -1 "$csv"),run,load1" >"$all"
    tail -n +2 "$csv" | sed "s/\$/,$r,$l0/" >>"$all"
  done
done
log "load at the end: $(load1)"

if [[ -n "$out" ]]; then
  mkdir -p "$(dirname "$out")"
  cp "$all" "$out"
  log "raw rows: $out"
  # weft beside Open MPI: busbw (one-way GB/s) against size, per op (bench/plot_busbw.py).
  plots="${out%.csv}_plots"
  if /usr/bin/python3 "$here/plot_busbw.py" "$out" -o "$plots" >/dev/null 2>"$plots.log"; then
    rm -f "$plots.log"
    log "plots: $plots/"
  else
    log "no plots: $(tail -1 "$plots.log") (python3-matplotlib missing?)"
  fi
fi
if grep -q ',FAIL,' "$all"; then
  log "CHECK FAILED rows:"; grep ',FAIL,' "$all" >&2; status=1
fi

# --- table: median over runs of the per-run median batch ------------------------------------
python3 - "$all" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
cell = {}
for r in rows:
    key = (r["op"], int(r["bytes"]), r["system"].split("-")[0] + "/" + r["config"])
    cell.setdefault(key, []).append(r)
def med(key, col):
    rs = cell.get(key)
    return statistics.median(float(r[col]) for r in rs) if rs else None
def human(b):
    for unit, f in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= f and b % f == 0: return f"{b // f} {unit}"
    return f"{b} B"
systems = [("weft/tcp-lo", "weft tcp"), ("weft/tcp-lo-spin0", "weft tcp spin0"),
           ("weft/shm", "weft shm"), ("weft/shm-copy", "weft shm copy"),
           ("openmpi/ob1-tcp-lo", "Open MPI tcp"),
           ("openmpi/ob1-vader", "Open MPI vader")]
present = [s for s in systems if any(k[2] == s[0] for k in cell)]
ops = sorted({(k[0], k[1]) for k in cell}, key=lambda x: (x[0] != "pingpong", x[1]))
runs = {r["run"] for r in rows}
print(f"median over {len(runs)} run(s) of each run's median batch; lat = one-way us, bw = GB/s (1e9)")
head = "| op | bytes | " + " | ".join(f"{n} lat us | {n} GB/s" for _, n in present) + " |"
# weft over TCP against Open MPI over TCP, weft over shared memory against Open MPI's vader.
anchor_of = lambda s: "openmpi/ob1-vader" if s.startswith("weft/shm") else "openmpi/ob1-tcp-lo"
have = {s for s, _ in present}
ratios = [(s, n) for s, n in present if s.startswith("weft/") and anchor_of(s) in have]
for s, n in ratios: head += f" {n} / MPI {'vader' if 'shm' in s else 'tcp'} (time) |"
print(head)
print("|" + "---|" * (head.count("|") - 1))
for op, b in ops:
    line = f"| {op} | {human(b)} |"
    for s, _ in present:
        lat, bw = med((op, b, s), "med_lat_us"), med((op, b, s), "med_bw_GBps")
        line += " - | - |" if lat is None else f" {lat:.2f} | {bw:.3f} |"
    for s, _ in ratios:
        w, m = med((op, b, s), "med_lat_us"), med((op, b, anchor_of(s)), "med_lat_us")
        line += f" {w / m:.2f}x |" if w and m else " - |"
    print(line)
spread = []
for key, rs in cell.items():
    vals = [float(r["med_lat_us"]) for r in rs]
    if len(vals) > 1 and min(vals) > 0 and max(vals) / min(vals) > 1.5:
        spread.append(f"{key[2]} {key[0]} {human(key[1])}: runs {', '.join(f'{v:.1f}' for v in vals)} us")
if spread:
    print("\nnoisy cells (runs differ by > 1.5x):")
    for s in sorted(spread): print("  " + s)
EOF
exit "$status"

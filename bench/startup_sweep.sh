#!/usr/bin/env bash
# startup_sweep.sh — how long a job takes to start, meet and end against its world size: the
# wall time of `weftrun -n N weft-bench barrier` (spawn N processes, rendezvous through the
# store, one barrier, shut down), over shared memory and over TCP only, the median of ROUNDS
# runs per size. Prints a table and writes CSV (and a PNG when matplotlib is there) for
# docs/scaling.md.
#
# Usage: bench/startup_sweep.sh [-B BUILD] [-r ROUNDS] [-n "1 2 4 ..."] [-o OUT_PREFIX]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build"
rounds=3
sizes="1 2 4 8 16 32 64"
out=""
while getopts "B:r:n:o:" flag; do
  case "$flag" in
    B) build="$OPTARG" ;;
    r) rounds="$OPTARG" ;;
    n) sizes="$OPTARG" ;;
    o) out="$OPTARG" ;;
    *) echo "usage: $0 [-B BUILD] [-r ROUNDS] [-n SIZES] [-o OUT_PREFIX]" >&2; exit 2 ;;
  esac
done
weftrun="$build/tools/weftrun/weftrun"
bench="$build/tools/weft-bench/weft-bench"
for tool in "$weftrun" "$bench"; do
  [ -x "$tool" ] || { echo "startup_sweep: $tool is missing: build weft first" >&2; exit 2; }
done

# Milliseconds of one job of N ranks; fails the sweep if the job does.
job_ms() {
  local n=$1 transport=$2 start end
  start=$(date +%s%N)
  WEFT_TRANSPORT=$transport timeout 300 "$weftrun" -n "$n" --no-prefix "$bench" barrier \
    -b 0 -e 0 -w 0 -n 1 -c 0 >/dev/null
  end=$(date +%s%N)
  echo $(((end - start) / 1000000))
}

median() { tr ' ' '\n' | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

csv="ranks,transport,median_ms,runs_ms"
printf "%6s %10s %10s\n" ranks "shm (ms)" "tcp (ms)"
for n in $sizes; do
  row="$n"
  for transport in auto tcp; do
    runs=""
    for ((i = 0; i < rounds; i++)); do runs="$runs $(job_ms "$n" "$transport")"; done
    med=$(echo $runs | median)
    row="$row $med"
    csv="$csv"$'\n'"$n,$transport,$med,$(echo $runs | tr ' ' ';')"
  done
  printf "%6s %10s %10s\n" $row
done
[ -z "$out" ] && exit 0
echo "$csv" >"$out.csv"
# Debian's python3 has matplotlib (python3-matplotlib); a virtual environment's may not.
python=python3
/usr/bin/python3 -c "import matplotlib" 2>/dev/null && python=/usr/bin/python3
"$python" - "$out.csv" "$out.png" <<'PY' || echo "startup_sweep: no plot (python3 with matplotlib needed)"
import csv, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
rows = list(csv.DictReader(open(sys.argv[1])))
fig, ax = plt.subplots(figsize=(6, 3.5))
for transport, label in (("auto", "shared memory"), ("tcp", "TCP only")):
    pts = [(int(r["ranks"]), float(r["median_ms"])) for r in rows if r["transport"] == transport]
    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
ax.set_xscale("log", base=2)
ax.set_xlabel("ranks (one 2-core host)")
ax.set_ylabel("start, barrier, end (ms)")
ax.set_title("weftrun -n N weft-bench barrier")
ax.grid(True, alpha=0.3)
ax.legend()
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=80)
PY

#!/usr/bin/env bash
# torch_compare.sh — issue 6's targets, measured through torch.distributed: the "weft" backend
# against torch's gloo, back to back in one session (interleaved, RUNS times).
#   1. all_reduce (float32 sum, in place) at 8 B, 1 MiB and 64 MiB, 2 and 4 ranks, with
#      shared/anchors/torch_gloo_bench.py (--backend weft --import weft.torch);
#   2. a DistributedDataParallel training step (examples/python/ddp_digits.py: median step time),
#      a small MLP (9 k parameters, 10 KB buckets) and a larger one (1.1 M parameters, 1 MB
#      buckets), 2 and 4 ranks.
# Writes OUT/allreduce_<backend>_n<N>_r<run>.csv, OUT/ddp_*.json and prints OUT/TORCH.md: medians
# over runs and the speed-up weft / gloo against the targets (10x at 8 B and 1 MiB, 2x at
# 64 MiB, DDP faster); and OUT/plots/busbw_allreduce.png, weft beside gloo (bench/plot_busbw.py).
# Usage: bench/torch_compare.sh [-o OUT] [-r RUNS] [-t SECONDS] [-p PYTHON]
#   -p: the interpreter, and so the torch (default Debian's /usr/bin/python3 with torch 1.13;
#       .venv/bin/python for torch 2.x). Needs the build's weft.torch.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
anchors="${ANCHORS:-$(cd "$repo/../shared/anchors" 2>/dev/null && pwd)}"
PY=/usr/bin/python3
out="$repo/bench/results/torch_$(date +%Y-%m-%d_%H%M)"; runs=1; target=0.2
while getopts "o:r:t:p:h" opt; do
  case "$opt" in
    o) out="$OPTARG" ;; r) runs="$OPTARG" ;; t) target="$OPTARG" ;; p) PY="$OPTARG" ;;
    *) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
  esac
done
mkdir -p "$out"
export PYTHONPATH="$repo/build/python${PYTHONPATH:+:$PYTHONPATH}" GLOO_SOCKET_IFNAME=lo
log() { echo "[torch_compare $(date +%H:%M:%S)] $*" >&2; }
echo "date: $(date -Is); loadavg: $(cat /proc/loadavg); weft $(git -C "$repo" rev-parse --short HEAD); torch $("$PY" -c 'import torch; print(torch.__version__)')" >"$out/meta.txt"
for ((r = 1; r <= runs; r++)); do
  for n in 2 4; do
    for b in gloo weft; do
      log "run $r: all_reduce, $b, $n ranks"
      for s in 8 1M 64M; do
        csv="$out/allreduce_${b}_n${n}_r$r.csv"
        # The anchors' header once, at the top of each file (bench/plot_busbw.py reads it).
        $PY "$anchors/torch_gloo_bench.py" --backend "$b" --import weft.torch --world-size "$n" \
          -o allreduce -b "$s" -e "$s" -t "$target" --config "$b" -H 2>>"$out/errors.log" |
          if [[ -s "$csv" ]]; then sed 1d; else cat; fi >>"$csv"
      done
      for model in small large; do
        extra=(); [[ $model == large ]] && extra=(--hidden 1024 --bucket-cap-mb 1)
        log "run $r: DDP $model, $b, $n ranks"
        $PY "$repo/examples/python/ddp_digits.py" --world-size "$n" --backend "$b" --epochs 2 \
          --quiet "${extra[@]}" --json "$out/ddp_${model}_${b}_n${n}_r$r.json" \
          >>"$out/ddp.log" 2>&1 || log "DDP $model $b n=$n failed (see ddp.log)"
      done
    done
  done
done
$PY - "$out" <<'PYEOF' | tee "$out/TORCH.md"
import csv, glob, json, os, statistics, sys
out = sys.argv[1]
def us(backend, n, size):
    vals = []
    for f in glob.glob(os.path.join(out, f"allreduce_{backend}_n{n}_r*.csv")):
        for row in csv.reader(open(f)):
            if len(row) > 11 and row[5] == "allreduce" and int(row[8]) == size and row[11]:
                vals.append(float(row[11]))  # med_us
    return statistics.median(vals) if vals else None
def step(model, backend, n):
    vals = [json.load(open(f))["median_step_ms"]
            for f in glob.glob(os.path.join(out, f"ddp_{model}_{backend}_n{n}_r*.json"))]
    return statistics.median(vals) if vals else None
print("# weft's torch backend vs gloo\n")
print("| all_reduce float32 | ranks | gloo | weft | speed-up | target |")
print("|---|---|---|---|---|---|")
for size, name, need in ((8, "8 B", 10), (1 << 20, "1 MiB", 10), (64 << 20, "64 MiB", 2)):
    for n in (2, 4):
        g, w = us("gloo", n, size), us("weft", n, size)
        if g and w:
            print(f"| {name} | {n} | {g:.1f} us | {w:.1f} us | {g / w:.1f}x | {need}x: {'met' if g / w >= need else 'MISSED'} |")
print("\n| DDP step (median) | ranks | gloo ms | weft ms | speed-up |")
print("|---|---|---|---|---|")
for model, name in (("small", "MLP 64-64-64-10, 10 KB buckets"), ("large", "MLP 64-1024-1024-10, 1 MB buckets")):
    for n in (2, 4):
        g, w = step(model, "gloo", n), step(model, "weft", n)
        if g and w:
            print(f"| {name} | {n} | {g:.2f} | {w:.2f} | {g / w:.2f}x |")
PYEOF
# weft beside gloo: all_reduce busbw against size, 2 and 4 ranks (bench/plot_busbw.py).
if $PY "$here/plot_busbw.py" "$out" -o "$out/plots" --ops allreduce >/dev/null 2>"$out/plots.log"; then
  rm -f "$out/plots.log"
else
  log "no plots: $(tail -1 "$out/plots.log") (python3-matplotlib missing?)"
fi
log "results: $out"

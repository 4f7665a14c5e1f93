#!/usr/bin/env bash
# weft_bench_plot_test.sh WEFTRUN WEFT_BENCH BENCH_DIR -- the plots: weft-bench --plot and the
# comparison scripts' bench/plot_busbw.py. Skips (exit 77) when no Python has matplotlib.
#
#  1. weftrun -n 2 weft-bench all_reduce,all_gather,broadcast ... --plot A.png --csv A.csv:
#     exit 0, A.png a PNG of a plausible size, "# busbw plot:" after the table, no file left
#     behind in TMPDIR (the rows went to a temporary file)
#  2. the same with --json: the plot and the JSON file, which keeps every result
#  3. refusals before the run, exit 2 and no table rows: no such Python
#     (WEFT_BENCH_PYTHON=/nonexistent), a Python without matplotlib (python3 -S), no script
#     (WEFT_BENCH_PLOT_SCRIPT=/nonexistent)
#  4. bench/plot_busbw.py on run 1's CSV (the anchors' schema) and on the recorded
#     point-to-point results (bench/results/p2p_shm_*.csv): a PNG per op
set -u
weftrun=$1
bench=$2
bench_dir=$3
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
run_limit=$(scaled 120)  # each weftrun run's bound: 120 s, scaled in a sanitized build

python=""
for candidate in "${WEFT_BENCH_PYTHON:-}" python3 /usr/bin/python3; do
  [ -n "$candidate" ] || continue
  if "$candidate" -c 'import matplotlib' 2>/dev/null; then
    python=$candidate
    break
  fi
done
if [ -z "$python" ]; then
  echo "SKIP: no Python with matplotlib (Debian: apt-get install python3-matplotlib)"
  exit 77
fi

check_png() {  # FILE LABEL: a whole PNG of a sane size (>= 4 KB) whose pixels are not all alike
  "$python" - "$1" <<'PY' || fail "$2: $1 is not a plausible PNG"
import struct, sys, zlib
path = sys.argv[1]
data = open(path, "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "no PNG signature"
chunks, at = {}, 8
while at < len(data):
    length, kind = struct.unpack(">I4s", data[at:at + 8])
    chunks.setdefault(kind, []).append(data[at + 8:at + 8 + length])
    at += 12 + length
assert b"IHDR" in chunks and b"IEND" in chunks and b"IDAT" in chunks, sorted(chunks)
width, height = struct.unpack(">II", chunks[b"IHDR"][0][:8])
assert 200 <= width <= 10000 and 200 <= height <= 10000, (width, height)
assert len(data) >= 4096, f"only {len(data)} bytes"
pixels = zlib.decompress(b"".join(chunks[b"IDAT"]))
assert len(set(pixels)) > 3, "a blank image"
print(f"{path}: PNG {width}x{height}, {len(data)} bytes")
PY
}

export TMPDIR=$work/tmp
mkdir -p "$TMPDIR"
echo "=== 1: --plot with --csv"
timeout "$run_limit" "$weftrun" --no-prefix -n 2 "$bench" all_reduce,all_gather,broadcast -b 8 -e 1M -f 4 \
  -d float32,int32 -n 3 -w 1 --plot "$work/a.png" --csv "$work/a.csv" >"$work/a.out" 2>&1
rc=$?
cat "$work/a.out"
[ $rc -eq 0 ] || fail "1: exit code $rc"
[ -f "$work/a.png" ] && check_png "$work/a.png" 1 || fail "1: no PNG"
tail -1 "$work/a.out" | grep -qx "# busbw plot: $work/a.png" || fail "1: no '# busbw plot:' line last"
[ -z "$(ls -A "$TMPDIR")" ] || fail "1: left in TMPDIR: $(ls -A "$TMPDIR")"

echo "=== 2: --plot with --json"
timeout "$run_limit" "$weftrun" --no-prefix -n 2 "$bench" all_reduce -b 8 -e 64K -f 8 -n 2 -w 1 \
  --plot "$work/b.png" --json "$work/b.json" >"$work/b.out" 2>&1
rc=$?
[ $rc -eq 0 ] || { cat "$work/b.out"; fail "2: exit code $rc"; }
[ -f "$work/b.png" ] && check_png "$work/b.png" 2 || fail "2: no PNG"
# 8, 64, 512, 4K, 32K: 5 sizes, in and out of place
[ "$(grep -c '"type":"result"' "$work/b.json")" -eq 10 ] || fail "2: the JSON lost results"

refused() {  # LABEL EXPECTED-MESSAGE ENV...: weft-bench --plot refuses before the run
  local label=$1 message=$2
  shift 2
  echo "=== 3: $label"
  env "$@" timeout "$run_limit" "$weftrun" --no-prefix -n 2 "$bench" all_reduce -b 8 -e 8 -n 1 \
    --plot "$work/$label.png" >"$work/$label.out" 2>&1
  local rc=$?
  cat "$work/$label.out"
  [ $rc -eq 2 ] || fail "$label: exit code $rc, expected 2"
  grep -q -- "$message" "$work/$label.out" || fail "$label: no message '$message'"
  # A table row: size and count first, 13 fields.
  awk '/^ *[0-9]+ +[0-9]+ / && NF == 13' "$work/$label.out" | grep -q . &&
    fail "$label: it ran before refusing"
  [ ! -e "$work/$label.png" ] || fail "$label: a PNG anyway"
}
refused no_python "no Python with matplotlib" WEFT_BENCH_PYTHON=/nonexistent/python3
printf '#!/bin/sh\nexec %s -S "$@"\n' "$(command -v "$python")" >"$work/python-nosite"
chmod +x "$work/python-nosite"
if ! "$work/python-nosite" -c 'import matplotlib' 2>/dev/null; then
  refused no_matplotlib "matplotlib is missing" WEFT_BENCH_PYTHON="$work/python-nosite"
fi
refused no_script "WEFT_BENCH_PLOT_SCRIPT=/nonexistent/plot.py is not a file" \
  WEFT_BENCH_PLOT_SCRIPT=/nonexistent/plot.py

echo "=== 4: bench/plot_busbw.py"
"$python" "$bench_dir/plot_busbw.py" "$work/a.csv" -o "$work/anchors" || fail "4: plot_busbw.py on a.csv"
for op in allreduce allgather broadcast; do
  [ -f "$work/anchors/busbw_$op.png" ] && check_png "$work/anchors/busbw_$op.png" 4 ||
    fail "4: no busbw_$op.png"
done
p2p=$(ls "$bench_dir"/results/p2p_*.csv 2>/dev/null | head -1)
if [ -n "$p2p" ]; then
  "$python" "$bench_dir/plot_busbw.py" "$p2p" -o "$work/p2p" || fail "4: plot_busbw.py on $p2p"
  [ -f "$work/p2p/busbw_pingpong.png" ] || fail "4: no busbw_pingpong.png from $p2p"
fi

if [ "$failures" -ne 0 ]; then
  echo "weft_bench_plot_test: $failures failure(s)" >&2
  exit 1
fi
echo "weft_bench_plot_test: OK"

#!/usr/bin/env bash
# weft_bench_test.sh WEFTRUN WEFT_BENCH -- runs weft-bench under weftrun and checks its output.
#
#  1. every op, 2 ranks:  weft-bench all -b 8 -e 64K -f 8 -c 1 -n 2 -w 1  (+ --csv, --json)
#  2. every op, 3 ranks:  the same (3 ranks on 2 cores: oversubscribed, uneven blocks)
#  3. all_reduce, 2 ranks, every dtype x every reduce op, async (-a 1), with --json
#     (the combinations weft refuses are "skipped" lines)
#  4. a malformed setting (WEFT_SPIN_US=''): weft-bench fails before joining the group, says so
#     and names the setting
#  5. progress: all_reduce 8 B .. 64M (16M in a sanitized build); the first row is on stdout (through weftrun), in the
#     --json and in the --csv file while the run still has rows to go
# Runs 1-3 must exit 0 within 120 s (times WEFT_TEST_TIME_FACTOR: lib.sh); every table row must
# show #wrong 0 (or N/A where weft has no such form) in both placements; every op must have
# printed rows; the CSV and JSON files must be well formed, and every CSV row must say check=ok.
set -u
weftrun=$1
bench=$2
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
run_limit=$(scaled 120)  # each weftrun run's bound: 120 s, scaled in a sanitized build

# check_rows FILE LABEL [expected ops...]: the table rows of weft-bench's stdout.
check_rows() {
  local file=$1 label=$2
  shift 2
  # Data rows: 13 fields, not comments. Fields 9 and 13 are #wrong out of place and in place.
  local bad
  bad=$(awk '!/^#/ && NF == 13 { if (!(($9 == "0" || $9 == "N/A") && ($13 == "0" || $13 == "N/A")) || ($9 == "N/A" && $13 == "N/A" && $6 != "N/A")) print }' "$file")
  [ -z "$bad" ] || fail "$label: rows with wrong elements or no check:"$'\n'"$bad"
  local rows
  rows=$(awk '!/^#/ && NF == 13' "$file" | wc -l)
  [ "$rows" -gt 0 ] || fail "$label: no result rows"
  local stray
  stray=$(awk '!/^#/ && NF != 13 && NF > 0' "$file")
  [ -z "$stray" ] || fail "$label: lines that are neither comments nor rows:"$'\n'"$stray"
  grep -q '^# Rows with wrong elements: 0 OK' "$file" || fail "$label: no '0 OK' summary"
  grep -q '^# Avg bus bandwidth' "$file" || fail "$label: no average bus bandwidth"
  local op
  for op in "$@"; do
    # The op's table header, then at least one row before the next header.
    awk -v op="$op" '
      $0 == "# " op { inside = 1; next }
      inside && /^# [a-z_]+$/ { exit }
      inside && !/^#/ && NF == 13 { found = 1; exit }
      END { exit found ? 0 : 1 }' "$file" || fail "$label: no rows for $op"
  done
}

run() {  # LABEL RANKS ARGS... -- runs weft-bench, stdout to $work/LABEL.out
  local label=$1 ranks=$2
  shift 2
  echo "=== $label: weftrun -n $ranks weft-bench $*"
  timeout "$run_limit" "$weftrun" --no-prefix -n "$ranks" "$bench" "$@" >"$work/$label.out" 2>"$work/$label.err"
  local rc=$?
  cat "$work/$label.out"
  if [ -s "$work/$label.err" ]; then
    echo "--- stderr"
    cat "$work/$label.err"
  fi
  [ $rc -eq 0 ] || fail "$label: exit code $rc (124: timed out)"
}

all_ops="all_reduce all_gather broadcast reduce reduce_scatter all_to_all gather scatter barrier sendrecv"

for ranks in 2 3; do
  label="all_n$ranks"
  run "$label" "$ranks" all -b 8 -e 64K -f 8 -c 1 -n 2 -w 1 \
    --csv "$work/$label.csv" --json "$work/$label.json"
  # shellcheck disable=SC2086
  check_rows "$work/$label.out" "$label" $all_ops

  csv=$work/$label.csv
  head -1 "$csv" | grep -qx 'system,config,ranks,cores,oversub,op,dtype,count,bytes,iters,time_us,med_us,min_us,max_us,algbw_GBps,busbw_GBps,check' \
    || fail "$label: CSV header"
  awk -F, -v n="$ranks" 'NR > 1 && (NF != 17 || $1 != "weft" || $3 != n || $17 != "ok")' "$csv" | grep -q . \
    && fail "$label: CSV rows not ok:"$'\n'"$(awk -F, 'NR > 1 && $17 != "ok"' "$csv")"
  for op in allreduce allgather broadcast reduce_scatter alltoall barrier; do
    awk -F, -v op="$op" 'NR > 1 && $6 == op { found = 1 } END { exit found ? 0 : 1 }' "$csv" \
      || fail "$label: CSV has no $op row"
  done

  json=$work/$label.json
  head -1 "$json" | grep -q '^{"type":"settings"' || fail "$label: JSON settings line"
  grep -c '"type":"result"' "$json" | grep -qv '^0$' || fail "$label: no JSON results"
  if command -v python3 >/dev/null; then
    python3 - "$json" <<'PY' || fail "$label: JSON lines do not parse or show wrong elements"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
assert rows[0]["type"] == "settings"
# The keys, in order, that readers of these files rely on.
assert list(rows[0]) == [
    "type", "tool", "weft_version", "ranks", "cores", "ops", "dtypes", "redops", "min_bytes",
    "max_bytes", "step_factor", "step_bytes", "root", "iteration_mode", "warmup_iters", "iters",
    "target_seconds", "min_iters", "max_iters", "check", "async", "blocking", "algorithm",
    "segment_bytes", "premul_factor", "config", "rank_hosts"], list(rows[0])
# What the command line said: -b 8 -e 64K -f 8 -c 1 -n 2 -w 1.
settings = rows[0]
assert (settings["min_bytes"], settings["max_bytes"], settings["step_factor"]) == (8, 65536, 8)
assert (settings["iters"], settings["warmup_iters"], settings["check"]) == (2, 1, True)
assert settings["iteration_mode"] == "fixed" and settings["dtypes"] == ["float32"]
results = [r for r in rows if r["type"] == "result"]
assert results and all(r["wrong"] == 0 for r in results), "wrong elements"
result_keys = [
    "type", "op", "placement", "dtype", "redop", "root", "size", "count", "iters", "batches",
    "time_us", "med_us", "min_us", "max_us", "algbw_GBps", "busbw_GBps", "wrong"]
assert all(list(r) == result_keys for r in results), list(results[0])
assert all(r["redop"] is None for r in results if r["op"] == "all_gather")
PY
  fi
done

run dtypes_redops 2 all_reduce -d all -o all -b 8 -e 1K -f 16 -c 1 -n 2 -w 1 -a 1 \
  --json "$work/dtypes_redops.json"
check_rows "$work/dtypes_redops.out" dtypes_redops all_reduce
if command -v python3 >/dev/null; then
  python3 - "$work/dtypes_redops.json" <<'PY' || fail "dtypes_redops: JSON skipped lines"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
skipped = [r for r in rows if r["type"] == "skipped"]
assert skipped, "no skipped combination (float32 band, for one)"
assert all(list(r) == ["type", "op", "dtype", "redop", "reason"] for r in skipped), skipped[0]
assert {"float32", "bool"} <= {r["dtype"] for r in skipped}
PY
fi
for dtype in float32 float64 float16 bfloat16 int8 uint8 int16 int32 int64 bool; do
  awk -v t="$dtype" '!/^#/ && NF == 13 && $3 == t { found = 1 } END { exit found ? 0 : 1 }' \
    "$work/dtypes_redops.out" || fail "dtypes_redops: no rows for $dtype"
done

echo "=== malformed_setting: WEFT_SPIN_US='' weftrun -n 2 weft-bench all_reduce"
WEFT_SPIN_US='' timeout "$run_limit" "$weftrun" -n 2 "$bench" all_reduce -b 8 -e 8 -n 1 -w 0 \
  >"$work/malformed.out" 2>"$work/malformed.err"
rc=$?
cat "$work/malformed.err"
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "malformed_setting: exit code $rc, expected a failure"
grep -q "weft-bench: before joining the group: .*WEFT_SPIN_US='' is malformed" "$work/malformed.err" ||
  fail "malformed_setting: no message naming the setting"
grep -q "rank -1" "$work/malformed.err" && fail "malformed_setting: a rank of -1 in the message"

# Up to 64M: long enough that the rows come while the run goes on. A sanitized build is slow
# enough at 16M, and each size beyond it would cost it minutes.
largest=64M
[ "${WEFT_TEST_TIME_FACTOR:-1}" -gt 1 ] && largest=16M
echo "=== progress: weftrun -n 2 weft-bench all_reduce -b 8 -e $largest -f 2 -n 20 -c 0 --json --csv"
timeout "$run_limit" "$weftrun" --no-prefix -n 2 "$bench" all_reduce -b 8 -e "$largest" -f 2 -n 20 -w 1 -c 0 \
  --json "$work/progress.json" --csv "$work/progress.csv" >"$work/progress.out" 2>&1 &
pid=$!
rows_at_first=""
for _ in $(seq 1 $((20 * run_limit))); do  # up to run_limit s
  out_rows=$(awk '!/^#/ && NF == 13' "$work/progress.out" | wc -l)
  json_rows=$(grep -c '"type":"result"' "$work/progress.json" 2>/dev/null)
  csv_lines=1
  [ -f "$work/progress.csv" ] && csv_lines=$(wc -l <"$work/progress.csv")
  csv_rows=$((csv_lines - 1))
  if [ "$out_rows" -gt 0 ] && [ "${json_rows:-0}" -gt 0 ] && [ "$csv_rows" -gt 0 ]; then
    kill -0 "$pid" 2>/dev/null && rows_at_first=$out_rows
    break
  fi
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.05
done
wait "$pid"
rc=$?
cat "$work/progress.out"
[ $rc -eq 0 ] || fail "progress: exit code $rc"
total=$(awk '!/^#/ && NF == 13' "$work/progress.out" | wc -l)
if [ -z "$rows_at_first" ]; then
  fail "progress: no row on stdout, in the JSON and in the CSV before the run ended"
elif [ "$rows_at_first" -ge "$total" ]; then
  fail "progress: the first row showed up with all $total rows (buffered until the end?)"
else
  echo "progress: first rows seen while running ($rows_at_first of $total)"
fi

if [ "$failures" -ne 0 ]; then
  echo "weft_bench_test: $failures failure(s)" >&2
  exit 1
fi
echo "weft_bench_test: OK"

#!/usr/bin/env bash
# weft_bench_options_test.sh WEFT_BENCH -- weft-bench's command line, without a job: the flags
# are read before weft-bench joins a group, so a bad one fails alone, and a pair of good ones
# that contradict each other (-e below -b) shows in its message what weft-bench read.
#
# Every refusal must exit 2 with one line on stderr that names the flag and the value, and
# nothing on stdout; --help must exit 0 with the usage on stdout.
set -u
bench=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# refused "TEXT..." -- ARGS...: weft-bench ARGS exits 2 with one stderr line holding every TEXT.
refused() {
  local expected=()
  while [ "$1" != "--" ]; do
    expected+=("$1")
    shift
  done
  shift
  env -u RANK timeout "$(scaled 20)" "$bench" "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  echo "weft-bench $* -> $rc: $(cat "$work/err")"
  [ $rc -eq 2 ] || fail "weft-bench $*: exit code $rc, expected 2"
  [ "$(wc -l <"$work/err")" -eq 1 ] || fail "weft-bench $*: not one line on stderr"
  [ -s "$work/out" ] && fail "weft-bench $*: wrote to stdout"
  local text
  for text in "${expected[@]}"; do
    grep -qF -- "$text" "$work/err" || fail "weft-bench $*: stderr does not say '$text'"
  done
}

# Bad values name the flag and the value.
refused "--minbytes" "64X" -- -b 64X
refused "--maxbytes" "1.5.M" -- -e 1.5.M
refused "--stepbytes" "-1" -- -i -1
refused "--segment-bytes" "12Q" -- --segment-bytes=12Q
refused "--iters" "0" -- -n 0
refused "--iters" "decimal" "'012'" -- -n 012
refused "--check" "decimal" "'0x1'" -- -c 0x1
refused "--warmup_iters" "x" -- --warmup-iters x
refused "--async" "2" -- -a 2
refused "--target-seconds" "-1" -- --target-seconds -1
refused "-d" "float99" -- -d float32,float99
refused "-o" "mean" -- -o sum,mean
refused "unknown op 'all_sum'" -- all_sum
refused "--frobnicate" -- --frobnicate
refused "broadcast" -- all_reduce broadcast
refused "--iters" -- -n

# What the sizes were read as: K/M/G are binary, KiB too; values glued, after =, or apart.
refused "-e (1024) is below -b (1048576)" -- -b 1M -e 1K
refused "-e (1024) is below -b (65536)" -- -b 64KiB -e 1k
refused "-e (4) is below -b (8)" -- -b8 -e4
refused "-e (4) is below -b (1073741824)" -- --minbytes=1G --maxbytes 4
# The last of a repeated flag wins.
refused "-e (16) is below -b (32)" -- -b 8 -e 16 -b 32
refused "--max-iters is below --min-iters" -- --min-iters 10 --max-iters 5

env -u RANK timeout "$(scaled 20)" "$bench" --help >"$work/out" 2>"$work/err"
rc=$?
[ $rc -eq 0 ] || fail "--help: exit code $rc"
head -1 "$work/out" | grep -q '^usage: weftrun -n N weft-bench' || fail "--help: no usage line"
for flag in --minbytes --maxbytes --stepfactor --datatype --warmup_iters --json --target-seconds; do
  grep -q -- "$flag" "$work/out" || fail "--help does not list $flag"
done
# Under a launcher only rank 0 speaks.
RANK=1 timeout "$(scaled 20)" "$bench" -h >"$work/out" 2>&1
[ -s "$work/out" ] && fail "-h on rank 1 printed something"

if [ "$failures" -ne 0 ]; then
  echo "weft_bench_options_test: $failures failure(s)" >&2
  exit 1
fi
echo "weft_bench_options_test: OK"

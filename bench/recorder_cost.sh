#!/usr/bin/env bash
# recorder_cost.sh — what weft's recorders cost an 8-byte all_reduce: weft-bench with the flight
# recorder on (the default), off (WEFT_FLIGHT_RECORDER=0), and with the timeline
# (WEFT_TRACE=DIR), the three in turn for ROUNDS rounds so that they see the same machine, at
# 1 rank (the recording alone) and 2 ranks. Prints each mode's fastest and median time per call
# (us, in-place and out-of-place pooled) for docs/observability.md.
#
# Usage: bench/recorder_cost.sh [-B BUILD] [-r ROUNDS]
set -euo pipefail
build="$(cd "$(dirname "$0")/.." && pwd)/build"
rounds=10
while getopts "B:r:" flag; do
  case "$flag" in
    B) build="$OPTARG" ;;
    r) rounds="$OPTARG" ;;
    *) echo "usage: $0 [-B BUILD] [-r ROUNDS]" >&2; exit 2 ;;
  esac
done
weftrun="$build/tools/weftrun/weftrun"
bench="$build/tools/weft-bench/weft-bench"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# The two times (out-of-place, in-place) of the 8-byte row rank 0 prints.
one_run() {
  local ranks="$1" iters="$2"
  "$weftrun" -n "$ranks" "$bench" all_reduce -b 8 -e 8 -n "$iters" -w 2000 -c 0 2>&1 |
    awk '/^\[rank 0\] +8 / { print $8; print $12 }'
}

for ranks in 1 2; do
  iters=$((ranks == 1 ? 200000 : 20000))
  for round in $(seq "$rounds"); do
    WEFT_FLIGHT_RECORDER=64 one_run "$ranks" "$iters" >>"$scratch/on_$ranks"
    WEFT_FLIGHT_RECORDER=0 one_run "$ranks" "$iters" >>"$scratch/off_$ranks"
    WEFT_TRACE="$scratch/trace$round" one_run "$ranks" "$iters" >>"$scratch/trace_$ranks"
    rm -rf "$scratch/trace$round"
  done
  for mode in on off trace; do
    sort -g "$scratch/${mode}_$ranks" |
      awk -v mode="$mode" -v ranks="$ranks" '{ t[NR] = $1 }
        END { printf "%d rank(s), %-5s fastest %.2f  median %.2f us (%d samples)\n",
              ranks, mode, t[1], t[int((NR + 1) / 2)], NR }'
  done
done

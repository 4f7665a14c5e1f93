#!/usr/bin/env bash
# ab_by_mode.sh — A/B of two or more weft-bench binaries (copies of builds to compare) at one
# size or a range, invocations alternating, each tagged by the host's vCPU mode as
# bench/small_by_mode.sh tags them (bench/vcpu_mode.sh, just before and just after; "mixed"
# when they differ).
# Prints, per mode and binary, the median med_us per op and how many invocations.
#
# Usage: bench/ab_by_mode.sh [-B BUILD] [-N RANKS] [-o OPS] [-b BYTES] [-e BYTES] [-r ROUNDS] BIN...
#   -B  build directory with weftrun (default build)   -N  ranks (default 2)
#   -o  weft-bench ops (default broadcast,reduce)      -b  bytes (default 8)
#   -e  largest size, x4 from -b (default: -b alone)
#   -r  rounds, each one invocation of every BIN (default 12)
# A BIN given as WEFTRUN:BIN runs under that weftrun: a build from before a change of the
# rendezvous needs its own. A BIN may be a script that sets WEFT_* and execs weft-bench.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$repo/build"; ranks=2; ops=broadcast,reduce; bytes=8; most=""; rounds=12
while getopts "B:N:o:b:e:r:h" opt; do
  case "$opt" in
    B) build="$OPTARG" ;; N) ranks="$OPTARG" ;; o) ops="$OPTARG" ;; b) bytes="$OPTARG" ;;
    e) most="$OPTARG" ;; r) rounds="$OPTARG" ;;
    *) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
(( $# >= 1 )) || { echo "name at least one weft-bench binary" >&2; exit 2; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
source "$repo/bench/vcpu_mode.sh"
vcpu_mode_build "$work" || exit 1
for r in $(seq "$rounds"); do
  i=0
  for arg in "$@"; do
    runner="$build/tools/weftrun/weftrun"; bin=$arg
    [[ $arg == *:* ]] && { runner=${arg%%:*}; bin=${arg#*:}; }
    before=$(vcpu_mode)
    timeout 300 "$runner" --no-prefix -n "$ranks" "$bin" "$ops" -b "$bytes" -e "${most:-$bytes}" \
      -f 4 -c 1 --target-seconds 0.05 --csv "$work/$i.$r.csv" >/dev/null 2>&1
    after=$(vcpu_mode)
    mode=$before; [[ $before == "$after" ]] || mode=mixed
    [[ -f "$work/$i.$r.csv" ]] && mv "$work/$i.$r.csv" "$work/$i.$r.$mode.csv"
    i=$((i + 1))
  done
done
/usr/bin/python3 - "$work" "$([[ -n $most && $most != "$bytes" ]] && echo 2 || echo 1)" "$@" <<'PY'
import collections, csv, glob, statistics, sys
work, sizes, bins = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
for mode in ["fast", "slow", "mixed"]:
    for i, name in enumerate(bins):
        times = collections.defaultdict(list)
        for path in glob.glob(f"{work}/{i}.*.{mode}.csv"):
            for row in csv.reader(open(path)):
                if len(row) >= 17 and row[0] != "system" and row[16] == "ok":
                    cell = row[5] if sizes == 1 else f"{row[5]}@{row[8]}"
                    times[cell].append(float(row[11]))
        cells = ", ".join(f"{op} {statistics.median(v):.3f} ({len(v)})" for op, v in times.items())
        print(f"{mode:6} {name}: {cells or '-'}")
PY

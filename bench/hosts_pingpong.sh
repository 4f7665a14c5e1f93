#!/usr/bin/env bash
# hosts_pingpong.sh — a small message between two simulated hosts: weft's point-to-point
# round trip beside the floor under it, a raw TCP ping-pong on the same link
# (bench/pingpong/raw_tcp_pingpong.c) with its receiver polling and with it sleeping in recv.
# Interleaved in the same run, median over the runs of each one's median batch.
#
# The hosts are two network namespaces joined by a veth pair (10.80.0.1 and 10.80.0.2, private
# to them; bench/two_hosts.sh), created here and removed on exit; -R shapes both ends with a tbf.
#
# Usage: bench/hosts_pingpong.sh [-B BUILD] [-z "8 64 1024 65536"] [-r RUNS] [-R RATE]
#   -B  build directory with weft-pingpong (default build)
#   -z  sizes in bytes (default "8 64 1024 65536")
#   -r  runs (default 5)
#   -R  a tbf rate for the link (default: unshaped)
# Prints one-way us per size: raw polled, raw sleeping, weft, and weft over the polled floor.
# Needs root; every command is bounded by timeout.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$repo/build"; sizes="8 64 1024 65536"; runs=5; rate=""
while getopts "B:z:r:R:h" opt; do
  case "$opt" in
    B) build="$OPTARG" ;; z) sizes="$OPTARG" ;; r) runs="$OPTARG" ;; R) rate="$OPTARG" ;;
    *) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
  esac
done
(( EUID == 0 )) || { echo "hosts_pingpong.sh: needs root (ip netns)" >&2; exit 2; }
pingpong=$(find "$build" -type f -name weft-pingpong -perm -u+x -print -quit)
[[ -x "$pingpong" ]] || { echo "build weft-pingpong in $build" >&2; exit 2; }

source "$repo/bench/two_hosts.sh"
work=$(mktemp -d)
trap 'two_hosts_down; rm -rf "$work"' EXIT
cc -O2 -o "$work/raw" "$repo/bench/pingpong/raw_tcp_pingpong.c" || exit 1
two_hosts_up "whp$$" 10.80.0
if [[ -n "$rate" ]]; then
  for ns in "${two_hosts[@]}"; do
    ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$rate" burst 1mbit latency 5ms || exit 1
  done
fi
in_ns() { local k=$1; shift; ip netns exec "${two_hosts[$k]}" "$@"; }
port=$((30000 + $$ % 20000))

raw() {  # raw MODE SIZE RUN: MODE polled or sleeping
  local poll=0; [[ $1 == polled ]] && poll=1
  in_ns 1 env POLL=$poll timeout 70 "$work/raw" -s "$port" >/dev/null 2>&1 &
  local server=$!
  in_ns 0 env POLL=$poll timeout 70 "$work/raw" -c 10.80.0.2 "$port" "$2" 20000 |
    awk -v m="$1" -v r="$3" '{print m "," $1 "," $2 "," r}' >>"$work/all.csv"
  wait "$server"; port=$((port + 1))
}

weft() {  # weft RUN: every size in one pair of ranks
  # The first size is measured twice and its first row dropped: it absorbs the connections'
  # set-up and the spin's first guesses, which the raw ping-pong's long warm-up hides.
  local k list=${sizes// /,}
  list="${list%%,*},$list"
  for k in 1 0; do
    in_ns $k env RANK=$k WORLD_SIZE=2 MASTER_ADDR=10.80.0.1 MASTER_PORT=$port \
      WEFT_SOCKET_IFNAME=eth0 timeout 300 "$pingpong" -z "$list" -Z none -t 0.3 \
      >"$work/weft_$k.csv" 2>"$work/weft_$k.err" &
  done
  wait
  awk -F, -v r="$1" '$4 == "pingpong" && seen++ {print "weft," $5 "," $9 "," r}' \
    "$work/weft_0.csv" >>"$work/all.csv"
  [[ -s "$work/weft_0.csv" ]] || echo "  (weft, run $1: $(tail -2 "$work/weft_0.err"))" >&2
  port=$((port + 1))
}

for run in $(seq "$runs"); do
  for size in $sizes; do raw polled "$size" "$run"; raw sleeping "$size" "$run"; done
  weft "$run"
done
/usr/bin/python3 - "$work/all.csv" "${rate:-unshaped}" <<'PY'
import collections, csv, statistics, sys
cells = collections.defaultdict(list)
for mode, size, us, run in csv.reader(open(sys.argv[1])):
    cells[(mode, int(size))].append(float(us))
print(f"\none-way us between two simulated hosts ({sys.argv[2]}), median over runs\n")
print("| bytes | raw, polled | raw, sleeping | weft | weft / polled |")
print("|---|---|---|---|---|")
for size in sorted({s for _, s in cells}):
    med = {m: statistics.median(cells[(m, size)]) for m in ("polled", "sleeping", "weft")
           if cells[(m, size)]}
    ratio = f"{med['weft'] / med['polled']:.2f}x" if "weft" in med and "polled" in med else "-"
    print(f"| {size} | " + " | ".join(f"{med[m]:.2f}" if m in med else "-"
                                    for m in ("polled", "sleeping", "weft")) + f" | {ratio} |")
PY

#!/usr/bin/env bash
# streams_compare.sh — WEFT_SOCKET_NSTREAMS side by side: two simulated hosts, one rank each,
# every collective from 1 MiB to 64 MiB on 1, 2, 4... connections per pair, interleaved in the
# same run, beside iperf3 on one stream and on as many as the most weft uses.
#
# The hosts are two network namespaces joined by a veth pair (10.79.0.1 and 10.79.0.2, private
# to them), created here and removed on exit. The link may be shaped two ways, on both ends:
#   -R RATE  a tbf of RATE for the whole link (a NIC of that speed), burst 1 ms of the rate (at
#            least 64 KiB), queue 5 ms: as the anchors' netns harness shapes its links
#   -F RATE  every TCP flow capped at RATE, the link not (a cloud that caps each flow, as AWS
#            does between instances): an htb of 64 classes of RATE each, a flow's class chosen
#            by bits 1-6 of its source port (u32 filters; this kernel has neither fq's maxrate
#            nor the flow classifier, and Linux gives connect() even ports), so two flows share
#            a cap now and then: 4 flows 1 time in 11
#
# Usage: bench/streams_compare.sh [-B BUILD] [-s "1 2 4"] [-o OPS] [-b MINBYTES] [-e MAXBYTES]
#                                 [-r RUNS] [-R RATE | -F RATE] [-t SECONDS]
#   -B  build directory with weft-bench (default build)
#   -s  connection counts to compare (default "1 2 4")
#   -o  weft-bench ops, comma-separated (default all_reduce,broadcast,all_gather)
#   -b/-e  sizes, by 4 (default 1M to 64M)
#   -r  runs; the table shows the median over them (default 3)
#   -t  weft-bench --target-seconds per size (default 0.2)
# Prints iperf3's figures, then med_us and busbw (GB/s) per op, size and connection count.
# Needs root; every command is bounded by timeout.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$repo/build"; counts="1 2 4"; ops=all_reduce,broadcast,all_gather
minb=1M; maxb=64M; runs=3; tbf=""; flowcap=""; target=0.2
while getopts "B:s:o:b:e:r:R:F:t:h" opt; do
  case "$opt" in
    B) build="$OPTARG" ;; s) counts="$OPTARG" ;; o) ops="$OPTARG" ;; b) minb="$OPTARG" ;;
    e) maxb="$OPTARG" ;; r) runs="$OPTARG" ;; R) tbf="$OPTARG" ;; F) flowcap="$OPTARG" ;;
    t) target="$OPTARG" ;;
    *) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
  esac
done
(( EUID == 0 )) || { echo "streams_compare.sh: needs root (ip netns)" >&2; exit 2; }
bench="$build/tools/weft-bench/weft-bench"
[[ -x "$bench" ]] || { echo "build weft-bench in $build" >&2; exit 2; }
command -v iperf3 >/dev/null || apt-get install -y iperf3 >/dev/null 2>&1 ||
  echo "streams_compare.sh: no iperf3 (apt-get install iperf3): its figures are left out" >&2

source "$repo/bench/two_hosts.sh"
work=$(mktemp -d)
trap 'two_hosts_down; rm -rf "$work"' EXIT
two_hosts_up "wsc$$" 10.79.0
ns=("${two_hosts[@]}")
for k in 0 1; do
  if [[ -n "$tbf" ]]; then
    burst=$(/usr/bin/python3 -c 'import re,sys
n, unit = re.fullmatch(r"([0-9.]+)([kmg]?)bit", sys.argv[1]).groups()
print(max(65536, int(float(n) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[unit] / 8 / 1000)))' "$tbf") ||
      exit 1
    ip netns exec "${ns[$k]}" tc qdisc add dev eth0 root tbf rate "$tbf" burst "$burst" latency 5ms ||
      exit 1
  elif [[ -n "$flowcap" ]]; then
    tcx() { ip netns exec "${ns[$k]}" tc "$@" 2>/dev/null; }
    tcx qdisc add dev eth0 root handle 1: htb r2q 100000 || exit 1
    for bucket in $(seq 0 63); do
      class=$(printf %x $((bucket + 1)))
      tcx class add dev eth0 parent 1: classid "1:$class" htb rate "$flowcap" burst 256k || exit 1
      tcx filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip sport "$((2 * bucket))" \
        0x007e flowid "1:$class" || exit 1
    done
  fi
done
most=0; for c in $counts; do (( c > most )) && most=$c; done
link="unshaped"; [[ -n "$tbf" ]] && link="tbf $tbf"; [[ -n "$flowcap" ]] && link="every flow capped at $flowcap"

echo "link: $link"
ip netns exec "${ns[1]}" timeout 60 iperf3 -s -1 -D >/dev/null 2>&1; sleep 0.3
for streams in 1 "$most"; do
  gbps=$(ip netns exec "${ns[0]}" timeout 30 iperf3 -c 10.79.0.2 -t 3 -P "$streams" -J 2>/dev/null |
    /usr/bin/python3 -c 'import json,sys; print("%.2f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9))' 2>/dev/null)
  echo "iperf3 -P $streams: ${gbps:-?} Gbit/s"
  ip netns exec "${ns[1]}" timeout 60 iperf3 -s -1 -D >/dev/null 2>&1; sleep 0.3
done

port=29700
IFS=, read -ra op_list <<<"$ops"
for run in $(seq "$runs"); do
  for op in "${op_list[@]}"; do
    for streams in $counts; do
      pids=()
      for k in 0 1; do
        ip netns exec "${ns[$k]}" env RANK=$k WORLD_SIZE=2 MASTER_ADDR=10.79.0.1 MASTER_PORT=$port \
          WEFT_SOCKET_IFNAME=eth0 WEFT_SOCKET_NSTREAMS="$streams" timeout 300 "$bench" "$op" \
          -b "$minb" -e "$maxb" -f 4 -c 0 --target-seconds "$target" \
          --csv "$work/${op}_${streams}_${run}_$k.csv" >/dev/null 2>"$work/${op}_${streams}_${run}_$k.err" &
        pids+=($!)
      done
      for k in 0 1; do
        wait "${pids[$k]}" ||
          echo "  ($op on $streams, run $run, rank $k failed: $(tail -2 "$work/${op}_${streams}_${run}_$k.err"))" >&2
      done
      port=$((port + 1))
    done
  done
done
/usr/bin/python3 - "$work" "$counts" <<'PY'
import csv, glob, os, statistics, sys
work, counts = sys.argv[1], sys.argv[2].split()
cells = {}
for path in glob.glob(os.path.join(work, "*_0.csv")):
    streams = os.path.basename(path).split("_")[-3]
    for row in csv.DictReader(open(path)):
        key = (row["op"], int(row["bytes"]))
        cells.setdefault(key, {}).setdefault(streams, []).append(
            (float(row["med_us"]), float(row["busbw_GBps"])))
print("\nmed_us / busbw GB/s, median over runs, per connections per pair\n")
print("| op | bytes | " + " | ".join(f"{c} conn." for c in counts) + " |")
print("|---|---|" + "---|" * len(counts))
for (op, size) in sorted(cells):
    shown = []
    for c in counts:
        runs = cells[(op, size)].get(c)
        if not runs:
            shown.append("-")
            continue
        us = statistics.median(r[0] for r in runs)
        bw = statistics.median(r[1] for r in runs)
        shown.append(f"{us:.0f} us / {bw:.2f}")
    print(f"| {op} | {size} | " + " | ".join(shown) + " |")
PY

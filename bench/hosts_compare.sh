#!/usr/bin/env bash
# hosts_compare.sh — algorithms side by side on two simulated hosts with several ranks each:
# the hierarchical algorithm, flat ones, and the selector's own choice ("auto"), measured in
# the same run, interleaved. Shows whether the cost model picks the faster one for a group that
# spreads over hosts (docs/PERFORMANCE.md, "Across hosts").
#
# The hosts are two network namespaces joined by a veth pair (10.78.0.1 and 10.78.0.2, private
# to them; optionally shaped with tbf), created here and removed on exit. One weftrun starts
# the job on both (`--hosts 10.78.0.1:K,10.78.0.2:K`, a remote shell that enters the
# namespace), so ranks of one host talk through shared memory and hosts through TCP.
#
# Usage: bench/hosts_compare.sh [-B BUILD] [-k RANKS_PER_HOST] [-o OPS] [-a ALGOS]
#                               [-b MINBYTES] [-e MAXBYTES] [-r RUNS] [-R RATE]
#   -B  build directory with weftrun and weft-bench (default build)
#   -k  ranks per host (default 2)
#   -o  weft-bench ops (default all_reduce)
#   -a  algorithms, comma-separated; "auto" is the selector's choice (default
#       auto,hierarchical,ring,recursive_doubling)
#   -b/-e  sizes, doubling by 16 (default 8 to 64M)
#   -r  runs; the table shows the median over them (default 3)
#   -R  tbf rate on both ends of the link (e.g. 10gbit; default none)
# Prints a table of med_us per op, size and algorithm (the fastest in bold), then what the
# selector's model predicts and picks for this shape (weft-model --per-host). Needs root.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$repo/build"; per_host=2; ops=all_reduce; algos=auto,hierarchical,ring,recursive_doubling
minb=8; maxb=64M; runs=3; rate=none
while getopts "B:k:o:a:b:e:r:R:h" opt; do
  case "$opt" in
    B) build="$OPTARG" ;; k) per_host="$OPTARG" ;; o) ops="$OPTARG" ;; a) algos="$OPTARG" ;;
    b) minb="$OPTARG" ;; e) maxb="$OPTARG" ;; r) runs="$OPTARG" ;; R) rate="$OPTARG" ;;
    *) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
  esac
done
(( EUID == 0 )) || { echo "hosts_compare.sh: needs root (ip netns)" >&2; exit 2; }
weftrun="$build/tools/weftrun/weftrun"; bench="$build/tools/weft-bench/weft-bench"
[[ -x "$weftrun" && -x "$bench" ]] || { echo "build weftrun and weft-bench in $build" >&2; exit 2; }

source "$repo/bench/two_hosts.sh"
work=$(mktemp -d)
trap 'two_hosts_down; rm -rf "$work"' EXIT
two_hosts_up "whc$$" 10.78.0
ns0=${two_hosts[0]}; ns1=${two_hosts[1]}
for k in 0 1; do
  ns=$([[ $k == 0 ]] && echo "$ns0" || echo "$ns1")
  if [[ "$rate" != none ]]; then
    ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$rate" burst 1mbit latency 5ms || exit 1
  fi
done
cat >"$work/rsh" <<EOF
#!/bin/sh
case "\$1" in
  10.78.0.1) ns=$ns0 ;;
  10.78.0.2) ns=$ns1 ;;
  *) echo "hosts_compare rsh: \$1: no such host" >&2; exit 255 ;;
esac
exec 3<&0
ip netns exec "\$ns" setsid sh -c "\$2" <&3 3<&- &
wait \$!
EOF
chmod +x "$work/rsh"

IFS=, read -ra algo_list <<<"$algos"
for run in $(seq "$runs"); do
  for algo in "${algo_list[@]}"; do
    flag=(); [[ "$algo" != auto ]] && flag=(--algo "$algo")
    csv="$work/${algo}_$run.csv"
    timeout 600 "$weftrun" --hosts "10.78.0.1:$per_host,10.78.0.2:$per_host" --rsh "$work/rsh" \
      --master-addr 10.78.0.1 -x WEFT_SOCKET_IFNAME=eth0 "$bench" "$ops" -b "$minb" -e "$maxb" \
      -f 16 --target-seconds 0.2 "${flag[@]}" --csv "$csv" >"$work/${algo}_$run.log" 2>&1 ||
      echo "  ($algo, run $run: failed; $(tail -1 "$work/${algo}_$run.log"))" >&2
  done
done
/usr/bin/python3 - "$work" "$algos" "$per_host" "$rate" <<'PY'
import csv, glob, os, statistics, sys
work, algos, per_host, rate = sys.argv[1], sys.argv[2].split(","), sys.argv[3], sys.argv[4]
cells = {}
for algo in algos:
    for path in glob.glob(os.path.join(work, f"{algo}_*.csv")):
        for row in csv.DictReader(open(path)):
            key = (row["op"], int(row["bytes"]))
            cells.setdefault(key, {}).setdefault(algo, []).append(float(row["med_us"]))
print(f"2 hosts x {per_host} ranks, link {rate}: med_us (median over runs); fastest in bold\n")
print("| op | bytes | " + " | ".join(algos) + " |")
print("|---|---|" + "---|" * len(algos))
for (op, size) in sorted(cells):
    medians = {a: statistics.median(v) for a, v in cells[(op, size)].items()}
    best = min(medians.values())
    shown = [(f"**{medians[a]:.1f}**" if medians[a] == best else f"{medians[a]:.1f}")
             if a in medians else "-" for a in algos]
    print(f"| {op} | {size} | " + " | ".join(shown) + " |")
PY
model="$build/tools/weft-model/weft-model"
if [[ -x "$model" ]]; then
  echo
  "$model" --per-host "$per_host" --ranks "$((2 * per_host))" --collective "$ops" \
    --sizes 8,128,2K,32K,512K,8M
fi

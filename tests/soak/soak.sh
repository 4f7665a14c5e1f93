#!/usr/bin/env bash
# A soak for as long as asked: runs seed after seed (alternating shared memory and TCP, and with
# --faults a kill and a stop every few seeds) until the time is up, and stops at the first
# failure, printing the command that replays it.
#
#   tests/soak/soak.sh [--seconds N] [--ranks N] [--seed S] [--steps N] [--faults]
#                      [--build DIR]
#
# Defaults: 300 s, 4 ranks, a seed from the clock, 1000 steps a seed, build directory build/.
set -u
here=$(cd "$(dirname "$0")" && pwd)
seconds=300 ranks=4 seed=$(( $(date +%s%N) % 1000000007 )) steps=1000 faults=0
build=$here/../../build
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) seconds=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --faults) faults=1; shift ;;
    *) echo "soak.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
weftrun=$build/tools/weftrun/weftrun
rank=$build/tests/soak/weft_soak_rank
for program in "$weftrun" "$rank"; do
  [ -x "$program" ] || { echo "soak.sh: $program is missing: build weftrun and weft_soak_rank" >&2; exit 2; }
done

runs=0 ops=0 bytes=0 injected=0
end=$((SECONDS + seconds))
echo "soak.sh: from seed $seed, $ranks ranks, $steps steps a seed, for ${seconds}s"
while ((SECONDS < end)); do
  transport=shm
  ((runs % 2 == 1)) && transport=tcp
  fault=none
  if ((faults && runs % 4 == 3)); then
    fault=kill
    ((runs % 8 == 7)) && fault=stop
  fi
  env_prefix=""
  [ "$transport" = tcp ] && env_prefix="WEFT_TRANSPORT=tcp "
  if [ "$fault" = none ]; then
    replay="${env_prefix}WEFT_TIMEOUT=60 $weftrun -n $ranks --timeout 600 $rank --seed $seed --steps $steps"
  else
    replay="${env_prefix}WEFT_TIMEOUT=3 $here/soak_job.sh $ranks 60 $rank --seed $seed --steps $steps --fault $fault"
  fi
  out=$(env $replay 2>&1)
  code=$?
  if ((code != 0)); then
    echo "$out" | grep -v 'flight rank=' | tail -n 40
    echo "soak.sh: FAILED at seed $seed (exit $code) after $runs good runs; replay with:"
    echo "  $replay"
    exit 1
  fi
  if [ "$fault" = none ]; then
    ops=$((ops + $(echo "$out" | sed -n 's/.*soak ok .* ops=\([0-9]*\) .*/\1/p' | awk '{s += $1} END {print s + 0}')))
    bytes=$((bytes + $(echo "$out" | sed -n 's/.*soak ok .* bytes=\([0-9]*\) .*/\1/p' | awk '{s += $1} END {print s + 0}')))
  else
    injected=$((injected + 1))
  fi
  runs=$((runs + 1))
  seed=$((seed + 1))
done
echo "soak.sh: $runs seeds passed ($injected with a fault injected), $ops ops, $bytes bytes over all ranks, 0 failures"

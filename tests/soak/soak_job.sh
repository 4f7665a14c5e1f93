#!/usr/bin/env bash
# Starts one soak job with a fault injected, without weftrun: weftrun stops every rank as soon
# as one dies, and the point here is to watch the survivors fail on their own. The ranks meet
# through a file store (nothing a victim could take down with it) and run
#   weft_soak_rank --fault kill|stop ...
# Passes when one rank reports the injection and every other rank reports a fault that names
# it, in time (the ranks check the kind, the name and the time themselves, soak_runner.cc).
# Every rank is gone when this script returns: survivors past the deadline and the stopped
# victim are killed.
#
#   soak_job.sh RANKS DEADLINE_SECONDS RANK_PROGRAM ARGS...
set -u
if [ $# -lt 3 ]; then
  echo "usage: soak_job.sh RANKS DEADLINE_SECONDS RANK_PROGRAM ARGS..." >&2
  exit 2
fi
ranks=$1 deadline=$2 program=$3
shift 3
dir=$(mktemp -d /tmp/weft-soak-job.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do
    kill -KILL "$pid" 2>/dev/null
  done
  wait 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for ((r = 0; r < ranks; r++)); do
  RANK=$r WORLD_SIZE=$ranks LOCAL_RANK=$r LOCAL_WORLD_SIZE=$ranks \
    WEFT_SOAK_INIT="file://$dir/store" "$program" "$@" >"$dir/out.$r" 2>"$dir/err.$r" &
  pids+=($!)
done

# Waits for the ranks that do not stop themselves; the victim is the one left.
end=$((SECONDS + deadline))
while ((SECONDS < end)); do
  running=0
  for pid in "${pids[@]}"; do
    state=$(ps -o state= -p "$pid" 2>/dev/null)
    [[ -n "$state" && "$state" != T* && "$state" != Z* ]] && running=$((running + 1))
  done
  ((running == 0)) && break
  sleep 0.2
done

status=0
injected=0
faulted=0
for ((r = 0; r < ranks; r++)); do
  sed "s/^/[rank $r] /" "$dir/out.$r"
  grep -q '^soak injecting' "$dir/out.$r" && injected=$((injected + 1))
  grep -q '^soak fault .*error=' "$dir/out.$r" && faulted=$((faulted + 1))
done
for ((r = 0; r < ranks; r++)); do
  pid=${pids[$r]}
  state=$(ps -o state= -p "$pid" 2>/dev/null)
  if grep -q '^soak injecting' "$dir/out.$r"; then
    continue  # the victim: killed, or stopped and killed by cleanup
  fi
  if [[ -n "$state" && "$state" != Z* ]]; then
    echo "soak_job: rank $r still running ${deadline}s after the start: a hang; the end of its stderr:" >&2
    tail -n 20 "$dir/err.$r" >&2
    status=1
    continue
  fi
  wait "$pid" 2>/dev/null
  code=$?
  if ((code != 0)); then
    echo "soak_job: rank $r exited with code $code; the end of its stderr:" >&2
    tail -n 20 "$dir/err.$r" >&2
    status=1
  fi
done
if ((injected != 1 || faulted != ranks - 1)); then
  echo "soak_job: expected 1 injection and $((ranks - 1)) survivors' faults, got $injected and $faulted" >&2
  status=1
fi
exit $status

#!/usr/bin/env bash
# Runs one example as NRANKS processes on this host, the way a launcher would: exports RANK,
# WORLD_SIZE, MASTER_ADDR and MASTER_PORT (rank 0 serves the store; WEFT_STORE_ADDR is
# unset) and starts every rank itself, so the test does not depend on weftrun.
#
#   run_example.sh EXECUTABLE NRANKS [ARGS...]
#
# Every rank runs under `timeout 60`. Prints each rank's output prefixed with its rank and
# exits non-zero when any rank fails (or times out). When the store's port was taken between
# choosing it and binding it, the whole run is retried on another port (up to 3 times).
set -u

if [[ $# -lt 2 ]]; then
  echo "usage: $0 EXECUTABLE NRANKS [ARGS...]" >&2
  exit 2
fi
exe=$1
nranks=$2
shift 2
if [[ ! -x $exe ]]; then
  echo "run_example: $exe is not an executable" >&2
  exit 2
fi
if ! [[ $nranks =~ ^[1-9][0-9]*$ ]]; then
  echo "run_example: NRANKS must be a positive integer, got '$nranks'" >&2
  exit 2
fi

rank_timeout=${WEFT_EXAMPLE_TIMEOUT:-60}
workdir=$(mktemp -d "${TMPDIR:-/tmp}/weft-example.XXXXXX")
pids=()

cleanup() {
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null; done
  rm -rf "$workdir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A port nobody listens on: ask the kernel for one, or probe random ones with /dev/tcp.
free_port() {
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()' && return 0
  fi
  local port tries
  for tries in $(seq 1 100); do
    port=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return 0
    fi
  done
  echo "run_example: found no free port" >&2
  return 1
}

# Runs all ranks once on port $1; 0 when every rank exits 0. Once a rank has failed, the
# others get $failure_grace seconds to notice (weft should fail them, naming the peer) before
# they are killed.
failure_grace=15
run_once() {
  local port=$1 rank status failed=0 kill_at=""
  shift
  local -A rank_of=()
  pids=()
  rm -f "$workdir"/rank*.status
  for ((rank = 0; rank < nranks; rank++)); do
    env -u WEFT_STORE_ADDR -u WEFT_USE_AGENT_STORE -u TORCHELASTIC_USE_AGENT_STORE \
      RANK=$rank WORLD_SIZE=$nranks LOCAL_RANK=$rank LOCAL_WORLD_SIZE=$nranks \
      MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      timeout -k 5 "$rank_timeout" "$exe" "$@" >"$workdir/rank$rank.out" 2>&1 &
    pids+=($!)
    rank_of[$!]=$rank
  done
  # Poll rather than `wait -n`: a rank that has already exited is no longer a job that
  # `wait -n` can name, but `wait PID` still returns its status.
  local running=("${pids[@]}") pid still
  while ((${#running[@]} > 0)); do
    still=()
    for pid in "${running[@]}"; do
      if kill -0 "$pid" 2>/dev/null; then still+=("$pid"); continue; fi
      wait "$pid"
      status=$?
      rank=${rank_of[$pid]}
      echo "$status" >"$workdir/rank$rank.status"
      if [[ $status -ne 0 && $failed -eq 0 ]]; then
        failed=1
        kill_at=$((SECONDS + failure_grace))
      fi
    done
    running=("${still[@]}")
    if [[ -n $kill_at && ${#running[@]} -gt 0 && $SECONDS -ge $kill_at ]]; then
      kill -TERM "${running[@]}" 2>/dev/null
      kill_at=""
    fi
    ((${#running[@]} > 0)) && sleep 0.1
  done
  pids=()
  return $failed
}

print_outputs() {
  local rank status
  for ((rank = 0; rank < nranks; rank++)); do
    status=$(cat "$workdir/rank$rank.status" 2>/dev/null || echo '?')
    sed "s/^/[rank $rank] /" "$workdir/rank$rank.out"
    case $status in
      0) ;;
      124) echo "run_example: rank $rank timed out after ${rank_timeout}s" ;;
      143) echo "run_example: rank $rank was killed ${failure_grace}s after another rank failed" ;;
      *) echo "run_example: rank $rank exited with status $status" ;;
    esac
  done
}

name=$(basename "$exe")
for attempt in 1 2 3; do
  port=$(free_port) || exit 1
  echo "run_example: $name with $nranks rank(s), store on 127.0.0.1:$port"
  if run_once "$port" "$@"; then
    print_outputs
    echo "run_example: $name with $nranks rank(s) passed"
    exit 0
  fi
  # Retry only when the store's port was taken under our feet.
  if grep -qiE 'address already in use|EADDRINUSE' "$workdir/rank0.out"; then
    echo "run_example: port $port was taken; retrying on another port"
    continue
  fi
  break
done
print_outputs
echo "run_example: $name with $nranks rank(s) FAILED"
exit 1

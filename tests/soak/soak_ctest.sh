#!/usr/bin/env bash
# The bounded soak that CTest runs (label soak): three seeds, one new every run (from the clock)
# and two fixed, over shared memory and TCP with 3 to 5 ranks, then one kill and one stop
# injected. Prints every seed and the command that replays each run; fails at the first run that
# fails. Each run is bounded (weftrun --timeout, soak_job.sh's deadline).
#
#   soak_ctest.sh WEFTRUN WEFT_SOAK_RANK
set -u
if [ $# -ne 2 ]; then
  echo "usage: soak_ctest.sh WEFTRUN WEFT_SOAK_RANK" >&2
  exit 2
fi
weftrun=$1 rank=$2
here=$(cd "$(dirname "$0")" && pwd)
fresh=$(( $(date +%s%N) % 1000000007 ))
echo "soak: seeds $fresh (new this run), 20261126 and 7 (fixed)"
status=0
run() {
  local started=$SECONDS
  echo "soak: running: $*"
  local out
  out=$(env "$@" 2>&1)
  local code=$?
  echo "$out" | grep -E '^(\[rank [0-9]+\] )?soak ' | sed 's/^/  /'
  if ((code != 0)); then
    echo "$out" | grep -v 'flight rank=' | grep -vE '^(\[rank [0-9]+\] )?soak ' | tail -n 30
    echo "soak: FAILED (exit $code); replay with the command above"
    status=1
  fi
  echo "soak: $((SECONDS - started)) s"
}
run WEFT_TIMEOUT=60 "$weftrun" -n 4 --timeout 120 "$rank" --seed "$fresh" --steps 400
run WEFT_TIMEOUT=60 WEFT_TRANSPORT=tcp "$weftrun" -n 3 --timeout 120 "$rank" --seed 20261126 --steps 400
run WEFT_TIMEOUT=60 WEFT_TRANSPORT=tcp "$weftrun" -n 5 --timeout 120 "$rank" --seed 7 --steps 300
run WEFT_TIMEOUT=3 "$here/soak_job.sh" 4 30 "$rank" --seed "$fresh" --steps 200 --fault kill
run WEFT_TIMEOUT=3 "$here/soak_job.sh" 3 30 "$rank" --seed "$fresh" --steps 200 --fault stop
# Once held the survivors 26 s past WEFT_TIMEOUT with an error that did not name the rank.
run WEFT_TIMEOUT=3 WEFT_TRANSPORT=tcp "$here/soak_job.sh" 3 30 "$rank" --seed 445868425 \
  --steps 200 --fault stop
if ((status == 0)); then
  echo "soak: every run passed"
fi
exit $status

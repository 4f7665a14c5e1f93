# What the weft-bench test scripts share: a scratch directory removed at exit, and fail(),
# which records a failure and lets the script go on to report every one (the script ends with
# `exit $((failures > 0))` or its own summary).
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

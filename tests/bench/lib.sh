# What the weft-bench test scripts share: a scratch directory removed at exit, fail(), which
# records a failure and lets the script go on to report every one (the script ends with
# `exit $((failures > 0))` or its own summary), and scaled().
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# scaled SECONDS: a script's own bound on a run, times WEFT_TEST_TIME_FACTOR, which CTest sets
# to the factor its own limits are scaled by in a sanitized build (tests/CMakeLists.txt; 1
# otherwise). These bounds only stop a run that hangs; weft-bench's speed is not what is tested.
scaled() {
  echo $(($1 * ${WEFT_TEST_TIME_FACTOR:-1}))
}

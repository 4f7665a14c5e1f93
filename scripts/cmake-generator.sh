# Sourced by the scripts that configure a build tree (build.sh, sanitize.sh,
# thread-safety-check.sh): which CMake generator a new tree gets.
#
# Ninja where it is installed (install-deps.sh's cpp group has it): it compiles a target's
# objects while the libraries it links are still being built, which Make does not, and on a few
# cores that keeps every core busy through the layers. A tree configured before keeps its own
# generator (CMake refuses to change it); WEFT_CMAKE_GENERATOR names another for new trees.
#   cmake_generator_args DIR   prints the -G argument for the tree DIR (nothing: CMake's default)
cmake_generator_args() {
  local tree=$1
  [ -f "$tree/CMakeCache.txt" ] && return 0
  if [ -n "${WEFT_CMAKE_GENERATOR:-}" ]; then
    printf '%s\n' -G "$WEFT_CMAKE_GENERATOR"
  elif command -v ninja >/dev/null; then
    printf '%s\n' -G Ninja
  fi
}

#!/usr/bin/env bash
# Checks that an installed weft can be used: installs it into a temporary prefix, then builds
# and runs a separate consumer project against it, once through CMake
# (find_package(weft) + weft::weft) and once through pkg-config; then uninstalls it and checks
# that nothing is left.
#
#   check_install.sh [BUILD_DIR]
#
# With BUILD_DIR (an already built weft build tree, as CTest passes), that tree is installed.
# Without it, the source tree this script lives in is configured and built into a temporary
# build directory first (that takes a few minutes on 2 cores).
# Environment: CMAKE (default cmake), CXX (default c++), JOBS (default 2),
# KEEP_TMP=1 keeps the temporary directory.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
cmake=${CMAKE:-cmake}
cxx=${CXX:-c++}
jobs=${JOBS:-2}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-install-check.XXXXXX")
cleanup() {
  local status=$?
  if [[ $status -ne 0 || ${KEEP_TMP:-0} == 1 ]]; then
    echo "check_install: kept $tmp for inspection"
  else
    rm -rf "$tmp"
  fi
}
trap cleanup EXIT

step() { echo; echo "=== check_install: $* ==="; }
fail() { echo "check_install: FAILED: $*" >&2; exit 1; }

# --- 1. a built tree --------------------------------------------------------------------------
if [[ $# -ge 1 ]]; then
  build_dir=$(cd "$1" && pwd)
  [[ -f $build_dir/cmake_install.cmake ]] || fail "$build_dir is not a configured CMake build tree"
  step "reusing the build tree $build_dir"
else
  build_dir=$tmp/build
  step "configuring and building $source_dir in $build_dir"
  "$cmake" -S "$source_dir" -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DWEFT_BUILD_TESTS=OFF -DWEFT_BUILD_EXAMPLES=OFF -DWEFT_BUILD_BENCHMARKS=OFF
  "$cmake" --build "$build_dir" -j "$jobs"
fi

# --- 2. install -------------------------------------------------------------------------------
prefix=$tmp/prefix
step "cmake --install $build_dir --prefix $prefix"
"$cmake" --install "$build_dir" --prefix "$prefix"

config=$(find "$prefix" -path '*/cmake/weft/weftConfig.cmake' | head -n 1)
pc=$(find "$prefix" -name weft.pc | head -n 1)
library=$(find "$prefix" -name 'libweft.so' | head -n 1)
[[ -f $prefix/include/weft/weft.h ]] || fail "no include/weft/weft.h under $prefix"
[[ -n $config ]] || fail "no lib*/cmake/weft/weftConfig.cmake under $prefix"
[[ -n $pc ]] || fail "no weft.pc under $prefix"
[[ -n $library ]] || fail "no libweft.so under $prefix"
libdir=$(dirname "$library")
echo "installed: $config"
echo "           $pc"
echo "           $library"

# Every installed header stands alone: it includes only installed headers.
step "every installed header compiles on its own"
for header in "$prefix"/include/weft/*.h; do
  name=weft/$(basename "$header")
  echo "#include <$name>" | "$cxx" -std=c++20 -fsyntax-only -x c++ -I"$prefix/include" - ||
    fail "$name does not compile on its own against $prefix/include"
done
echo "ok: $(ls "$prefix"/include/weft/*.h | wc -l) headers"

# --- 3. CMake consumer ------------------------------------------------------------------------
step "CMake consumer: find_package(weft) with CMAKE_PREFIX_PATH=$prefix"
"$cmake" -S "$here/consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release
"$cmake" --build "$tmp/consumer" -j "$jobs"
"$tmp/consumer/weft_consumer" || fail "the CMake consumer (shared library) failed"
if [[ -x $tmp/consumer/weft_consumer_static ]]; then
  "$tmp/consumer/weft_consumer_static" || fail "the CMake consumer (static library) failed"
fi

# --- 4. pkg-config consumer -------------------------------------------------------------------
step "pkg-config consumer: PKG_CONFIG_PATH=$(dirname "$pc")"
export PKG_CONFIG_PATH=$(dirname "$pc")
command -v pkg-config >/dev/null || fail "pkg-config is not installed"
pc_prefix=$(pkg-config --variable=prefix weft)
# A relocatable .pc says prefix=${pcfiledir}/../..: compare the directories, not the text.
if [[ $(realpath -m "$pc_prefix") != $(realpath -m "$prefix") ]]; then
  fail "weft.pc says prefix=$pc_prefix but weft was installed into $prefix: the .pc file is
configured with CMAKE_INSTALL_PREFIX at configure time, so it is wrong whenever the install
prefix is chosen at install time (cmake --install --prefix, DESTDIR packaging). Make it
relocatable: prefix=\${pcfiledir}/<path from lib/pkgconfig up to the prefix> in
cmake/weft.pc.in, with libdir and includedir under \${prefix}"
fi
flags=$(pkg-config --cflags --libs weft)
echo "pkg-config --cflags --libs weft: $flags"
# shellcheck disable=SC2086  # the flags are meant to split
"$cxx" -std=c++20 "$here/consumer/main.cc" $flags -o "$tmp/consumer_pkgconfig" ||
  fail "compiling the consumer with pkg-config's flags failed"
LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$tmp/consumer_pkgconfig" ||
  fail "the pkg-config consumer failed"

# --- 5. uninstall -----------------------------------------------------------------------------
step "uninstall: cmake --build $build_dir --target uninstall"
"$cmake" --build "$build_dir" --target uninstall
left=$(find "$prefix" -type f -o -type l -o -type d -name weft)
[[ -z $left ]] || fail "uninstall left behind:
$left"
echo "ok: nothing of weft is left under $prefix"

echo
echo "check_install: OK"

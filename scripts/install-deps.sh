#!/usr/bin/env bash
# Installs with apt-get what weft needs, when it is missing. Safe to run again: it installs
# nothing that is already there.
#
#   install-deps.sh [GROUP...]      (default: cpp)
#     cpp       the C++ library, weftrun and weft-bench: a compiler, CMake, Ninja, CLI11,
#               nlohmann-json, libcrypto (libssl-dev: HMAC-SHA256 for the job token's
#               challenge-responses)
#     python    the Python package weft (numpy arrays): Python headers, pybind11, numpy, venv
#     torch     the torch.distributed backend on Debian's torch 1.13, and the examples' data sets
#     tests     everything the test command runs: all of the above, GoogleTest, Google Benchmark,
#               pytest, iproute2 (the simulated hosts of the multi-host tests), matplotlib
#               (weft-bench --plot and the comparison scripts' plots), clang and its libFuzzer
#               (libclang-rt-14-dev: tests/fuzz), Open MPI's mpirun (openmpi-bin: a job it
#               launches, tests/multiproc/launchers_test.cc), clang-format (the formatting check
#               of .ci/run), libfabric-dev (the ofi path, built where it is found, and its tests
#               over libfabric's tcp provider)
set -euo pipefail

declare -A group_packages=(
  [cpp]="cmake g++ make ninja-build pkg-config libcli11-dev nlohmann-json3-dev libssl-dev"
  [python]="python3-dev pybind11-dev python3-numpy python3-setuptools python3-wheel python3-venv python3-pip"
  [torch]="python3-torch libtorch-dev python3-sklearn"
  [tests]="libgtest-dev libgmock-dev googletest libbenchmark-dev python3-pytest iproute2 python3-matplotlib clang libclang-rt-14-dev openmpi-bin clang-format libfabric-dev"
)
# What each group needs besides its own packages.
declare -A group_needs=([cpp]="" [python]="cpp" [torch]="python" [tests]="cpp python torch")

groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(cpp)
declare -A wanted=()
add_group() {
  local group=$1
  [ -n "${group_packages[$group]+set}" ] || {
    echo "install-deps.sh: unknown group '$group' (cpp, python, torch, tests)" >&2
    exit 2
  }
  [ -z "${wanted[$group]+set}" ] || return 0
  wanted[$group]=1
  local need
  for need in ${group_needs[$group]}; do add_group "$need"; done
}
for group in "${groups[@]}"; do add_group "$group"; done

missing=()
for group in "${!wanted[@]}"; do
  for package in ${group_packages[$group]}; do
    dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
  done
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "[weft] installing: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"

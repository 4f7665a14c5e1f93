#!/usr/bin/env bash
# Installs with apt-get what building and testing weft needs, when it is missing. Safe to run
# again: it installs nothing that is already there.
set -euo pipefail

packages=(cmake g++ make pkg-config libgtest-dev libgmock-dev googletest libbenchmark-dev
  python3-dev pybind11-dev python3-numpy python3-pytest python3-torch libtorch-dev python3-sklearn
  iproute2 libcli11-dev nlohmann-json3-dev)
missing=()
for package in "${packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
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

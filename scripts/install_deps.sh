#!/usr/bin/env bash
# Installs what scalebench builds with on Debian/Ubuntu: compiler, CMake, CLI11, nlohmann-json, GoogleTest,
# Open MPI. The CUDA toolkit (nvcc, cuBLAS, cuDNN, NCCL) is optional and not installed here: where it is
# present (/usr/local/cuda), the GPU backends are built; where not, scalebench builds for the CPU device.
set -euo pipefail
packages=(build-essential cmake libcli11-dev nlohmann-json3-dev libgtest-dev openmpi-bin libopenmpi-dev python3)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2> /dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" > /dev/null
fi
if [ -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc > /dev/null; then
  echo "note: add /usr/local/cuda/bin to PATH to build the GPU backends"
fi

#!/usr/bin/env bash
# Configures and builds scalebench into ./build (Release; CUDA for architecture 90 unless
# CMAKE_CUDA_ARCHITECTURES is set). Extra arguments go to cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="/usr/local/cuda/bin:$PATH"
# ccache, where installed, makes rebuilds of unchanged files free (it is optional: nothing installs it).
launcher=()
command -v ccache > /dev/null &&
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${CMAKE_CUDA_ARCHITECTURES:-90}" \
  "${launcher[@]}" "$@" \
  | grep -E "scalebench backends|Error|error" || true
cmake --build build -j "$(nproc)"

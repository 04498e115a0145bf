#!/usr/bin/env bash
# The test command (README.md; CI runs exactly this): install dependencies, build, run every ctest suite.
# Unit and end-to-end tests run anywhere; MPI tests run 2 and 4 ranks on the CPU device; gpu-labelled
# tests skip themselves when no GPU is visible; the slurm suite starts a one-node Slurm as root (installing it
# with apt) and skips, saying why, where it cannot.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh
# Open MPI refuses root without these, and needs oversubscription to start 4 ranks on 2 cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export NCCL_NVLS_ENABLE=0
# Half the cores run tests side by side (each MPI test starts 2-4 ranks), at least 2, at most 8.
jobs=$(( $(nproc) / 2 )); [ "$jobs" -lt 2 ] && jobs=2; [ "$jobs" -gt 8 ] && jobs=8
cd build
ctest --output-on-failure -j "$jobs" --timeout 600

#!/usr/bin/env bash
# The main job (README.md): install, build, then measure. On a machine with GPUs: `scalebench topo`, the
# collective bandwidth sweep over every GPU and each workload trained on every GPU (one rank per GPU).
# Without a GPU: the sweep and a tiny data-parallel workload (with --check) on the CPU device with 2 MPI
# ranks, after a notice.
# Results land in ./results/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p results
stamp=$(date -u +%Y%m%dT%H%M%SZ)
gpus=0
command -v nvidia-smi > /dev/null && gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU' || true)
if [ "$gpus" -gt 0 ]; then
  mpirun -np "$gpus" --bind-to none -x NCCL_NVLS_ENABLE build/scalebench topo --json "results/topo-$stamp.json"
  mpirun -np "$gpus" --bind-to none -x NCCL_NVLS_ENABLE build/scalebench bandwidth --op all \
    --min-bytes 1M --max-bytes 1G --check --json "results/bandwidth-$stamp.json"
  for workload in transformer_big bert_base bert_finetune mt_dnn; do
    mpirun -np "$gpus" --bind-to none -x NCCL_NVLS_ENABLE build/scalebench run --workload "$workload" --steps 10 \
      --json "results/run-$workload-$stamp.json"
  done
else
  echo "scalebench: notice: no GPU found; running the sweep on the CPU device (2 MPI ranks)" >&2
  mpirun -np 2 --oversubscribe build/scalebench bandwidth --device cpu --op all --max-bytes 16M --check \
    --json "results/bandwidth-cpu-$stamp.json"
  mpirun -np 2 --oversubscribe build/scalebench run --device cpu --workload transformer_big --scale tiny --batch 8 \
    --steps 10 --check --json "results/run-cpu-tiny-$stamp.json"
fi
echo "results written to results/"

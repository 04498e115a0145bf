#!/usr/bin/env bash
# The mpirun equivalent of the sbatch templates: inside a Slurm allocation (salloc, or an sbatch script)
# Open MPI finds the nodes itself; elsewhere pass a hostfile. One rank per GPU: GPUS_PER_NODE ranks on
# each node, each taking GPU (node-local rank) of the GPUs it sees.
#   scripts/slurm/mpirun.sh                                    (this node, every GPU)
#   NODES=2 GPUS_PER_NODE=8 scripts/slurm/mpirun.sh --hostfile hosts
# Extra arguments go to mpirun. Results: results/<JOB_NAME>-<date>/ unless RESULTS_DIR is set.
# SB_DEVICE=cpu: a smoke run on the CPU device (run_suite.sh), GPUS_PER_NODE ranks a node, by default the
# allocation's tasks a node (2 outside one).
set -uo pipefail
cd "$(dirname "$0")/../.."
nodes=${NODES:-${SLURM_NNODES:-1}}
if [ "${SB_DEVICE:-}" = cpu ]; then
  gpus=${GPUS_PER_NODE:-$((${SLURM_NTASKS:-$((2 * nodes))} / nodes))}
else
  gpus=${GPUS_PER_NODE:-$(nvidia-smi -L 2> /dev/null | wc -l)}
fi
[ "$gpus" -gt 0 ] || { echo "no GPU found: set GPUS_PER_NODE (or run on the CPU device with SB_DEVICE=cpu)"; exit 2; }
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
export RESULTS_DIR=${RESULTS_DIR:-results/${JOB_NAME:-scalebench}-${SLURM_JOB_ID:-$(date +%Y%m%d-%H%M%S)}}
# -x forwards the variables to remote nodes (local ranks inherit the environment anyway).
forward=()
for name in $(env | grep -oE '^(NCCL|UCX)_[A-Z_]+' | sort -u); do forward+=(-x "$name"); done
bash scripts/slurm/run_suite.sh mpirun -np $((nodes * gpus)) --map-by "ppr:${gpus}:node" --bind-to none \
  "${forward[@]}" "$@"

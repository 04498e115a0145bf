#!/usr/bin/env bash
# The main job (README.md): install what is missing, build, then measure.
# With GPUs: `scalebench topo`, the collective bandwidth sweep (two or more GPUs), and all 12 reference workloads
# trained at their reference batch on every GPU (solo; comm and data-parallel too with two or more GPUs) in one
# `suite --reference-only` job with a progress line (workload k of 12, time left); then one summary table
# (units/s per GPU alone and on all GPUs, E(N), the guide's "x RTX 8000" column) and one self-contained HTML
# report in results/, whose path is the last line. About 3-4 minutes on one H200 after the build.
# Without a GPU: a notice, then the sweep and a tiny data-parallel workload (with --check) on the CPU device.
# QUICKSTART_STEPS / QUICKSTART_WARMUP change the timed and untimed steps per phase (default 10 and 2);
# QUICKSTART_SUITE_ARGS adds suite options (e.g. "--workloads bert_base,mt_dnn").
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
bash scripts/install_deps.sh
bash scripts/build.sh
built=$SECONDS
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p results
stamp=$(date -u +%Y%m%dT%H%M%SZ)
gpus=0
command -v nvidia-smi > /dev/null && gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU' || true)
if [ "$gpus" -gt 0 ]; then
  launch=(mpirun -np "$gpus" --bind-to none -x NCCL_NVLS_ENABLE build/scalebench)
  "${launch[@]}" topo --json "results/topo-$stamp.json"
  inputs=()
  if [ "$gpus" -gt 1 ]; then  # one rank has no links to measure
    "${launch[@]}" bandwidth --op all --min-bytes 1M --max-bytes 1G --check --json "results/bandwidth-$stamp.json"
    inputs+=("results/bandwidth-$stamp.json")
  fi
  # A failing workload is reported in its row and the suite goes on (exit 3 at the end): the table and the
  # report still come, then the exit code says so.
  status=0
  "${launch[@]}" suite --reference-only --warmup "${QUICKSTART_WARMUP:-2}" --steps "${QUICKSTART_STEPS:-10}" \
    --out "results/quickstart-$stamp" ${QUICKSTART_SUITE_ARGS:-} || status=$?
  html="results/quickstart-$stamp.html"
  build/scalebench compare "results/quickstart-$stamp/suite.json" "${inputs[@]}" --html "$html" > /dev/null
  echo "main job: check and build $((built - started)) s, measurement $((SECONDS - built)) s"
  echo "report: $html"
  exit "$status"
else
  echo "scalebench: notice: no GPU found; running the sweep on the CPU device (2 MPI ranks)" >&2
  mpirun -np 2 --oversubscribe build/scalebench bandwidth --device cpu --op all --max-bytes 16M --check \
    --json "results/bandwidth-cpu-$stamp.json"
  mpirun -np 2 --oversubscribe build/scalebench run --device cpu --workload transformer_big --scale tiny --batch 8 \
    --steps 10 --check --json "results/run-cpu-tiny-$stamp.json"
fi
echo "results written to results/"

#!/usr/bin/env bash
# The measurements of one scalebench job, run through whatever launcher the caller names: topo, the
# bandwidth sweep, then every workload in $WORKLOADS trained data-parallel. Used by the sbatch templates
# (srun) and mpirun.sh; results go to $RESULTS_DIR (JSON, CSV and the console text of each command).
#   usage: run_suite.sh LAUNCHER...      e.g.  run_suite.sh srun --mpi=pmix
# Environment: SB (the binary; default build/scalebench), RESULTS_DIR (required), WORKLOADS (default
# "transformer_big bert_base"), SB_ARGS (extra common flags for every command, e.g. "--timeout 120"),
# BANDWIDTH_ARGS (default "--op all --min-bytes 1M --max-bytes 1G"), RUN_ARGS (extra flags of `run`).
# SB_DEVICE=cpu (which scalebench reads as --device cpu) makes the defaults a smoke run of a minute on the
# CPU device at tiny scale, to check a cluster's wiring (Slurm, PMI, MPI) without GPUs: WORKLOADS
# "bert_base", SB_ARGS "--timeout 60", BANDWIDTH_ARGS "--op all --max-bytes 64K --iters 2 --check",
# RUN_ARGS "--scale tiny --batch 2 --warmup 1 --steps 2".
set -uo pipefail
: "${RESULTS_DIR:?set RESULTS_DIR}"
sb=${SB:-build/scalebench}
if [ "${SB_DEVICE:-}" = cpu ]; then
  : "${WORKLOADS:=bert_base}" "${SB_ARGS:=--timeout 60}" "${BANDWIDTH_ARGS:=--op all --max-bytes 64K --iters 2 --check}"
  : "${RUN_ARGS:=--scale tiny --batch 2 --warmup 1 --steps 2}"
fi
read -r -a extra <<< "${SB_ARGS:-}"
read -r -a bandwidth <<< "${BANDWIDTH_ARGS:---op all --min-bytes 1M --max-bytes 1G}"
read -r -a run_args <<< "${RUN_ARGS:-}"
mkdir -p "$RESULTS_DIR"
status=0

# step NAME ARGS...: one scalebench command; its console text kept, its exit code remembered (a failed
# command still leaves its partial JSON, and the next command still runs).
step() {
  local name=$1
  shift
  echo "== $name: $*"
  "$@" > "$RESULTS_DIR/$name.txt" 2>&1
  local rc=$?
  tail -n 3 "$RESULTS_DIR/$name.txt"
  if [ "$rc" -ne 0 ]; then
    echo "== $name: exit $rc (see $RESULTS_DIR/$name.txt)"
    status=$rc
  fi
  # Stopped by SIGTERM (the time limit is near, --signal=TERM@60): the next command would not finish either.
  if grep -q "stopped by SIG" "$RESULTS_DIR/$name.txt"; then
    echo "== stopped by a signal: the remaining commands are skipped"
    exit "$status"
  fi
}

step topo "$@" "$sb" topo "${extra[@]}" --json "$RESULTS_DIR/topo.json"
step bandwidth "$@" "$sb" bandwidth "${bandwidth[@]}" "${extra[@]}" --json "$RESULTS_DIR/bandwidth.json" \
  --csv "$RESULTS_DIR/bandwidth.csv"
for workload in ${WORKLOADS:-transformer_big bert_base}; do
  step "run_$workload" "$@" "$sb" run --workload "$workload" "${run_args[@]}" "${extra[@]}" --json "$RESULTS_DIR/run_$workload.json" \
    --csv "$RESULTS_DIR/run_$workload.csv"
done
echo "== results in $RESULTS_DIR"
exit "$status"

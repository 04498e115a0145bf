#!/usr/bin/env bash
# --grad-registration (issue 26, "less SM theft") on the CPU device: the mpi backend registers no buffers, so the run
# says so on the console and in the JSON and trains as without it (--check passes, with an fp32 and a bf16 wire);
# nothing is said without the option; a bad mode is exit 2 with one line on every rank. What NCCL grants (a
# symmetric window, or local registration) is tested on a GPU (DpStepGraph, NcclRegistration).
source "$(dirname "$0")/lib/common.bash"
if ! mpi_available; then echo "SKIP: no MPI"; exit 0; fi
tiny=(--device cpu --scale tiny --batch 1 --warmup 1 --steps 2)

for wire in fp32 bf16; do
  expect_exit 0 "--grad-registration symmetric over mpi ($wire wire)" -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" \
    -w transformer_big "${tiny[@]}" --grad-dtype "$wire" --grad-registration symmetric --check \
    --json "$WORK/symmetric_$wire.json"
  expect_output "# --grad-registration symmetric does not apply: the mpi backend registers no buffers: the gradients were reduced as without it" \
    "the console says the lever does not apply ($wire)"
  expect_output "check \(3 SGD steps, no dropout[^)]*\).*: passed" "--check passes ($wire)"
  expect_json "$WORK/symmetric_$wire.json" \
    'g = d["grad_registration"]; assert d["config"]["grad_registration"] == "symmetric" and g["granted"] == "none" and "mpi backend" in g["why_less"], g' \
    "the JSON of --grad-registration symmetric ($wire)"
done

expect_exit 0 "--grad-registration local over mpi" -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" -w bert_base "${tiny[@]}" \
  --phases solo,dp --grad-registration local --json "$WORK/local.json"
expect_output "# --grad-registration local does not apply: the mpi backend" "local: the same notice"
expect_json "$WORK/local.json" 'assert d["config"]["grad_registration"] == "local" and d["grad_registration"]["granted"] == "none"' \
  "the JSON of --grad-registration local"

expect_exit 0 "without --grad-registration" -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" -w bert_base "${tiny[@]}" \
  --phases solo,dp --json "$WORK/plain.json"
expect_lines 0 "grad-registration|gradient buffers" "nothing said when the lever is off"
expect_json "$WORK/plain.json" \
  'assert d["config"]["grad_registration"] == "none" and d["grad_registration"] == {"granted": "none", "why_less": None}, d["grad_registration"]' \
  "the JSON without --grad-registration"

for bad in global SYMMETRIC ""; do
  expect_exit 2 "--grad-registration '$bad'" -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" -w bert_base "${tiny[@]}" \
    --grad-registration "$bad"
  expect_lines 2 "^scalebench: error: \[rank [0-1]@.*--grad-registration" "--grad-registration '$bad': one line on every rank"
done
finish

#!/usr/bin/env bash
# --overlap-ctas (issue 26, "less SM theft") on the CPU device: the mpi backend has no CTA limit, so the run says
# so on the console and in the JSON and trains as without it (--check passes); a value outside 0..64 is exit 2 with
# one line on every rank. Its effect (NCCL's maxCTAs on a second communicator) is tested on a GPU (DpStepGraph).
source "$(dirname "$0")/lib/common.bash"
if ! mpi_available; then echo "SKIP: no MPI"; exit 0; fi
tiny=(--device cpu --scale tiny --batch 1 --warmup 1 --steps 2)

expect_exit 0 "--overlap-ctas 4 over mpi" -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" -w bert_base "${tiny[@]}" \
  --overlap-ctas 4 --check --json "$WORK/ctas.json"
expect_output "# --overlap-ctas 4 does not apply: the mpi backend has no CTA limit, so every all-reduce ran as without it" \
  "the console says the lever does not apply"
expect_output "check \(3 SGD steps, no dropout[^)]*\).*: passed" "--check passes"
expect_json "$WORK/ctas.json" 'assert d["config"]["overlap_ctas"] == 4 and "does not apply" in d["overlap_ctas_not_applied"], d["overlap_ctas_not_applied"]' \
  "the JSON of --overlap-ctas"

expect_exit 0 "without --overlap-ctas" -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" -w bert_base "${tiny[@]}" \
  --phases solo,dp --json "$WORK/plain.json"
expect_lines 0 "overlap-ctas" "nothing said when the lever is off"
expect_json "$WORK/plain.json" 'assert d["config"]["overlap_ctas"] == 0 and d["overlap_ctas_not_applied"] is None' \
  "the JSON without --overlap-ctas"

for bad in 65 -1 two; do
  expect_exit 2 "--overlap-ctas $bad" -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" -w bert_base "${tiny[@]}" --overlap-ctas "$bad"
  expect_lines 2 "^scalebench: error: \[rank [0-1]@.*--overlap-ctas" "--overlap-ctas $bad: one line on every rank"
done
finish

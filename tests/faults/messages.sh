#!/usr/bin/env bash
# Issue 27, finding 12 (wrong answers and messages): runs that measure nothing, SIGTERM during start-up,
# messages that name the flag, the value and the range, the differing flag of mismatched ranks, and the dead
# rank in the partial JSON after a peer's SIGKILL.
source "$(dirname "$0")/lib.bash"
if ! mpi_available; then echo "SKIP: no MPI"; exit 0; fi

# Nothing measured is exit 3 with a line.
timed "12 bandwidth -b 3 -e 3" 20 3 -- "$SB" bandwidth --device cpu -b 3 -e 3
expect_output "nothing measured: every size from 3 to 3 B rounds down" "12: the empty sweep says so"
timed "12 --phases dp on one rank" 30 3 -- "$SB" "${tiny[@]}" --phases dp --json "$WORK/dp1.json"
expect_output "nothing measured: none of the phases dp ran \(comm and dp need two or more ranks\)" "12: one rank, dp"
json_check "12 --phases dp on one rank" "$WORK/dp1.json" "assert doc['status'] == 'failed'"

# SIGTERM while a rank waits in MPI start-up (its peer has not started): exit 3 and a line, not 143.
stall=(bash -c '[ "${OMPI_COMM_WORLD_RANK:-0}" = 1 ] && sleep 60; exec "$0" "$@"' "$SB")
"$MPIEXEC" -n 2 $OVERSUBSCRIBE "${stall[@]}" "${tiny[@]}" --timeout 30 --json "$WORK/startterm.json" \
  > "$WORK/out" 2>&1 &
launcher=$!
sleep 3
pgrep -f "^$SB .*$WORK/startterm.json" | xargs -r kill -TERM
timeout 20 tail --pid=$launcher -f /dev/null
wait $launcher
rc=$?
[ $rc -eq 3 ] && { passes=$((passes + 1)); tally "12 SIGTERM in start-up" clean; } ||
  { echo "FAIL: 12: SIGTERM in start-up: exit $rc"; failures=$((failures + 1)); tally "12 SIGTERM in start-up" wrong; }
expect_output "stopped by SIGTERM during start-up, while waiting for MPI initialisation" "12: the start-up signal's line"
no_leftovers "12 SIGTERM in start-up" "$WORK/startterm.json"

# Range messages name the flag, the value and the range.
timed "12 maxbatch --memory 1e30" 20 2 -- "$SB" maxbatch -w bert_base --device cpu --memory 1e30
expect_output "^scalebench: error: --memory: 1e30 is out of range: a finite number above 0 and up to 1048576" \
  "12: --memory 1e30 named with its range"
timed "12 --steps 1e30" 20 2 -- "$SB" "${tiny[@]}" --steps 1e30
expect_output "^scalebench: error: --steps: 1e30 is not a whole number from 1 to 1000000" "12: --steps 1e30"
timed "12 --batch 0" 20 2 -- "$SB" "${tiny[@]}" --batch 0
expect_output "^scalebench: error: --batch: 0 is out of range: a whole number from 1 to 1000000000 " "12: --batch 0"
timed "12 --seed -1" 20 2 -- "$SB" "${tiny[@]}" --seed -1
expect_output "^scalebench: error: --seed: -1 is not a whole number from 0 to 18446744073709551615" "12: --seed -1"

# Mismatched arguments: the refusal names the flag that differs and both values.
timed "12 mismatch" 30 2 -- "$MPIEXEC" $OVERSUBSCRIBE -n 1 "$SB" bandwidth --device cpu --iters 3 \
  : -n 1 "$SB" bandwidth --device cpu --iters 4
expect_lines 2 "--iters is '4' on rank 1 but '3' on rank 0" "12: both ranks name --iters and its values"

# A peer SIGKILLed in dp: mpiexec stops rank 0 with SIGTERM; its partial JSON names the dead rank.
SCALEBENCH_FAULT="kill:rank=1:phase=dp:step=3" timed "12 peer SIGKILL" 40 137 -- \
  "$MPIEXEC" -n 2 $OVERSUBSCRIBE -x SCALEBENCH_FAULT "$SB" "${tiny[@]}" --timeout 5 --json "$WORK/kill1.json"
json_check "12 peer SIGKILL" "$WORK/kill1.json" \
  "assert re.search('rank 1 had already ended', doc['error']), doc['error']; assert sorted(doc['phases']) == ['comm', 'solo']"
no_leftovers "12 peer SIGKILL" "$WORK/kill1.json"
finish

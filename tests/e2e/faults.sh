#!/usr/bin/env bash
# Fault injection on the CPU device under mpiexec (issue 7): a rank that sleeps past --timeout, a rank
# killed by SIGKILL, SIGTERM on every rank or on one, a non-finite loss on one. Each case asserts the exit code, the time to exit, that
# no process is left behind, the messages (phase, step, suspect rank) and the partial JSON (status "failed",
# the phases measured before the fault). Faults come from the test-only SCALEBENCH_FAULT (docs/DESIGN.md).
source "$(dirname "$0")/lib/common.bash"
if ! mpi_available; then echo "SKIP: no MPI"; exit 0; fi

# Four timed steps after one warm-up; step 3 of a phase is a timed step, so solo and comm finish first.
tiny=(-w transformer_big --device cpu --scale tiny --batch 2 --warmup 1 --steps 4 --timeout 3)

# run_fault NAME FAULT EXPECTED_EXIT NRANKS [extra mpiexec flags]: one job with $WORK/NAME.json; checks the
# exit code, that it ended within 30 s and that none of its processes (found by the unique JSON path in
# their command line) is alive a second later.
run_fault() {
  local name=$1 fault=$2 want=$3 ranks=$4
  shift 4
  local start end
  start=$(date +%s)
  expect_exit "$want" "$name: exit code" -- env SCALEBENCH_FAULT="$fault" "$MPIEXEC" -n "$ranks" $OVERSUBSCRIBE "$@" \
    "$SB" "${tiny[@]}" --json "$WORK/$name.json"
  end=$(date +%s)
  if [ $((end - start)) -le 30 ]; then passes=$((passes + 1)); else
    echo "FAIL: $name: took $((end - start)) s to exit (limit 30)"; failures=$((failures + 1)); fi
  sleep 1
  if pgrep -f "$WORK/$name.json" > /dev/null; then
    echo "FAIL: $name: processes left behind:"; pgrep -af "$WORK/$name.json"; failures=$((failures + 1))
  else passes=$((passes + 1)); fi
}

# partial_json NAME PHASES DP_STEPS ERROR_REGEX: status failed, exactly PHASES (comma-separated) present,
# the dp phase with DP_STEPS timed steps per rank when present, the error matching.
partial_json() {
  python3 - "$WORK/$1.json" "$2" "$3" "$4" <<'PY' && passes=$((passes + 1)) || { echo "FAIL: $1: partial JSON"; failures=$((failures + 1)); }
import json, re, sys
doc = json.load(open(sys.argv[1]))
assert doc["status"] == "failed", doc["status"]
assert sorted(doc["phases"]) == sorted(sys.argv[2].split(",")), sorted(doc["phases"])
if "dp" in doc["phases"]:
    steps = [len(rank["step_ms"]) for rank in doc["phases"]["dp"]["ranks"]]
    assert all(n == int(sys.argv[3]) for n in steps), steps
assert re.search(sys.argv[4], doc["error"]), doc["error"]
assert "SCALEBENCH_FAULT" in doc["context"]["environment"], "the injected fault is recorded"
PY
}

# A rank that stalls: the others give up after --timeout, hold the roll call and name it; exit 3.
run_fault sleep2 "sleep:rank=1:phase=dp:step=3" 3 2
expect_output "\[rank 0@.*\[dp phase, step 3\].*did not finish within 3 s.*suspect: rank 1 " "sleep -n 2: rank 0 names phase, step and rank 1"
partial_json sleep2 "solo,comm" 0 "dp phase, step 3.*suspect: rank 1 "
run_fault sleep4 "sleep:rank=2:phase=dp:step=3" 3 4
expect_lines 3 "^scalebench: error: \[rank [013]@.*\[dp phase, step 3\].*suspect: rank 2 " "sleep -n 4: every healthy rank names rank 2"
partial_json sleep4 "solo,comm" 0 "suspect: rank 2 "
run_fault sleep-comm "sleep:rank=0:phase=comm:step=2" 3 2
expect_output "\[rank 1@.*\[comm phase, step 2\].*suspect: rank 0 " "a stalled rank 0 is named by rank 1"

# A rank killed: mpiexec tears the job down (SIGTERM, SIGKILL a second later); rank 0 has written the
# phases finished before the kill by then.
run_fault kill2 "kill:rank=1:phase=dp:step=3" 137 2
partial_json kill2 "solo,comm" 0 "SIGTERM during dp phase, step 3"
run_fault kill4 "kill:rank=3:phase=dp:step=3" 137 4
partial_json kill4 "solo,comm" 0 "SIGTERM during dp phase, step 3"
# With a launcher that lets the job go on (srun without --kill-on-bad-exit; here mpiexec --enable-recovery,
# which then exits 0 whatever its ranks did, so each rank's exit code is printed by a wrapper), the survivor
# finds the dead rank itself: the all-reduce times out and the roll call names it.
wrapped=(bash -c '"$0" "$@"; rc=$?; echo "rank exit $rc" >&2; exit $rc' "$SB")
start=$(date +%s)
expect_exit 0 "kill without teardown" -- env SCALEBENCH_FAULT="kill:rank=1:phase=dp:step=3" "$MPIEXEC" \
  --enable-recovery -n 2 $OVERSUBSCRIBE "${wrapped[@]}" "${tiny[@]}" --json "$WORK/kill-recovery.json"
[ $(($(date +%s) - start)) -le 30 ] && passes=$((passes + 1)) || { echo "FAIL: kill without teardown: too slow"; failures=$((failures + 1)); }
sleep 1
! pgrep -f "$WORK/kill-recovery.json" > /dev/null && passes=$((passes + 1)) || { echo "FAIL: kill without teardown: processes left"; failures=$((failures + 1)); }
expect_output "\[rank 0@.*\[dp phase, step 3\].*suspect: rank 1 " "kill without teardown: rank 0 names rank 1"
expect_lines 1 "^rank exit 3$" "kill without teardown: the survivor exits 3"
expect_lines 1 "^rank exit 137$" "kill without teardown: the killed rank died by SIGKILL"
partial_json kill-recovery "solo,comm" 0 "suspect: rank 1 "

# SIGTERM on every rank (Slurm's time limit): all stop at the step boundary, the dp steps so far kept.
run_fault term-all "term:rank=all:phase=dp:step=3" 3 2
expect_lines 2 "^scalebench: error: .*stopped by SIGTERM after dp phase, step 3" "SIGTERM: both ranks stop at the same boundary"
partial_json term-all "solo,comm,dp" 2 "stopped by SIGTERM after dp phase, step 3"
# SIGTERM on one rank: the others agree to stop at the same boundary.
run_fault term-one "term:rank=3:phase=solo:step=4" 3 4
expect_lines 4 "^scalebench: error: .*stopped by SIGTERM after solo phase, step 4" "SIGTERM on rank 3: all four stop together"
partial_json term-one "solo" 0 "stopped by SIGTERM after solo phase, step 4"

# A non-finite loss on one rank (a diverging model; here the test-only `nan` fault): every rank stops at that
# step with exit 3, and the phase's timed steps before it are reported (status failed, the error naming it).
run_fault nan-one "nan:rank=1:phase=dp:step=4" 3 2
expect_lines 2 "^scalebench: error: .*dp phase: the loss is not finite at step 4 on rank 1 \(2 timed steps of the phase kept\)" \
  "non-finite loss: both ranks stop at the same step"
partial_json nan-one "solo,comm,dp" 2 "the loss is not finite at step 4 on rank 1"

# A malformed fault is a usage error, never a silently fault-free run.
expect_exit 2 "bad SCALEBENCH_FAULT" -- env SCALEBENCH_FAULT="nap:rank=1" "$SB" "${tiny[@]}"
expect_output "SCALEBENCH_FAULT='nap:rank=1': unknown action" "the bad fault is named"
finish

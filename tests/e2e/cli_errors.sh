#!/usr/bin/env bash
# Bad input: one line naming the problem and exit 2, on every rank, never a hang; help and version exit 0.
source "$(dirname "$0")/lib/common.bash"

expect_exit 0 "--help" -- "$SB" --help
expect_output "bandwidth" "--help lists the bandwidth command"
expect_exit 0 "bandwidth --help" -- "$SB" bandwidth --help
expect_output "--min-bytes" "bandwidth --help lists its flags"
expect_exit 0 "--version" -- "$SB" --version
expect_output "^scalebench [0-9]" "--version prints the version"

expect_exit 2 "no subcommand" -- "$SB"
expect_lines 1 "^scalebench: error:" "no subcommand: one error line"
expect_exit 2 "unknown flag" -- "$SB" bandwidth --no-such-flag
expect_output "no-such-flag" "unknown flag is named"
expect_exit 2 "unknown collective" -- "$SB" bandwidth --device cpu --op all_scatter
expect_output "unknown collective 'all_scatter'" "unknown collective is named"
expect_exit 2 "bad dtype" -- "$SB" bandwidth --device cpu --dtype fp8
expect_output "unknown dtype 'fp8'" "bad dtype is named"
expect_exit 2 "bad size" -- "$SB" bandwidth --device cpu --min-bytes 12Q
expect_output "invalid size suffix in '12Q'" "bad size is named"
expect_exit 2 "min > max" -- "$SB" bandwidth --device cpu --min-bytes 2M --max-bytes 1M
expect_output "smaller than --min-bytes" "min > max is explained"
expect_exit 2 "unknown reduce op" -- "$SB" bandwidth --device cpu --dtype int32 --redop xor
expect_output "--redop: unknown reduce op 'xor'" "bad reduce op is named with its flag"
expect_exit 2 "graph on the CPU" -- "$SB" bandwidth --device cpu --graph --max-bytes 4K
expect_output "--graph needs the cuda device" "graph on the CPU is refused"
expect_exit 2 "root out of range" -- "$SB" bandwidth --device cpu --op broadcast --root 3 --max-bytes 4K
expect_output "--root 3 is not a rank" "root out of range is named"
expect_exit 2 "zero iterations" -- "$SB" bandwidth --device cpu --iters 0
expect_lines 1 "^scalebench: error:" "zero iterations: one error line"
expect_exit 2 "register without NCCL" -- "$SB" bandwidth --device cpu --register --max-bytes 4K
expect_output "--register needs the nccl backend" "register without NCCL is refused"
for mode in local symmetric 2; do  # -R takes a mode (nccl-tests' 1 and 2 too); still refused without NCCL
  expect_exit 2 "register $mode without NCCL" -- "$SB" bandwidth --device cpu -R "$mode" --max-bytes 4K
  expect_output "--register needs the nccl backend" "register $mode without NCCL is refused"
done
expect_exit 2 "a register mode that does not exist" -- "$SB" bandwidth --device cpu -R global --max-bytes 4K
expect_output "--register: global not in \{none,local,symmetric,0,1,2\}" "the modes are listed"
expect_exit 0 "-R 0 registers nothing" -- "$SB" bandwidth --device cpu -R 0 --max-bytes 4K --iters 2 --json "$WORK/r0.json"
expect_json "$WORK/r0.json" 'assert d["config"]["register"] is False and d["config"]["registration"] == "none" and d["registration"] == {"granted": "none", "why_less": None}, d["config"]' \
  "-R 0's JSON"
expect_exit 2 "nccl on the CPU" -- "$SB" bandwidth --device cpu --backend nccl
expect_output "nccl backend needs (the cuda device|scalebench built with NCCL)" "nccl on the CPU is refused"

expect_exit 2 "unwritable JSON path" -- "$SB" bandwidth --device cpu --json /nonexistent-dir/out.json
expect_output "cannot write '/nonexistent-dir/out.json'" "unwritable JSON path is named before the sweep"

# torchrun started this process as one of 4, but MPI sees a one-rank job: refuse instead of running wrong.
expect_exit 2 "torchrun world size mismatch" -- env RANK=1 WORLD_SIZE=4 LOCAL_RANK=1 "$SB" bandwidth --device cpu
expect_output "torchrun started 4 ranks but MPI sees 1" "torchrun mismatch is explained"

if mpi_available; then
  expect_exit 2 "unknown flag on 2 ranks" -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" bandwidth --bogus
  expect_lines 2 "^scalebench: error: \[rank [01]@" "every rank reports the usage error"
  expect_exit 2 "root out of range on 4 ranks" -- "$MPIEXEC" -n 4 $OVERSUBSCRIBE "$SB" bandwidth \
    --device cpu --op broadcast --root 4 --max-bytes 4K
  expect_lines 4 "--root 4 is not a rank" "every rank names the bad root"
fi
finish

#!/usr/bin/env bash
# Ranks started with different arguments must all stop with a usage error (exit 2), never hang.
source "$(dirname "$0")/lib/common.bash"
if ! mpi_available; then echo "MPI not built: skipped"; echo "0 passed, 0 failed"; exit 0; fi

expect_exit 2 "different --iters on two ranks" -- "$MPIEXEC" $OVERSUBSCRIBE \
  -n 1 "$SB" bandwidth --device cpu --iters 3 : -n 1 "$SB" bandwidth --device cpu --iters 4
expect_lines 2 "configuration differs between ranks: rank\(s\) 1 got other arguments than rank 0 \(--iters is .4. on rank 1 but .3. on rank 0\)" \
  "both ranks report the mismatch"

expect_exit 2 "one of four ranks with another dtype" -- "$MPIEXEC" $OVERSUBSCRIBE \
  -n 3 "$SB" bandwidth --device cpu : -n 1 "$SB" bandwidth --device cpu --dtype bf16
expect_lines 4 "configuration differs between ranks: rank\(s\) 3 got other arguments" \
  "all four ranks name rank 3"

expect_exit 2 "one rank with a bad flag, one without" -- "$MPIEXEC" $OVERSUBSCRIBE \
  -n 1 "$SB" bandwidth --device cpu : -n 1 "$SB" bandwidth --device cpu --bogus
expect_output "rank 1 reported a usage error" "the healthy rank names the failing one"
expect_output "bogus" "the failing rank names its flag"

expect_exit 2 "ranks on different devices" -- "$MPIEXEC" $OVERSUBSCRIBE \
  -n 1 "$SB" bandwidth --device cpu : -n 1 "$SB" bandwidth --device cuda
expect_lines 2 "scalebench: error" "both ranks stop"
finish

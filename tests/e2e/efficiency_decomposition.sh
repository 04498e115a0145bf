#!/usr/bin/env bash
# 1 − E = dilation + tail + skew (issue 26) on the CPU device with 2 ranks: the JSON carries the three terms and the
# residual, each recomputed here from the per-rank, per-step timelines the same JSON holds (an independent reading
# of docs/RESULTS.md's definitions); they add up to 1 − E within half a point or the residual says by how much, and
# the console says so. A step of sub-steps (unsupmt) says why it is not decomposed. The schema check of every JSON
# written here runs at the end (lib/common.bash).
source "$(dirname "$0")/lib/common.bash"
CHECK="$(dirname "$0")/lib/check_decomposition.py"
if ! mpi_available; then
  echo "SKIP: no MPI"
  exit 0
fi
tiny=(--device cpu --scale tiny --batch 2 --warmup 1 --steps 6)
for workload in bert_base yolov3; do
  json="$WORK/$workload.json"
  expect_exit 0 "$workload on 2 ranks" -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" --workload "$workload" "${tiny[@]}" \
    --json "$json"
  expect_output "# 1 - E = -?[0-9.]+ points = dilation -?[0-9.]+ \(-?[0-9.]+ ms\) \+ tail -?[0-9.]+ \(-?[0-9.]+ ms\) \+ skew [0-9.]+ \([0-9.]+ ms\) \+ residual -?[0-9.]+" \
    "$workload: the decomposition follows E"
  cp "$WORK/out" "$WORK/$workload.out"
  python3 "$CHECK" "$json" "$WORK/$workload.out" && passes=$((passes + 1)) ||
    { echo "FAIL: $workload decomposition"; failures=$((failures + 1)); }
done

# A straggler: rank 1 sleeps 0.3 s before its third dp step (the second timed one), so rank 0 waits for it in that
# step's first all-reduce: that step's skew on rank 0 holds the sleep, and on rank 1 nothing.
expect_exit 0 "a straggler" -- env SCALEBENCH_FAULT=sleep:rank=1:phase=dp:step=3:seconds=0.3 "$MPIEXEC" -n 2 \
  $OVERSUBSCRIBE "$SB" --workload bert_base "${tiny[@]}" --json "$WORK/straggler.json"
cp "$WORK/out" "$WORK/straggler.out"
python3 "$CHECK" "$WORK/straggler.json" "$WORK/straggler.out" --straggler-step 1 --straggler-ms 300 &&
  passes=$((passes + 1)) || { echo "FAIL: straggler"; failures=$((failures + 1)); }

# A step of sub-steps: the marks hold its last sub-step only, so it says why there is no decomposition.
expect_exit 0 "unsupmt on 2 ranks" -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" --workload unsupmt --device cpu \
  --scale tiny --batch 2 --warmup 1 --steps 2 --json "$WORK/unsupmt.json"
expect_output "# 1 - E not decomposed: a step of [0-9]+ sub-steps" "unsupmt: says why not decomposed"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["efficiency_decomposition"]; assert d["measured"] is False and "sub-steps" in d["not_measured"], d' \
  "$WORK/unsupmt.json" && passes=$((passes + 1)) || { echo "FAIL: unsupmt decomposition"; failures=$((failures + 1)); }

# Without the solo phase there is no E and nothing to decompose: null in the JSON.
expect_exit 0 "dp only" -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" --workload bert_base "${tiny[@]}" --phases dp \
  --json "$WORK/dp-only.json"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["efficiency_decomposition"] is None' \
  "$WORK/dp-only.json" && passes=$((passes + 1)) || { echo "FAIL: dp only"; failures=$((failures + 1)); }
finish

#!/usr/bin/env bash
# --strategy zero1 (issue 31) on the CPU device: every workload at tiny scale under mpiexec -n 2 and -n 4 trains with
# the optimizer's state and update sharded and the shards all-gathered, --check passing and the JSON carrying the
# documented keys; the weights after the dp phase are ddp's bit for bit (each element's update is the same
# arithmetic on the same reduced gradient); maxbatch fits more with the sharded state; a bad strategy, and
# --gpus-sweep with zero1, are exit 2 with one line on every rank.
source "$(dirname "$0")/lib/common.bash"
VALIDATE="$(dirname "$0")/lib/validate_run_json.py"
if ! mpi_available; then echo "SKIP: no MPI"; exit 0; fi
tiny=(--device cpu --scale tiny --batch 2 --warmup 1 --steps 1)

for ranks in 2 4; do
  for workload in transformer_big bert_base bert_finetune mt_dnn yolov3 nasnet_large deeplabv3 conv_seq2seq pix2pixhd \
      stylegan maskrcnn unsupmt; do
    json="$WORK/$workload-$ranks.json"
    expect_exit 0 "$workload, zero1 on $ranks ranks, --check" -- "$MPIEXEC" -n "$ranks" $OVERSUBSCRIBE "$SB" \
      --workload "$workload" "${tiny[@]}" --strategy zero1 --check --json "$json"
    expect_output "check \(3 SGD steps, no dropout[^)]*\).*: passed" "$workload -n $ranks zero1: the check passes"
    expect_output "^# strategy zero1: each rank's optimizer updates [0-9,]+ of the [0-9,]+ parameters" \
      "$workload -n $ranks: the console names the shard"
    python3 "$VALIDATE" "$json" "$ranks" --check && passes=$((passes + 1)) ||
      { echo "FAIL: $workload -n $ranks zero1 JSON"; failures=$((failures + 1)); }
    expect_json "$json" "assert d['config']['strategy'] == 'zero1' and d['weights_identical_after_dp'] and \
d['parameters_updated_per_rank'] * $ranks >= d['workload']['parameters']" "$workload -n $ranks: strategy, shard, weights"
    expect_json "$json" "g = d['all_gather']; assert g['per_step'] == max(1, len(d['workload']['sub_steps'])) and \
g['ms_per_step'] > 0 and g['busbw_gbps'] > 0 and all(len(r['all_gather_ms']) == len(r['step_ms']) for r in \
d['phases']['dp']['ranks']), g" "$workload -n $ranks: the all-gathers timed"
  done
done

# The same steps under ddp and zero1 leave the same weights, bit for bit (AdamW: the moments sharded too; unsupmt
# updates once per sub-step).
for workload in transformer_big bert_base unsupmt; do
  for strategy in ddp zero1; do
    expect_exit 0 "$workload $strategy, AdamW" -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" --workload "$workload" \
      --device cpu --scale tiny --batch 2 --warmup 1 --steps 3 --optimizer adamw --phases dp --strategy "$strategy" \
      --json "$WORK/$workload-$strategy.json"
  done
  python3 - "$WORK/$workload-ddp.json" "$WORK/$workload-zero1.json" <<'PY' && passes=$((passes + 1)) ||
import json, sys
ddp, zero1 = (json.load(open(p)) for p in sys.argv[1:])
assert ddp["weights_checksum_after_dp"] == zero1["weights_checksum_after_dp"], (ddp["weights_checksum_after_dp"], zero1["weights_checksum_after_dp"])
assert zero1["optimizer_state_bytes_per_rank"] < ddp["optimizer_state_bytes_per_rank"], "the state is the shard's"
assert ddp["all_gather"] is None and zero1["all_gather"]["bytes"] > 0, (ddp["all_gather"], zero1["all_gather"])
PY
    { echo "FAIL: $workload: zero1's weights differ from ddp's"; failures=$((failures + 1)); }
done

# maxbatch --strategy zero1: the optimizer's state of one shard per rank, in the prediction and in the verifying
# steps, so a batch or more fits beside what ddp fits in the same budget; on one rank there is nothing to shard.
for strategy in ddp zero1; do
  expect_exit 0 "maxbatch $strategy, 2 ranks" -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" maxbatch -w bert_base \
    --device cpu --scale tiny --memory 0.02 --strategy "$strategy" --json "$WORK/maxbatch-$strategy.json"
done
expect_output "^# maxbatch bert_base, fp32, 2 ranks, .*zero1: the optimizer's state of one parameter shard per rank" \
  "the console names the strategy"
python3 - "$WORK/maxbatch-ddp.json" "$WORK/maxbatch-zero1.json" <<'PY' && passes=$((passes + 1)) ||
import json, sys
ddp, zero1 = (json.load(open(p))["results"][0] for p in sys.argv[1:])
assert (ddp["strategy"], zero1["strategy"]) == ("ddp", "zero1"), (ddp["strategy"], zero1["strategy"])
state = lambda r: r["predicted_categories"]["optimizer_state"]
assert 2 * state(zero1) <= state(ddp) + 4096, (state(zero1), state(ddp))
assert zero1["predicted"] > ddp["predicted"], (zero1["predicted"], ddp["predicted"])
assert zero1["verified"] == zero1["predicted"] and zero1["status"] == "ok", zero1
PY
  { echo "FAIL: maxbatch zero1 against ddp"; failures=$((failures + 1)); }
expect_exit 0 "maxbatch zero1, one rank" -- "$SB" maxbatch -w bert_base --device cpu --scale tiny --memory 0.02 \
  --strategy zero1 --no-verify --json "$WORK/maxbatch-one.json"
expect_json "$WORK/maxbatch-one.json" 'assert d["results"][0]["strategy"] == "ddp"' "one rank: nothing to shard"

expect_exit 2 "an unknown strategy" -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" -w bert_base "${tiny[@]}" --strategy zero4
expect_lines 2 "^scalebench: error: \[rank [0-1]@.*--strategy" "an unknown strategy: one line on every rank"
expect_exit 2 "--gpus-sweep with zero1" -- "$MPIEXEC" -n 4 $OVERSUBSCRIBE "$SB" -w bert_base "${tiny[@]}" \
  --strategy zero1 --gpus-sweep 1,2,4
expect_lines 4 "^scalebench: error: \[rank [0-3]@.*--gpus-sweep with --strategy zero1" "one line on every rank"
finish

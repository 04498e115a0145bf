#!/usr/bin/env bash
# --strategy zero1, zero2 and zero3 (issue 31) on the CPU device beyond run's --check (strategy_sharded.sh): the
# weights after the dp phase are ddp's bit for bit where nothing clips (each element's update is the same arithmetic
# on the same reduced gradient); maxbatch fits more with the sharded state, and zero3 with its parameters in blocks
# more than zero2; suite shards the state; --gpus-sweep runs sharded at sizes that divide the ranks; a bad strategy, a
# sweep size that does not divide them and zero2/zero3 with --bucket-mb auto are exit 2 with one line on every rank.
source "$(dirname "$0")/lib/common.bash"
if ! mpi_available; then echo "SKIP: no MPI"; exit 0; fi
tiny=(--device cpu --scale tiny --batch 2 --warmup 1 --steps 1)

# The same steps under ddp, zero1, zero2 and zero3 leave the same weights, bit for bit (AdamW: the moments sharded
# too; unsupmt updates once per sub-step, and zero3 gathers what its generation parts read before them). Neither
# workload clips: a clipped zero2 step sums the norm chunk by chunk, whose last bits may differ
# (tests/mpi/test_sharded_optimizer.cpp bounds that). Buckets of 50 KB: several per step, so that zero3's units are
# gathered again before the backward pass and the per-bucket updates meet stale chunks; zero3's of 10 KB, so that it
# holds its parameters in blocks (each unit gathered out of the ranks' shards, the backward pass reading copies of its
# own) and the weights are read by gathering the shards. Two ranks add two values alike whatever the buckets.
for workload in transformer_big unsupmt; do
  for strategy in ddp zero1 zero2 zero3; do
    bucket_mb=0.05
    [[ $strategy == zero3 ]] && bucket_mb=0.01
    expect_exit 0 "$workload $strategy, AdamW" -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" --workload "$workload" \
      --device cpu --scale tiny --batch 2 --warmup 1 --steps 3 --optimizer adamw --phases dp --strategy "$strategy" \
      --bucket-mb "$bucket_mb" \
      --json "$WORK/$workload-$strategy.json"
  done
  python3 - "$WORK/$workload-ddp.json" "$WORK/$workload-zero1.json" "$WORK/$workload-zero2.json" \
    "$WORK/$workload-zero3.json" <<'PY' &&
import json, sys
ddp, zero1, zero2, zero3 = (json.load(open(p)) for p in sys.argv[1:])
# The dp phases' memory per GPU: planned with one shard's optimizer state, less than ddp's; the CPU device cannot say
# what is in use.
assert ddp["dp_memory"]["device_used_bytes"] is None and ddp["dp_memory"]["plan_bytes"] > 0, ddp["dp_memory"]
for sharded in (zero1, zero2, zero3):
    assert sharded["dp_memory"]["plan_bytes"] < ddp["dp_memory"]["plan_bytes"], (sharded["dp_memory"], ddp["dp_memory"])
# zero2 and zero3 hold their rank's shard of the gradients (half the padded flat layout, which the ranks' all-gathers
# fill whole), each bucket whole only in its block until its reduce-scatter: less than zero1's whole region.
assert ddp["dp_memory"]["gradient_shard_bytes"] == zero1["dp_memory"]["gradient_shard_bytes"] == 0
for blocks in (zero2, zero3):
    shard = blocks["dp_memory"]["gradient_shard_bytes"]
    fp32 = 4 * blocks["workload"]["parameters"]
    assert 2 * shard >= fp32 > shard, (shard, fp32)  # the two shards cover every parameter
    assert blocks["dp_memory"]["plan_bytes"] < zero1["dp_memory"]["plan_bytes"], (blocks["dp_memory"], zero1["dp_memory"])
for sharded in (zero1, zero2, zero3):
    assert ddp["weights_checksum_after_dp"] == sharded["weights_checksum_after_dp"], (ddp["weights_checksum_after_dp"], sharded["weights_checksum_after_dp"])
    assert sharded["optimizer_state_bytes_per_rank"] < ddp["optimizer_state_bytes_per_rank"], "the state is the shard's"
    assert ddp["all_gather"] is None and sharded["all_gather"]["bytes_per_step"] > 0, (ddp["all_gather"], sharded["all_gather"])
assert zero3["dp_memory"]["parameter_shard_bytes"] == zero3["dp_memory"]["gradient_shard_bytes"] > 0, zero3["dp_memory"]
assert (ddp["bucket_collective"], zero2["bucket_collective"]) == ("all_reduce", "reduce_scatter")
# zero3 gathers every bucket before the forward pass and most again before the backward pass (and unsupmt's
# back-translations what their generation reads before it): more than zero2's one gather of every bucket after the
# update, at most three times.
assert zero2["all_gather"]["bytes_per_step"] < zero3["all_gather"]["bytes_per_step"] <= 3 * zero2["all_gather"]["bytes_per_step"], \
    (zero2["all_gather"], zero3["all_gather"])
PY
    passes=$((passes + 1)) || { echo "FAIL: $workload: a sharded strategy's weights differ from ddp's"; failures=$((failures + 1)); }
done

# maxbatch --strategy zero1/zero2: the optimizer's state of one shard per rank, in the prediction and in the
# verifying steps, so a batch or more fits beside what ddp fits in the same budget; on one rank there is nothing to
# shard.
for strategy in ddp zero1 zero3 zero2; do  # zero2 last: the console checks below read its output
  expect_exit 0 "maxbatch $strategy, 2 ranks" -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" maxbatch -w bert_base \
    --device cpu --scale tiny --memory 0.02 --strategy "$strategy" --json "$WORK/maxbatch-$strategy.json"
done
expect_output "^# maxbatch bert_base, fp32, 2 ranks, .*zero2: the optimizer's state of one parameter shard per rank" \
  "the console names the strategy"
expect_output "^#   sharded \(zero2, one shard of 2 per rank\): optimizer state; replicated on every rank: the rest" \
  "and which categories are sharded"
python3 - "$WORK/maxbatch-ddp.json" "$WORK/maxbatch-zero1.json" "$WORK/maxbatch-zero2.json" \
  "$WORK/maxbatch-zero3.json" <<'PY' && passes=$((passes + 1)) ||
import json, sys
ddp, zero1, zero2, zero3 = (json.load(open(p))["results"][0] for p in sys.argv[1:])
assert (ddp["strategy"], zero1["strategy"], zero2["strategy"], zero3["strategy"]) == ("ddp", "zero1", "zero2", "zero3")
# One bucket of the whole model (the default, at this scale): zero3 holds its parameters and gradients whole, as zero2
# its gradients, and fits what zero2 fits.
assert zero3["predicted"] == zero2["predicted"] and zero3["sharded_categories"] == ["optimizer_state"], zero3
assert ddp["sharded_categories"] == [] and zero2["sharded_categories"] == ["optimizer_state"], zero2["sharded_categories"]
state = lambda r: r["predicted_categories"]["optimizer_state"]
for sharded in (zero1, zero2):
    assert 2 * state(sharded) <= state(ddp) + 65536, (state(sharded), state(ddp))
    assert sharded["predicted"] > ddp["predicted"], (sharded["predicted"], ddp["predicted"])
    assert sharded["verified"] == sharded["predicted"] and sharded["status"] == "ok", sharded
PY
  { echo "FAIL: maxbatch zero1/zero2 against ddp"; failures=$((failures + 1)); }
# With 2 KB buckets zero2 holds a shard of the gradients too (one bucket of the whole model would live through the
# backward pass, and holds them whole instead): one more sequence fits than zero1 fits, and it trains.
expect_exit 0 "maxbatch zero2, 2 ranks, 2 KB buckets" -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" maxbatch -w bert_base \
  --device cpu --scale tiny --memory 0.02 --strategy zero2 --bucket-mb 0.002 --json "$WORK/maxbatch-blocks.json"
expect_output "^#   sharded \(zero2, one shard of 2 per rank\): optimizer state, gradients; replicated on every rank: the \
rest \(zero2 holds the parameters whole\)" "the gradients sharded"
expect_output "^#   gradients: this rank's shard [0-9.]+ KiB, and whole buckets' gradients alive at the peak" \
  "the gradients' shard and blocks"
python3 - "$WORK/maxbatch-zero1.json" "$WORK/maxbatch-blocks.json" <<'PY' && passes=$((passes + 1)) ||
import json, sys
zero1, blocks = (json.load(open(p))["results"][0] for p in sys.argv[1:])
assert blocks["sharded_categories"] == ["optimizer_state", "gradients"] and blocks["gradient_shard_bytes"] > 0, blocks
assert blocks["predicted"] > zero1["predicted"], (blocks["predicted"], zero1["predicted"])
assert blocks["verified"] == blocks["predicted"] and blocks["status"] == "ok", blocks
c = blocks["predicted_categories"]
assert sum(c.values()) == blocks["predicted_bytes"], (c, blocks["predicted_bytes"])
PY
  { echo "FAIL: maxbatch zero2 with gradient blocks"; failures=$((failures + 1)); }
# zero3 with 10 KB buckets holds the parameters in blocks with a shard too: in a 1 MiB budget (where the weights are a
# good part of transformer_big's tiny memory) it fits a sentence pair more than zero2 with the same buckets, and its
# verifying steps (a reducer gathering each unit out of the ranks' shards) train at that batch.
for strategy in zero2 zero3; do
  expect_exit 0 "maxbatch $strategy, 2 ranks, 10 KB buckets" -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" maxbatch \
    -w transformer_big --device cpu --scale tiny --memory 0.001 --strategy "$strategy" --bucket-mb 0.01 \
    --json "$WORK/maxbatch-units-$strategy.json"
done
expect_output "^#   parameters: this rank's shard [0-9.]+ KiB, and units gathered whole at the peak" \
  "the parameters' shard and blocks"
python3 - "$WORK/maxbatch-units-zero2.json" "$WORK/maxbatch-units-zero3.json" <<'PY' && passes=$((passes + 1)) ||
import json, sys
zero2, zero3 = (json.load(open(p))["results"][0] for p in sys.argv[1:])
assert zero3["sharded_categories"] == ["optimizer_state", "gradients", "parameters"], zero3["sharded_categories"]
assert zero3["parameter_shard_bytes"] == zero3["gradient_shard_bytes"] > 0 == zero2["parameter_shard_bytes"], zero3
assert zero3["predicted"] > zero2["predicted"], (zero3["predicted"], zero2["predicted"])
assert zero3["verified"] == zero3["predicted"] and zero3["status"] == "ok", zero3
c = zero3["predicted_categories"]
assert sum(c.values()) == zero3["predicted_bytes"], (c, zero3["predicted_bytes"])
PY
  { echo "FAIL: maxbatch zero3 with parameter blocks"; failures=$((failures + 1)); }
expect_exit 0 "maxbatch zero1, one rank" -- "$SB" maxbatch -w bert_base --device cpu --scale tiny --memory 0.02 \
  --strategy zero1 --no-verify --json "$WORK/maxbatch-one.json"
expect_json "$WORK/maxbatch-one.json" 'assert d["results"][0]["strategy"] == "ddp"' "one rank: nothing to shard"

# suite --strategy zero2: maxbatch and the training runs shard the state; the max-batch run trains the dp phases
# alone (its batch is theirs), which the table says instead of "failed"; with --gpus-sweep it is refused.
expect_exit 0 "suite zero2, 2 ranks" -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" suite --workloads bert_base --device cpu \
  --scale tiny --memory 0.02 --warmup 1 --steps 2 --strategy zero2 --out "$WORK/suite-zero2"
expect_output "ranks data-parallel under --strategy zero2" "the table names the strategy"
expect_output "\| bert_base \| sequences \| 128 sequences \| [0-9,]+ \| [0-9,]+ \| [0-9.]+% \|.*\| not run \| [0-9,]+ \| - \|" \
  "the max-batch run trains together only"
expect_json "$WORK/suite-zero2/suite.json" "r = d['runs'][-1]; assert r['strategy'] == 'zero2' and \
r['workloads'][0]['error'] == '' and r['workloads'][0]['max_batch_verified'] > 0, r" "suite.json names the strategy"
expect_exit 2 "suite --gpus-sweep 1,3,4 with zero1" -- "$MPIEXEC" -n 4 $OVERSUBSCRIBE "$SB" suite \
  --workloads bert_base --device cpu --scale tiny --memory 0.02 --strategy zero1 --gpus-sweep 1,3,4 \
  --out "$WORK/suite-sweep"
expect_lines 4 "^scalebench: error: \[rank [0-3]@.*--strategy zero1: size 3 does not divide the 4 ranks" \
  "one line on every rank"

expect_exit 2 "an unknown strategy" -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" -w bert_base "${tiny[@]}" --strategy zero4
expect_lines 2 "^scalebench: error: \[rank [0-1]@.*--strategy" "an unknown strategy: one line on every rank"
# --gpus-sweep: a size that divides the job's ranks splits the same layout into fewer shards, so the sweep and its
# checks run sharded at every k; a size that does not divide them is refused.
# zero3's points gather their chunks before use and their weights whole after their dp phase (unsupmt: its
# generation parts too); without that the ranks' stale chunks would differ. With 10 KB buckets zero3 holds its
# parameters in blocks: each point fills its k-rank shards from the initial weights and gathers them to compare.
for case in "zero2 bert_base 25" "zero3 unsupmt 25" "zero3 unsupmt 0.01"; do
  read -r strategy workload bucket_mb <<< "$case"
  json="$WORK/sweep-$strategy-$bucket_mb.json"
  expect_exit 0 "--gpus-sweep 1,2,4 with $strategy, $bucket_mb MB buckets and --check" -- "$MPIEXEC" -n 4 \
    $OVERSUBSCRIBE "$SB" -w "$workload" "${tiny[@]}" --strategy "$strategy" --bucket-mb "$bucket_mb" \
    --gpus-sweep 1,2,4 --check --json "$json"
  expect_output "check@2: .*: passed" "$strategy: the 2-rank point's check passes, sharded in 2"
  expect_json "$json" "points = {p['gpus']: p for p in d['gpus_sweep']['points']}; \
assert points[2]['measured'] and points[4]['measured'] and points[2]['weights_identical_after_dp'] and \
d['check']['passed'] and (d['dp_memory']['parameter_shard_bytes'] > 0) == ('$bucket_mb' == '0.01'), \
(d['gpus_sweep'], d['dp_memory'])" "$strategy, $bucket_mb MB: every size measured, the point's weights identical"
done
for strategy in zero1 zero2 zero3; do
  expect_exit 2 "--gpus-sweep 1,3,4 with $strategy" -- "$MPIEXEC" -n 4 $OVERSUBSCRIBE "$SB" -w bert_base "${tiny[@]}" \
    --strategy "$strategy" --gpus-sweep 1,3,4
  expect_lines 4 "^scalebench: error: \[rank [0-3]@.*--strategy $strategy: size 3 does not divide the 4 ranks" \
    "one line on every rank"
done
for strategy in zero2 zero3; do
  expect_exit 2 "$strategy with --bucket-mb auto" -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" -w bert_base "${tiny[@]}" \
    --strategy "$strategy" --bucket-mb auto
  expect_lines 2 "^scalebench: error: \[rank [0-1]@.*--bucket-mb auto with --strategy $strategy" "one line on every rank"
done
finish

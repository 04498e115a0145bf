#!/usr/bin/env bash
# --strategy zero1, zero2 and zero3 (issue 31) on the CPU device: every workload at tiny scale under mpiexec -n 2 and
# -n 4 trains with the optimizer's state and update sharded (zero2/zero3: the gradient buckets reduce-scattered, the
# shards their chunks) and the shards all-gathered (zero3: each bucket before its use in the forward and the backward
# pass, unsupmt's generation parts too), --check passing and the JSON carrying the documented keys; the weights after
# the dp phase are ddp's bit for bit where nothing clips (each element's update is the same arithmetic on the same
# reduced gradient); maxbatch fits more with the sharded state; --gpus-sweep runs sharded at sizes that divide the
# ranks; a bad strategy, a sweep size that does not divide them and zero2/zero3 with --bucket-mb auto are exit 2 with
# one line on every rank.
source "$(dirname "$0")/lib/common.bash"
VALIDATE="$(dirname "$0")/lib/validate_run_json.py"
if ! mpi_available; then echo "SKIP: no MPI"; exit 0; fi
tiny=(--device cpu --scale tiny --batch 2 --warmup 1 --steps 1)

# zero3 with 10 KB buckets: several per step, so that (at this scale) the gradients and the parameters are held in
# blocks with shards beside the arena rather than as one bucket alive through the backward pass; zero2 with the default
# (one bucket: the gradient region whole). Every such zero3 run counted where it held the shards.
blocks_runs=0 parameter_blocks_runs=0
for strategy in zero1 zero2 zero3; do
  buckets=()
  if [[ $strategy == zero3 ]]; then  # a gather per bucket and use: at least one per bucket, at most two per sub-step
    collective=reduce_scatter; scattered="the gradient buckets are reduce-scattered; "
    buckets=(--bucket-mb 0.01)
    gathers="(g['per_step'] if d['reduction_kinds'].count('bucket') <= g['per_step'] <= 3 * \
d['reduction_kinds'].count('bucket') and all(len(n) == g['per_step'] for r in d['phases']['dp']['ranks'] for n in \
r['gather_needed_ms']) else -1)"
  elif [[ $strategy == zero2 ]]; then
    collective=reduce_scatter; gathers="d['reduction_kinds'].count('bucket')"; scattered="the gradient buckets are reduce-scattered; "
  else
    collective=all_reduce; gathers="max(1, len(d['workload']['sub_steps']))"; scattered=""
  fi
  for ranks in 2 4; do
    for workload in transformer_big bert_base bert_finetune mt_dnn yolov3 nasnet_large deeplabv3 conv_seq2seq \
        pix2pixhd stylegan maskrcnn unsupmt; do
      json="$WORK/$workload-$ranks-$strategy.json"
      expect_exit 0 "$workload, $strategy on $ranks ranks, --check" -- "$MPIEXEC" -n "$ranks" $OVERSUBSCRIBE "$SB" \
        --workload "$workload" "${tiny[@]}" --strategy "$strategy" "${buckets[@]}" --check --json "$json"
      if python3 -c "import json, sys; sys.exit(json.load(open('$json'))['dp_memory']['gradient_shard_bytes'] == 0)"; then
        blocks_runs=$((blocks_runs + 1))
      fi
      if python3 -c "import json, sys; sys.exit(json.load(open('$json'))['dp_memory']['parameter_shard_bytes'] == 0)"; then
        parameter_blocks_runs=$((parameter_blocks_runs + 1))
      fi
      # With blocks, the solo phase trained a replica of its own with the regions whole (X(1) as ddp's); zero3 holds
      # its parameters in blocks only where it holds its gradients so too, with shards of the same size.
      expect_json "$json" "m = d['dp_memory']; assert d['solo_own_replica'] == (m['gradient_shard_bytes'] > 0) and \
m['parameter_shard_bytes'] in ((0, m['gradient_shard_bytes']) if '$strategy' == 'zero3' else (0,)), \
(d['solo_own_replica'], m)" "$workload -n $ranks $strategy: the solo phase's replica, the shards"
      expect_output "check \(3 SGD steps, no dropout[^)]*\).*: passed" "$workload -n $ranks $strategy: the check passes"
      expect_output "^# strategy $strategy: ${scattered}each rank's optimizer updates [0-9,]+ of the [0-9,]+ parameters" \
        "$workload -n $ranks $strategy: the console names the shard"
      python3 "$VALIDATE" "$json" "$ranks" --check && passes=$((passes + 1)) ||
        { echo "FAIL: $workload -n $ranks $strategy JSON"; failures=$((failures + 1)); }
      expect_json "$json" "assert d['config']['strategy'] == '$strategy' and d['weights_identical_after_dp'] and \
d['parameters_updated_per_rank'] * $ranks >= d['workload']['parameters'] and d['bucket_collective'] == '$collective'" \
        "$workload -n $ranks $strategy: strategy, shard, weights, collective"
      expect_json "$json" "g = d['all_gather']; assert g['per_step'] == $gathers and g['bytes_per_step'] > 0 and \
g['ms_per_step'] > 0 and g['busbw_gbps'] > 0 and g['comm_ms_per_step'] > 0 and g['exposed_ms_per_step'] >= 0 and \
all(len(r['all_gather_ms']) == len(r['step_ms']) == len(r['update_done_ms']) for r in d['phases']['dp']['ranks']) \
and all(len(r['all_gather_ms']) == len(r['step_ms']) for r in d['phases']['comm']['ranks']) and all(u <= s for r in \
d['phases']['dp']['ranks'] for u, s in zip(r['update_done_ms'], r['step_done_ms'])), g" \
        "$workload -n $ranks $strategy: the all-gathers timed, in the dp and the comm phase"
    done
  done
done
# zero1 never holds a gradient shard; zero3 at 10 KB buckets holds both shards for most workloads (the blocks need
# activations to share bytes with; at 2 sequences bert_base's are few): 23 of 24 runs on 2026-12-05.
if (( blocks_runs >= 20 )); then passes=$((passes + 1)); else
  echo "FAIL: only $blocks_runs of the 24 zero3 runs held their gradients in blocks with a shard"; failures=$((failures + 1))
fi
echo "zero3 runs with the parameters in blocks: $parameter_blocks_runs of 24"
if (( parameter_blocks_runs >= 20 )); then passes=$((passes + 1)); else
  echo "FAIL: only $parameter_blocks_runs of the 24 zero3 runs held their parameters in blocks with a shard"
  failures=$((failures + 1))
fi

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
# generation parts too); without that the ranks' stale chunks would differ.
for case in "zero2 bert_base" "zero3 unsupmt"; do
  read -r strategy workload <<< "$case"
  expect_exit 0 "--gpus-sweep 1,2,4 with $strategy and --check" -- "$MPIEXEC" -n 4 $OVERSUBSCRIBE "$SB" \
    -w "$workload" "${tiny[@]}" --strategy "$strategy" --gpus-sweep 1,2,4 --check --json "$WORK/sweep-$strategy.json"
  expect_output "check@2: .*: passed" "$strategy: the 2-rank point's check passes, sharded in 2"
  expect_json "$WORK/sweep-$strategy.json" "points = {p['gpus']: p for p in d['gpus_sweep']['points']}; \
assert points[2]['measured'] and points[4]['measured'] and points[2]['weights_identical_after_dp'] and \
d['check']['passed'], d['gpus_sweep']" "$strategy: every size measured, the point's weights identical on its ranks"
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

#!/usr/bin/env bash
# `scalebench plan`: a prediction, the --table golden (two workloads x four GPUs, 2 GPUs data-parallel, against a
# frozen copy of the calibration so only the model, the database and the workload graphs can change it), --validate
# on the calibration's own measurements, --calibrate reproducing the shipped calibration, and usage errors.
# SB_UPDATE_GOLDEN=1 rewrites the golden file (review the diff: every change is a change of prediction).
source "$(dirname "$0")/lib/common.bash"
HERE=$(cd "$(dirname "$0")" && pwd)
GOLDEN=$HERE/golden/plan_table.txt
CALIBRATION=$HERE/golden/plan_calibration.json

expect_exit 0 "plan 4 x RTX 4090" -- "$SB" plan --workload transformer_big --gpu "RTX 4090" --gpus 4
expect_output "PREDICTED" "every prediction says so"
expect_output "pcie4-host" "the 4090 has no P2P: host-staged path"
expect_output "scaling efficiency E\(4\)" "efficiency at 4 GPUs"
expect_output "batch 500 sentence pairs per GPU" "the batch in its unit (issue 28: batch units everywhere)"
expect_output "largest batch \(sentence pairs\)" "the largest batch in its unit"

expect_exit 0 "plan 64 x H100 over InfiniBand" -- "$SB" plan -w bert_base --gpu "H100 SXM" --gpus 64 --nodes 8 --fabric ib-ndr
expect_output "ib-ndr x8 adapters per node between 8 nodes" "the network path"
expect_output "calibration borrowed for ib-ndr" "borrowed calibration is said"

"$SB" plan --table -w bert_base,transformer_big --gpu "RTX 2080 Ti,RTX 4090,H100 SXM,H200" --gpus 2 \
  --calibration "$CALIBRATION" > "$WORK/table.txt" 2>&1
if [ "${SB_UPDATE_GOLDEN:-0}" = 1 ]; then
  cp "$WORK/table.txt" "$GOLDEN"
  echo "updated $GOLDEN"
fi
if diff -u "$GOLDEN" "$WORK/table.txt" > "$WORK/diff"; then
  passes=$((passes + 1))
else
  echo "FAIL: plan --table differs from $GOLDEN"
  sed 's/^/    | /' "$WORK/diff" | head -40
  failures=$((failures + 1))
fi

# No GPU here (CI): every workload, Mask R-CNN's host-sized proposal sorts and unsupMT's sub-steps included, plans
# on several GPUs, and every cell has a figure.
expect_exit 0 "plan --table, every workload, no GPU" -- "$SB" plan --table --gpu "RTX 4090,A100 SXM 80GB,H200"
expect_output "^  maskrcnn " "Mask R-CNN is planned without a GPU"
expect_output "^  unsupmt " "unsupMT is planned"
expect_lines 0 "n/a" "every cell has a prediction"

expect_exit 0 "validate against the calibration's measurements" -- "$SB" plan --validate
expect_lines 12 "^  (transformer_big|bert_base) " "one row per recorded run"

expect_exit 0 "calibrate" -- "$SB" plan --calibrate --out "$WORK/refit.json"
python3 - "$WORK/refit.json" "$HERE/../../src/plan/data/calibration.json" <<'PY' && passes=$((passes + 1)) || { echo "FAIL: --calibrate does not reproduce src/plan/data/calibration.json"; failures=$((failures + 1)); }
import json, sys
new, shipped = (json.load(open(p)) for p in sys.argv[1:3])
assert new == shipped, "refit differs from the shipped calibration"
PY

"$SB" plan -w bert_base --gpu "H100 SXM" --gpus 8 --json - 2> /dev/null > "$WORK/plan.json"
python3 - "$WORK/plan.json" <<'PY' && passes=$((passes + 1)) || { echo "FAIL: plan --json"; failures=$((failures + 1)); }
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["command"] == "plan" and doc["predicted"] is True and doc["schema_version"] == 1
p = doc["predictions"][0]
assert p["gpu"] == "H100 SXM" and p["gpus"] == 8 and p["path"]["intra_fabric"] == "nvlink4-nvswitch", p
assert 0 < p["scaling_efficiency"] <= 1 and p["step_ms"]["dp"] >= p["step_ms"]["solo"], p
assert p["memory"]["needed_bytes"] < p["memory"]["usable_bytes"]
PY

expect_exit 2 "unknown GPU" -- "$SB" plan -w bert_base --gpu "Voodoo 2"
expect_output "unknown GPU 'Voodoo 2' \(known: GTX 1080 Ti" "names the known GPUs"
expect_lines 1 "." "one line"
expect_exit 2 "part of one board's name" -- "$SB" plan -w bert_base --gpu "RTX 8000"
expect_output "unknown GPU 'RTX 8000'; did you mean 'Quadro RTX 8000'\?" "offers the board meant"
expect_exit 2 "a name of two boards" -- "$SB" plan -w bert_base --gpu A100
expect_output "GPU 'A100' is ambiguous: it names 'A100 SXM 40GB', 'A100 SXM 80GB'" "lists the candidates"
expect_exit 2 "PyTorch memory not measured" -- "$SB" plan -w bert_base --gpu H200 --framework pytorch \
  --pytorch-memory "$HERE/golden/plan_pytorch_memory_empty.json"
expect_output "no PyTorch memory measurement is stored for bert_base" "says so instead of guessing"
expect_exit 2 "bf16 on Turing" -- "$SB" plan -w bert_base --gpu "RTX 2080 Ti" --precision bf16
expect_output "has no bf16; use --precision fp16" "says what to use"
expect_exit 2 "GPUs not a multiple of nodes" -- "$SB" plan -w bert_base --gpu "H100 SXM" --gpus 6 --nodes 4
expect_exit 2 "files without --validate" -- "$SB" plan -w bert_base --gpu "H100 SXM" results.json
expect_exit 2 "not a run file" -- "$SB" plan --validate "$HERE/golden/plan_calibration.json"

# --strategy: over 4 GPUs zero2 holds one shard's optimizer state per GPU and gathers after the update, zero3 the
# same memory with each bucket gathered before its use (unsupmt: its generation parts' gathers in the parts);
# console and JSON say so; an unknown strategy is a usage error.
for strategy in ddp zero3 zero2; do  # zero2 last: the console checks below read its output
  expect_exit 0 "plan --strategy $strategy" -- "$SB" plan -w bert_base --gpu "A100 SXM 40GB" --gpus 4 \
    --strategy "$strategy" --json "$WORK/plan-$strategy.json"
done
expect_output "strategy zero2" "the console names the strategy"
expect_output "gathers alone" "and times the gathers apart"
python3 - "$WORK/plan-ddp.json" "$WORK/plan-zero2.json" <<'PY' && passes=$((passes + 1)) ||
import json, sys
ddp, zero2 = (json.load(open(p))["predictions"][0] for p in sys.argv[1:])
assert (ddp["strategy"], zero2["strategy"]) == ("ddp", "zero2")
assert zero2["memory"]["needed_bytes"] < ddp["memory"]["needed_bytes"], (zero2["memory"], ddp["memory"])
assert ddp["step_ms"]["gathers_alone"] == 0 < zero2["step_ms"]["gathers_alone"], zero2["step_ms"]
assert zero2["step_ms"]["dp"] == zero2["step_ms"]["last_gather_end"], zero2["step_ms"]
PY
  { echo "FAIL: plan --strategy zero2 against ddp"; failures=$((failures + 1)); }
expect_json "$WORK/plan-zero3.json" "z = d['predictions'][0]; assert z['strategy'] == 'zero3' and \
z['step_ms']['last_gather_end'] < z['step_ms']['dp'] and z['step_ms']['gathers_alone'] > 0, z['step_ms']" \
  "zero3: the gathers end before the step does (no gather after the update)"
for strategy in zero2 zero3; do
  expect_exit 0 "plan unsupmt --strategy $strategy" -- "$SB" plan -w unsupmt --gpu "H200 SXM" --gpus 2 \
    --strategy "$strategy" --json "$WORK/plan-unsupmt-$strategy.json"
done
python3 - "$WORK/plan-unsupmt-zero2.json" "$WORK/plan-unsupmt-zero3.json" <<'PY' && passes=$((passes + 1)) ||
import json, sys
zero2, zero3 = (json.load(open(p))["predictions"][0] for p in sys.argv[1:])
# The generation parts read the encoder and decoder: zero3 gathers them before the parts, which take longer.
assert zero3["step_ms"]["parts"] > zero2["step_ms"]["parts"], (zero2["step_ms"], zero3["step_ms"])
PY
  { echo "FAIL: plan unsupmt zero3's parts"; failures=$((failures + 1)); }
expect_exit 2 "an unknown strategy" -- "$SB" plan -w bert_base --gpu "A100 SXM 40GB" --gpus 4 --strategy zero4
finish

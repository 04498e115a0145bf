#!/usr/bin/env bash
# scripts/pytorch_reference.py builds the same models as scalebench (parameter count, matmul FLOPs and units per
# step equal `scalebench list`'s), trains at tiny scale on the CPU with a falling loss, and refuses bad
# arguments with exit 2. The argument checks run everywhere (the script refuses before importing torch); the
# rest is skipped (passes) where torch is not installed: CI does not install it. --ddp needs GPUs: not run here.
source "$(dirname "$0")/lib/common.bash"
PY=${SB_PYTHON:-python3}
REF="$(dirname "$0")/../../scripts/pytorch_reference.py"
NO_LAUNCHER=(env -u OMPI_COMM_WORLD_RANK -u RANK)  # as if started without mpirun or torchrun

expect_exit 2 "tf32 on the CPU" -- "$PY" "$REF" --workload bert_base --device cpu --precision tf32
expect_output "--precision tf32 needs the cuda device" "tf32 on the CPU is refused"
expect_exit 2 "unknown workload" -- "$PY" "$REF" --workload resnet9000
expect_lines 1 "." "a usage error is one line"
expect_exit 2 "a convolutional workload at tiny scale" -- "$PY" "$REF" --workload yolov3 --scale tiny --device cpu
expect_output "--workload yolov3 has no tiny scale here" "the library-built models have no tiny scale"
expect_exit 2 "--ddp without a launcher" -- "${NO_LAUNCHER[@]}" "$PY" "$REF" --workload bert_base --ddp
expect_output "--ddp needs a launcher" "--ddp without a launcher is refused"
expect_lines 1 "." "the --ddp launcher error is one line"
expect_exit 2 "--ddp with inconsistent ranks" -- "${NO_LAUNCHER[@]}" RANK=3 WORLD_SIZE=2 LOCAL_RANK=0 \
  "$PY" "$REF" --workload bert_base --ddp
expect_output "inconsistent RANK, WORLD_SIZE, LOCAL_RANK" "--ddp with rank 3 of 2 is refused"
expect_exit 2 "--ddp on the CPU" -- "$PY" "$REF" --workload bert_base --ddp --device cpu
expect_output "--ddp needs the cuda device" "--ddp on the CPU is refused"
expect_exit 2 "--bucket-mb without --ddp" -- "$PY" "$REF" --workload bert_base --bucket-mb 10
expect_output "--bucket-mb needs --ddp" "--bucket-mb without --ddp is refused"
expect_exit 2 "a zero DDP bucket" -- env OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=1 OMPI_COMM_WORLD_LOCAL_RANK=0 \
  "$PY" "$REF" --workload bert_base --ddp --bucket-mb 0
expect_output "--bucket-mb must be positive" "a zero DDP bucket is refused"

if ! "$PY" -c "import torch" > /dev/null 2>&1; then
  echo "skipped the torch runs: $PY cannot import torch"
  finish
  exit
fi
export OMP_NUM_THREADS=1  # tiny models; threads only contend on a shared CI machine

# check_json DESCRIPTION ARGS... < python: runs the Python checks on stdin with ARGS, counts a pass or a failure.
check_json() {
  local what=$1
  shift
  if python3 - "$@"; then passes=$((passes + 1)); else echo "FAIL: $what"; failures=$((failures + 1)); fi
}
"$SB" list --json - 2> /dev/null > "$WORK/list.json"
for workload in transformer_big bert_base conv_seq2seq pix2pixhd stylegan unsupmt; do
  expect_exit 0 "$workload: full-scale model on the meta device" -- "$PY" "$REF" --workload $workload --count-only
  grep '^{' "$WORK/out" > "$WORK/count.json"
  check_json "$workload: same counts as scalebench list" "$WORK/list.json" "$WORK/count.json" $workload <<'PY'
import json, sys
ours = {w["name"]: w for w in json.load(open(sys.argv[1]))["workloads"]}[sys.argv[3]]
torch_side = json.load(open(sys.argv[2]))
assert torch_side["parameters"] == ours["parameters"], (torch_side, ours)
assert torch_side["batch"] == ours["default_batch"] and torch_side["unit"] == ours["unit"], (torch_side, ours)
assert abs(torch_side["units_per_step"] - ours["units_per_step"]) < 1e-9, (torch_side, ours)
assert abs(torch_side["train_flops_per_step"] / 1e9 - ours["train_gflops_per_step"]) < 1e-6, (torch_side, ours)
PY
  expect_exit 0 "$workload: tiny CPU training" -- "$PY" "$REF" --workload $workload --scale tiny --device cpu \
    --batch 4 --steps 3 --warmup 0 --lr 1e-3
  grep '^{' "$WORK/out" > "$WORK/run.json"
  check_json "$workload: tiny run JSON" "$WORK/run.json" <<'PY'
import json, math, sys
doc = json.load(open(sys.argv[1]))
assert doc["framework"] == "pytorch" and doc["status"] == "ok", doc
if doc["workload"] == "stylegan":  # loss_D + loss_G is a saddle: it moves, it need not fall
    assert math.isfinite(doc["loss_last"]) and doc["loss_last"] != doc["loss_first"], doc
else:
    assert doc["loss_last"] < doc["loss_first"], doc
assert doc["step_ms_p10"] <= doc["step_ms_median"] <= doc["step_ms_p90"] and doc["units_per_s"] > 0, doc
PY
done
# stylegan's formulations compute the same model: the reference's depthwise-conv blur and F.conv2d beside the
# defaults (shifted-sum blur, convs with a regradable backward for R1), same first loss, same training within
# rounding; --profile writes the profiled step's op table.
expect_exit 0 "stylegan: tiny run, reference formulation, profiled" -- "$PY" "$REF" --workload stylegan --scale tiny \
  --device cpu --precision fp32 --batch 4 --steps 3 --warmup 0 --stylegan-blur depthwise --stylegan-conv native \
  --profile "$WORK/profile.txt"
grep '^{' "$WORK/out" > "$WORK/native.json"
expect_exit 0 "stylegan: tiny run, default formulation" -- "$PY" "$REF" --workload stylegan --scale tiny \
  --device cpu --precision fp32 --batch 4 --steps 3 --warmup 0
grep '^{' "$WORK/out" > "$WORK/default.json"
check_json "stylegan: both formulations train alike; the profile has an op table" "$WORK/native.json" \
  "$WORK/default.json" "$WORK/profile.txt" <<'PY'
import json, sys
native, default = (json.load(open(path)) for path in sys.argv[1:3])
assert native["loss_first"] == default["loss_first"], (native, default)
assert abs(native["loss_last"] - default["loss_last"]) <= 1e-4 * abs(native["loss_first"]), (native, default)
table = open(sys.argv[3]).read()
assert "Self CPU" in table and "aten::" in table, table[:500]
PY
# maskrcnn: torchvision's MaskRCNN (FrozenBatchNorm, conv1 and layer1 frozen) trains as many parameters as
# scalebench's graph; its forward FLOPs are shared/WORKLOADS.md's measured count, not the graph's.
expect_exit 0 "maskrcnn: torchvision model on the meta device" -- "$PY" "$REF" --workload maskrcnn --count-only
grep '^{' "$WORK/out" > "$WORK/count.json"
check_json "maskrcnn: same trained parameters as scalebench list" "$WORK/list.json" "$WORK/count.json" <<'PY'
import json, sys
ours = {w["name"]: w for w in json.load(open(sys.argv[1]))["workloads"]}["maskrcnn"]
torch_side = json.load(open(sys.argv[2]))
assert torch_side["parameters"] == ours["parameters"] == 44125173, (torch_side, ours)
assert ours["frozen_parameters"] == 222400, ours
assert torch_side["batch"] == ours["default_batch"] and torch_side["unit"] == ours["unit"], (torch_side, ours)
PY
finish

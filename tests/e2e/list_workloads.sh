#!/usr/bin/env bash
# `scalebench list`: every registered workload with its exact parameter count, as a table and as JSON.
source "$(dirname "$0")/lib/common.bash"
expect_exit 0 "list" -- "$SB" list
expect_output "transformer_big .* 209911808" "transformer_big's parameter count"
expect_output "bert_base .* 110106428" "bert_base's parameter count"
expect_output "bert_finetune .* 108893186" "bert_finetune's parameter count"
expect_output "mt_dnn .* 371933205" "mt_dnn's parameter count"
expect_output "yolov3 .* 61949149" "yolov3's parameter count"
expect_output "conv_seq2seq .* 216005176" "conv_seq2seq's parameter count"
expect_output "deeplabv3 .* 58630997" "deeplabv3's parameter count"
expect_output "nasnet_large .* 88753150" "nasnet_large's parameter count"
expect_output "pix2pixhd .* 191261862 +12944960 " "pix2pixhd's trainable and frozen (VGG19) parameter counts"
expect_output "maskrcnn .* 44125173 +222400 " "maskrcnn's trained and frozen parameter counts"
expect_output "stylegan .* 49306876 +26219627 " "stylegan's trainable (G + D) and frozen (EMA copy Gs) parameter counts"
expect_output "unsupmt .* 310047094" "unsupmt's parameter count"
expect_output "transformer_big .* tokens +500 sentence pairs " "transformer_big's batch is sentence pairs, its unit tokens"
expect_output "bert_base .* sequences +128 sequences " "bert_base's batch in sequences"
expect_output "grad \\(MiB\\)" "gradient size in MiB"
"$SB" list --json - 2> /dev/null > "$WORK/list.json"
python3 - "$WORK/list.json" <<'PY' && passes=$((passes + 1)) || { echo "FAIL: list JSON"; failures=$((failures + 1)); }
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["command"] == "list" and doc["schema_version"] == 1
counts = {w["name"]: w["parameters"] for w in doc["workloads"]}
assert counts["transformer_big"] == 209911808 and counts["bert_base"] == 110106428, counts
assert counts["bert_finetune"] == 108893186, counts
assert counts["mt_dnn"] == 371933205, counts
assert counts["yolov3"] == 61949149, counts
assert counts["conv_seq2seq"] == 216005176, counts
assert counts["deeplabv3"] == 58630997 and counts["nasnet_large"] == 88753150, counts
assert counts["pix2pixhd"] == 191261862 and counts["maskrcnn"] == 44125173, counts
frozen = {w["name"]: w["frozen_parameters"] for w in doc["workloads"]}
assert frozen["pix2pixhd"] == 12944960 and frozen["maskrcnn"] == 222400, frozen
assert counts["stylegan"] == 26219627 + 23087249 and frozen["stylegan"] == 26219627, (counts, frozen)
assert frozen["yolov3"] == 0 and frozen["unsupmt"] == 0, frozen
assert counts["unsupmt"] == 310047094, counts
units = {w["name"]: (w["unit"], w["batch_unit"]) for w in doc["workloads"]}
assert units["transformer_big"] == ("tokens", "sentence pairs") and units["bert_base"] == ("sequences", "sequences"), units
assert all(w["forward_gflops_per_unit"] > 0 and w["gradient_bytes"] > 0 for w in doc["workloads"])
PY
finish

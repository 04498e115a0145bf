#!/usr/bin/env bash
# The main job's measurement (scripts/quickstart.sh on GPUs): `suite --reference-only` trains every workload asked
# for at its reference batch only, shows "workload k of n" with the time left, prints the throughput table with
# E(N) and the guide's normalised column, and its files (schema_version 1) are read back by compare (one HTML
# page) and report. Here on the CPU device, tiny scale, two workloads.
source "$(dirname "$0")/lib/common.bash"
quick=("$SB" suite --device cpu --scale tiny --reference-only --warmup 0 --steps 1 --workloads bert_base,mt_dnn)
expect_exit 0 "suite --reference-only" -- "${quick[@]}" --out "$WORK/quick"
expect_output "\[suite 2/2, .* left\] mt_dnn: training at the reference batch" "one progress stage per workload"
expect_lines 0 "max batch|Maximum batch" "no maxbatch search or max-batch run"
expect_output "\| workload \| unit \| reference batch \| .* alone \| .* together \| E\(1\) \| x RTX 8000 \(guide\) \|" \
  "the table's columns"
expect_output "\| bert_base \| sequences \| 128 sequences \| [0-9,]+ \| - \| - \| [0-9.]+x \|" "bert_base's row"

summary="$WORK/quick/suite.json"
python3 - "$summary" << 'PY' && passes=$((passes + 1)) || { echo "FAIL: suite files' schema_version"; failures=$((failures + 1)); }
import json, pathlib, sys
summary = json.load(open(sys.argv[1]))
assert summary["schema_version"] == 1 and summary["command"] == "suite" and summary["kind"] == "suite_summary"
for name in summary["runs"][-1]["files"]:
    doc = json.load(open(pathlib.Path(sys.argv[1]).parent / name))
    assert doc["schema_version"] == 1 and doc["kind"] == "suite_workload" and doc["maxbatch"] is None, name
    assert doc["runs"]["reference"]["status"] == "ok" and doc["runs"]["max_batch"] is None, name
PY

expect_exit 0 "compare reads suite.json" -- "$SB" compare "$summary" --html "$WORK/quick.html"
expect_output "bert_base" "compare's table has bert_base"
expect_output "mt_dnn" "compare's table has mt_dnn"
grep -q "mt_dnn" "$WORK/quick.html" && passes=$((passes + 1)) || { echo "FAIL: the HTML lacks mt_dnn"; failures=$((failures + 1)); }
workload_file=$(ls "$WORK"/quick/bert_base-*.json | head -1)
expect_exit 0 "report reads a suite workload file" -- "$SB" report "$workload_file"
expect_output "bert_base" "report names the workload"
finish

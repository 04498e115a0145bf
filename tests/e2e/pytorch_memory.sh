#!/usr/bin/env bash
# scripts/pytorch_memory.py (plan --framework pytorch's measurements) on the CPU: its usage errors, the line fit,
# the largest-batch search against a simulated capacity, and a document of fit lines read by `scalebench plan`,
# whose PyTorch largest batch is the line applied to the card. fit and cap need a GPU (exit 3 here);
# `scripts/gpu_check.sh planmem` runs them on one.
source "$(dirname "$0")/lib/common.bash"
PY=${SB_PYTHON:-python3}
SCRIPT="$(dirname "$0")/../../scripts/pytorch_memory.py"

expect_exit 2 "no mode" -- "$PY" "$SCRIPT"
expect_lines 1 "." "a usage error is one line"
expect_exit 2 "unknown workload" -- "$PY" "$SCRIPT" fit --workload resnet9000
expect_output "--workload resnet9000 is not one of" "names the workloads"
expect_exit 2 "one batch" -- "$PY" "$SCRIPT" fit --workload bert_base --batches 8,8
expect_output "two or more different batches" "a line needs two batches"
expect_exit 2 "a zero cap" -- "$PY" "$SCRIPT" cap --workload bert_base --limit-bytes 0 --start 8
expect_exit 2 "caps not numbers" -- "$PY" "$SCRIPT" validate --scalebench "$SB" --pytorch-memory x --caps-gib 24,big

PYTHONPATH="$(dirname "$SCRIPT")" "$PY" - <<'PY' && passes=$((passes + 1)) || { echo "FAIL: the fit and the search"; failures=$((failures + 1)); }
import pytorch_memory as m
fixed, per_unit = m.fit_line([(100, 3.0e9), (200, 5.0e9), (300, 7.0e9)])
assert abs(fixed - 1.0e9) < 1e-3 and abs(per_unit - 2.0e7) < 1e-9, (fixed, per_unit)
for capacity in (1, 137, 1000, 4097):
    for start in (1, 50, 137, 138, 3000):
        tried = []
        def trains(b):
            tried.append(b)
            return b <= capacity
        largest, attempts = m.largest_that_trains(trains, start, 40)
        assert largest == capacity, (capacity, start, largest, tried)
        assert len(attempts) == len(set(tried)) <= 30, (capacity, start, tried)
largest, _ = m.largest_that_trains(lambda b: False, 5, 10)
assert largest == 0
table = m.comparison_table([dict(workload="w", framework="pytorch", card_gib=24, predicted=110, measured=100)])
assert "| w | pytorch | 24 | 110 | 100 | +10.0% |" in table, table
PY

# Two made-up lines (the arithmetic, not a measurement) through `document`, then plan reads them.
cat > "$WORK/fits.jsonl" <<'JSON'
{"workload": "bert_base", "mode": "eager", "precision": "bf16", "fixed_bytes": 2147483648.0, "bytes_per_unit": 10485760.0, "points": [{"batch": 100, "peak_allocated_bytes": 3196059648, "peak_reserved_bytes": 3300000000}, {"batch": 200, "peak_allocated_bytes": 4244635648, "peak_reserved_bytes": 4400000000}], "gpu": "test", "torch": "test", "allocator": "expandable_segments:True", "date": "2026-12-02", "command": "test"}
{"workload": "bert_base", "mode": "compiled", "precision": "bf16", "fixed_bytes": 2147483648.0, "bytes_per_unit": 5242880.0, "points": [{"batch": 100, "peak_allocated_bytes": 2671771648, "peak_reserved_bytes": 2700000000}, {"batch": 200, "peak_allocated_bytes": 3196059648, "peak_reserved_bytes": 3300000000}], "gpu": "test", "torch": "test", "allocator": "expandable_segments:True", "date": "2026-12-02", "command": "test"}
JSON
expect_exit 0 "document" -- "$PY" "$SCRIPT" document "$WORK/fits.jsonl"
cp "$WORK/out" "$WORK/pytorch_memory.json"
"$SB" plan -w bert_base --gpu "RTX 4090" --framework pytorch --pytorch-memory "$WORK/pytorch_memory.json" --json - \
  > "$WORK/plan.json" 2> /dev/null
"$PY" - "$WORK/plan.json" <<'PY' && passes=$((passes + 1)) || { echo "FAIL: plan applies the lines"; failures=$((failures + 1)); }
import json, sys
p = json.load(open(sys.argv[1]))["predictions"][0]
memory = p["memory"]
assert p["framework"] == "pytorch"
usable = memory["usable_bytes"]
assert usable == 24 * 2**30 - memory["reserve_bytes"], memory
got = {f["mode"]: f["max_batch"] for f in memory["pytorch_max_batch"]}
assert got == {"eager": (usable - 2**31) // 10485760, "compiled": (usable - 2**31) // 5242880}, got
PY
# validate's comparisons, with a stand-in for scalebench (plan's and maxbatch's JSON) on this machine without a
# GPU: the scalebench row compares, the PyTorch cap fails for want of a GPU and says so in its row.
cat > "$WORK/fake_scalebench" <<'SH'
#!/usr/bin/env bash
case "$1" in
  plan) echo '{"predictions": [{"memory": {"max_batch": [{"precision": "bf16", "max_batch": 100}],
        "pytorch_max_batch": [{"mode": "eager", "max_batch": 50}], "reserve_bytes": 1342177280}}]}' ;;
  maxbatch) echo '{"results": [{"verified": 97}]}' ;;
esac
SH
chmod +x "$WORK/fake_scalebench"
# No GPU for the cap, also on a GPU machine (there the cap would train the test's made-up line for real).
expect_exit 0 "validate" -- env CUDA_VISIBLE_DEVICES= "$PY" "$SCRIPT" validate --scalebench "$WORK/fake_scalebench" \
  --pytorch-memory "$WORK/pytorch_memory.json" --workloads bert_base --caps-gib 24 --out "$WORK/rows.jsonl"
expect_output "^\| bert_base \| scalebench \| 24 \| 100 \| 97 \| \+3\.1% \|$" "predicted beside measured with the error"
expect_output "^\| bert_base \| pytorch \| 24 \| 50 \| .*(needs a CUDA GPU|torch is not installed)" "a cap that cannot run says why"
expect_output "^bert_base +eager +fixed +2\.00 GiB" "the fitted lines are printed"
expect_exit 2 "the same line twice" -- "$PY" "$SCRIPT" document "$WORK/fits.jsonl" "$WORK/fits.jsonl"
expect_output "bert_base eager is measured twice" "a workload and mode once"
finish

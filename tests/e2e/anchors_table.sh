#!/usr/bin/env bash
# scripts/anchors_table.py, the table of `gpu_check.sh anchors`: the ratio is against the faster PyTorch (eager, or
# torch.compile in the faster of its default and reduce-overhead modes) and names it; a compile that fell back to eager is no compiled figure; tools that credit different units get no ratio;
# a call's anchors.tgz reads as its folder, and a later folder's file wins. scalebench's side is a real tiny CPU
# run; the PyTorch sides are written here (their script needs torch).
source "$(dirname "$0")/lib/common.bash"
PY=${SB_PYTHON:-python3}
TABLE="$(dirname "$0")/../../scripts/anchors_table.py"
mkdir -p "$WORK/first/anchors" "$WORK/second"
expect_exit 0 "tiny scalebench run" -- "$SB" run --device cpu --workload transformer_big --scale tiny --batch 4 \
  --steps 2 --warmup 0 --json "$WORK/first/anchors/sb_transformer_big.json"
cp "$WORK/first/anchors/sb_transformer_big.json" "$WORK/first/anchors/sb_bert_base.json"
"$PY" - "$WORK/first/anchors" "$WORK/second" <<'PY'
import json, sys
first, second = sys.argv[1:3]
sb = json.load(open(f"{first}/sb_transformer_big.json"))
units = sb["workload"]["units_per_step_per_rank"]
rate = sb["phases"]["solo"]["units_per_s_per_gpu"]
def pytorch(path, per_s, units=units, **extra):
    doc = dict(framework="pytorch", workload="x", status="ok", units_per_step=units, units_per_s=per_s,
               step_ms_median=1e3 * units / per_s, unit="tokens", compiled=False, compile_error=None)
    doc.update(extra)
    with open(path, "w") as f:
        f.write("# progress on stderr goes elsewhere\n" + json.dumps(doc) + "\n")
pytorch(f"{first}/eager_transformer_big.json", rate / 2)             # superseded by the second folder's
pytorch(f"{second}/eager_transformer_big.json", rate / 4)
pytorch(f"{first}/compiled_transformer_big.json", rate / 2, compiled=True)
pytorch(f"{first}/eager_bert_base.json", rate / 3, units=units + 1)  # a different credit: no ratio
pytorch(f"{first}/compiled_bert_base.json", rate, compile_error="BackendCompilerFailed: no double backward")
# reduce-overhead (CUDA graphs) faster than the default mode: the compiled bar, named as such
pytorch(f"{second}/ro_transformer_big.json", rate / 1.6, compiled=True, compile_mode="reduce-overhead")
pytorch(f"{first}/ro_bert_base.json", rate, compile_error="skipping cudagraphs due to mutated inputs")
PY
tar czf "$WORK/first/anchors.tgz" -C "$WORK/first" anchors
expect_exit 0 "the table over a call's tgz and a later folder" -- "$PY" "$TABLE" "$WORK/first/anchors.tgz" "$WORK/second"
expect_output "\| transformer_big .*\| 1\.60x compiled \(reduce-overhead\)" \
  "the ratio is against the faster PyTorch, reduce-overhead's CUDA graphs included, named"
expect_output "note: bert_base compiled \(reduce-overhead\): fell back to eager: skipping cudagraphs" \
  "a reduce-overhead fallback is no compiled figure either"
expect_output "\| bert_base .*credits differ: eager" "different credited units give no ratio"
expect_output "note: bert_base compiled: fell back to eager: BackendCompilerFailed" "a fallback is no compiled figure"
expect_lines 2 "^\| (transformer_big|bert_base) " "one row per workload"
expect_exit 2 "no folder" -- "$PY" "$TABLE"
expect_exit 3 "a folder without files" -- "$PY" "$TABLE" "$WORK/second/none"
finish

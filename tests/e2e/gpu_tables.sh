#!/usr/bin/env bash
# The device calls' two table scripts, on real tiny CPU runs: scripts/ab_table.py (a build before and after a
# change: equal parameters and losses and units/s within the tolerance pass, anything else is flagged, exit 1)
# and scripts/graph_table.py (eager against replayed steps, with the CPU hog's runs beside their own unloaded run).
source "$(dirname "$0")/lib/common.bash"
PY=${SB_PYTHON:-python3}
SCRIPTS="$(dirname "$0")/../../scripts"
mkdir -p "$WORK/ab" "$WORK/graphs"
tiny=(run --device cpu --workload bert_base --scale tiny --batch 2 --warmup 1 --steps 3 --phases solo --force)
expect_exit 0 "tiny run (before)" -- "$SB" "${tiny[@]}" --json "$WORK/ab/before_bert_base.json"
expect_exit 0 "tiny run (after)" -- "$SB" "${tiny[@]}" --json "$WORK/ab/after_bert_base.json"
# The same binary twice: parameters and losses bit-identical on the CPU; a tolerance wide enough for this
# machine's timing noise, so only the numbers can fail it.
expect_exit 0 "ab_table: the same build twice" -- "$PY" "$SCRIPTS/ab_table.py" "$WORK/ab" 1000
expect_output "\| bert_base \| [0-9,]+ \| .* \| same \|" "a row says same"
expect_output "1 workloads, 0 flagged" "nothing flagged"
"$PY" - "$WORK/ab" <<'PY'
import json, sys
path = sys.argv[1] + "/after_bert_base.json"
doc = json.load(open(path))
before = json.load(open(sys.argv[1] + "/before_bert_base.json"))
doc["phases"]["solo"]["ranks"][0]["loss_last"] += 0.01               # a changed result
doc["phases"]["solo"]["units_per_s_per_gpu"] = 1.05 * before["phases"]["solo"]["units_per_s_per_gpu"]  # 5% faster
json.dump(doc, open(path, "w"))
PY
expect_exit 1 "ab_table: a changed loss and 5% more units/s are flagged" -- "$PY" "$SCRIPTS/ab_table.py" "$WORK/ab"
expect_output "\| \+5\.00% \| last loss differs; beyond ±2% \|" "both named, the change in percent"
cp "$WORK/ab/before_bert_base.json" "$WORK/ab/before_transformer_big.json"
expect_exit 1 "ab_table: a side missing" -- "$PY" "$SCRIPTS/ab_table.py" "$WORK/ab" 1000
expect_output "\| transformer_big \| before: ok; after: unreadable.* MISSING \|" "the missing side is named"

expect_exit 0 "tiny run (eager)" -- "$SB" "${tiny[@]}" --cuda-graph off --json "$WORK/graphs/off_bert_base.json"
"$PY" - "$WORK/graphs" <<'PY'
import json, sys
d = sys.argv[1]
off = json.load(open(d + "/off_bert_base.json"))
def variant(name, factor, status):
    doc = json.loads(json.dumps(off))
    solo = doc["phases"]["solo"]
    solo["units_per_s_per_gpu"] *= factor
    solo["cuda_graph"] = status
    json.dump(doc, open(f"{d}/{name}_bert_base.json", "w"))
variant("on", 1.25, "on")
variant("off_hog", 0.5, "off (--cuda-graph off)")
variant("on_hog", 1.25 * 0.99, "on")
PY
expect_exit 0 "graph_table" -- "$PY" "$SCRIPTS/graph_table.py" "$WORK/graphs"
expect_output "\| bert_base \| [0-9,.]+ \| [0-9,.]+ \| \+25\.0% \| .* \| on \| [0-9,.]+ \(-50\.0%\) \| [0-9,.]+ \(-1\.0%\) \|" \
  "graph vs eager, and each hog run against its own unloaded run"
expect_exit 2 "graph_table without a folder" -- "$PY" "$SCRIPTS/graph_table.py"
finish

#!/usr/bin/env bash
# `scalebench compare` and `report` on two tiny CPU runs: both workloads in one table (console, Markdown, CSV,
# --out), the one-run report, and a foreign file refused with exit 2 and its name.
source "$(dirname "$0")/lib/common.bash"
for workload in bert_base transformer_big; do
  expect_exit 0 "$workload tiny run" -- "$SB" run --device cpu --workload "$workload" --scale tiny --batch 2 \
    --steps 2 --warmup 1 --json "$WORK/$workload.json"
done
expect_exit 0 "compare two runs" -- "$SB" compare "$WORK/bert_base.json" "$WORK/transformer_big.json"
expect_output "^  bert_base \(sequences/s\) +[0-9]+\.[0-9]" "the bert_base row"
expect_output "^  transformer_big \(tokens/s\) +[0-9]+\.[0-9]" "the transformer_big row (the same label: one column)"
expect_output "^# Throughput relative to " "the ratio table"
expect_exit 0 "compare as Markdown with labels" -- "$SB" compare "$WORK/bert_base.json" \
  --label bert_base.json=first "$WORK/transformer_big.json" --label "$WORK/transformer_big.json=second" \
  --baseline second --markdown
expect_output "^\| workload \| first \| second \|$" "the Markdown header names both labels"
expect_output "^\| transformer_big \(tokens/s\) \| - \| 1\.00 \|$" "ratios to the chosen baseline"
expect_exit 0 "compare as CSV to a file" -- "$SB" compare "$WORK/bert_base.json" "$WORK/transformer_big.json" \
  --csv --out "$WORK/compare.csv"
expect_lines 0 "." "--out writes nothing to stdout"
cp "$WORK/compare.csv" "$WORK/out"
expect_lines 3 "," "a header and one row per workload"
expect_output "^[^,]+,[^,]*transformer_big.json,run,transformer_big,tokens,1," "the CSV row of transformer_big"
expect_exit 0 "report one run" -- "$SB" report "$WORK/bert_base.json"
expect_output "^  solo +[0-9]+\.[0-9]{3}" "the solo phase row"
expect_output "^  scaling efficiency E\(N\) \(%\) +-$" "no efficiency with one rank"

echo '{"schema_version": 1, "tool": "other", "command": "train"}' > "$WORK/foreign.json"
expect_exit 2 "a foreign file" -- "$SB" compare "$WORK/bert_base.json" "$WORK/foreign.json"
expect_output "compare: .*foreign\.json: command \"train\" is not supported \(run, bandwidth, suite\)" "the file is named"
echo 'not json' > "$WORK/text.json"
expect_exit 2 "not JSON" -- "$SB" report "$WORK/text.json"
expect_output "report: .*text\.json: not JSON \(syntax error at byte 2\)" "report names the file"
expect_exit 2 "an unknown baseline" -- "$SB" compare "$WORK/bert_base.json" --baseline nobody
expect_output "--baseline 'nobody' is not a run label" "the baseline is named"
expect_exit 2 "a missing file" -- "$SB" compare "$WORK/missing.json"
expect_output "compare: .*missing\.json: cannot read \(No such file or directory\)" "the missing file is named"
finish

#!/usr/bin/env bash
# A tied embedding table's gradient reduced in two halves (issue 26, --embedding-grad, src/core/ops/embedding_rows.h)
# on the CPU device at tiny scale: sparse and dense, --check passes at 2 and 4 ranks for the three workloads that
# tie a table (transformer_big, bert_base, unsupmt with its sub-steps); the console and the JSON say how the table
# crossed the wire, and a batch that touches few words sends fewer rows than the table has; auto (the default) is
# sparse where ranks x ids is at most half the table and dense, saying why, where not; --no-overlap falls back to
# dense and says why; a workload without a tied table says nothing; a bad mode is exit 2 on every rank.
source "$(dirname "$0")/lib/common.bash"
if ! mpi_available; then echo "SKIP: no MPI"; exit 0; fi
tiny=(--device cpu --scale tiny --batch 1 --warmup 1 --steps 2)

for workload in transformer_big bert_base unsupmt; do
  for ranks in 2 4; do
    expect_exit 0 "$workload -n $ranks --check (sparse rows)" -- "$MPIEXEC" -n "$ranks" $OVERSUBSCRIBE "$SB" \
      -w "$workload" "${tiny[@]}" --check --embedding-grad sparse --json "$WORK/$workload.$ranks.json"
    expect_output "# tied embedding: the table's dense part reduced as soon as it is written; the lookups' rows apart, [0-9]+ of [0-9]+ rows at most per reduction, after the backward pass \(--embedding-grad sparse\)" \
      "$workload -n $ranks: the console says how the table was reduced"
    expect_output "check \(3 SGD steps, no dropout[^)]*\).*: passed" "$workload -n $ranks: --check passes with sparse rows"
  done
  expect_exit 0 "$workload -n 2 --check --embedding-grad dense" -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" \
    -w "$workload" "${tiny[@]}" --check --embedding-grad dense --json "$WORK/$workload.dense.json"
  expect_output "# tied embedding: the table's whole gradient in the buckets, reduced after its last node \(--embedding-grad dense\)" \
    "$workload dense: the console says so"
  expect_output "check \(3 SGD steps, no dropout[^)]*\).*: passed" "$workload dense: --check passes"
done

python3 - "$WORK" <<'PY' && passes=$((passes + 1)) || { echo "FAIL: the JSON of the tied tables"; failures=$((failures + 1)); }
import json, sys
work = sys.argv[1]
for workload in ["transformer_big", "bert_base", "unsupmt"]:
    for ranks in [2, 4]:
        d = json.load(open(f"{work}/{workload}.{ranks}.json"))
        e, kinds, sizes = d["embedding_grad"], d["reduction_kinds"], d["buckets_bytes"]
        assert d["config"]["embedding_grad"] == "sparse", d["config"]
        assert e["mode"] == "sparse" and e["tables"] == 1 and e["dense_because"] is None, e
        assert 0 < e["rows_per_reduction"] <= e["table_rows"], e
        # Per sub-step: the row flags (int32, one per table row), the buckets, the packed rows (fp32 on the wire).
        steps = max(1, len(d["workload"]["sub_steps"]))
        assert len(kinds) == len(sizes) and kinds.count("row flags") == steps and kinds.count("rows") == steps, kinds
        assert all(s == e["table_rows"] * 4 for s, k in zip(sizes, kinds) if k == "row flags"), (sizes, kinds)
        rows_bytes = [s for s, k in zip(sizes, kinds) if k == "rows"]
        assert all(s == rows_bytes[0] and s % (e["rows_per_reduction"] * 4) == 0 for s in rows_bytes), (rows_bytes, e)
        assert d["check"]["passed"], d["check"]
        timelines = d["phases"]["dp"]["ranks"][0]["bucket_ms"]
        assert all(len(step) == len(kinds) for step in timelines), "a duration per reduction"
    dense = json.load(open(f"{work}/{workload}.dense.json"))
    assert dense["embedding_grad"]["mode"] == "dense" and "rows" not in dense["reduction_kinds"], dense["embedding_grad"]
# bert_base's tiny batch touches a few of its 1,100 words: fewer rows cross the wire than the table has.
b = json.load(open(f"{work}/bert_base.2.json"))["embedding_grad"]
assert b["rows_per_reduction"] < b["table_rows"], b
PY

# auto: bert_base's 2 x 16 ids of 1,100 words: sparse; transformer_big's 4 x 16 ids of 64: dense, and why.
expect_exit 0 "bert_base -n 2 auto" -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" -w bert_base "${tiny[@]}" --phases solo,dp
expect_output "rows at most per reduction, after the backward pass \(--embedding-grad auto\)" "auto: sparse where it saves"
expect_exit 0 "transformer_big -n 4 auto" -- "$MPIEXEC" -n 4 $OVERSUBSCRIBE "$SB" -w transformer_big "${tiny[@]}" \
  --phases solo,dp --json "$WORK/auto_dense.json"
expect_output "reduced after its last node \(--embedding-grad auto: dense, as ranks x the lookups' ids = 64 could touch more than half of the 64 rows\)" \
  "auto: dense where the rows could cover the table, and why"
expect_json "$WORK/auto_dense.json" 'e=d["embedding_grad"]; assert d["config"]["embedding_grad"] == "auto" and e["mode"] == "dense" and "more than half" in e["dense_because"], e' \
  "auto's dense JSON"

expect_exit 0 "transformer_big --no-overlap" -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" -w transformer_big "${tiny[@]}" \
  --no-overlap --embedding-grad sparse --phases solo,dp --json "$WORK/no_overlap.json"
expect_output "--embedding-grad sparse: dense, as --no-overlap reduces every bucket after the backward pass" \
  "--no-overlap: dense, and why"
expect_json "$WORK/no_overlap.json" 'e=d["embedding_grad"]; assert e["mode"] == "dense" and "no-overlap" in e["dense_because"], e' \
  "--no-overlap's JSON"

expect_exit 0 "conv_seq2seq (no tied table)" -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" -w conv_seq2seq "${tiny[@]}" \
  --phases solo,dp --json "$WORK/convs2s.json"
expect_lines 0 "# tied embedding" "conv_seq2seq: no tied-table line"
expect_json "$WORK/convs2s.json" 'assert d["embedding_grad"] is None and set(d["reduction_kinds"]) == {"bucket"}, d["embedding_grad"]' \
  "conv_seq2seq's JSON"

expect_exit 2 "a bad --embedding-grad" -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" -w transformer_big "${tiny[@]}" \
  --embedding-grad rows
expect_lines 2 "^scalebench: error: \[rank [0-1]@.*--embedding-grad" "a bad mode: one line on every rank"
finish

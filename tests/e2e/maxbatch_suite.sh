#!/usr/bin/env bash
# maxbatch and suite on the CPU device (issue 5's CI bar): against an artificial --memory budget the predicted
# batch trains and the next one really fails to allocate, on one and on two ranks; suite on two tiny workloads
# under mpiexec -n 2 writes one JSON per workload and suite.json, appends on a rerun and replaces with --force.
source "$(dirname "$0")/lib/common.bash"
tiny=(--device cpu --scale tiny)

json_field() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$@"; }

expect_exit 0 "maxbatch against a 10 MiB budget" -- "$SB" maxbatch -w bert_base "${tiny[@]}" --memory 0.01 \
  --json "$WORK/mb.json"
expect_output "^# PREDICTION for a card with 10.2 MiB" "a --memory answer is labelled a prediction"
expect_output "one more runs out of memory" "one batch up fails"
expect_output "parameters .* gradients .* optimizer state .* activations .* workspace" "bytes by category"
if [ "$(json_field "$WORK/mb.json" '(lambda r: (r["predicted"]==r["verified"]>0, r["next_failed_cleanly"], r["attempts"][-1]["out_of_memory"], r["attempts"][-1]["batch"]==r["verified"]+1, sum(r["predicted_categories"].values())==r["predicted_bytes"]))(d["results"][0])')" = "(True, True, True, True, True)" ]; then
  passes=$((passes + 1))
else
  echo "FAIL: maxbatch JSON: predicted = verified, verified+1 out of memory, categories add up"
  failures=$((failures + 1))
fi
# A smaller budget, a smaller batch: the answer follows the budget.
expect_exit 0 "maxbatch against a 5 MiB budget" -- "$SB" maxbatch -w bert_base "${tiny[@]}" --memory 0.005 \
  --no-verify --json "$WORK/mb-small.json"
if [ "$(json_field "$WORK/mb-small.json" 'd["results"][0]["predicted"]')" -lt \
     "$(json_field "$WORK/mb.json" 'd["results"][0]["predicted"]')" ]; then
  passes=$((passes + 1))
else
  echo "FAIL: a smaller budget did not give a smaller batch"
  failures=$((failures + 1))
fi

# deeplabv3 trains at batch 2 at least (BatchNorm over its image pooling): the search starts there.
expect_exit 0 "maxbatch of deeplabv3" -- "$SB" maxbatch -w deeplabv3 "${tiny[@]}" --memory 0.02
expect_output "max batch per GPU: predicted [0-9]+, verified [0-9]+ images .*one more runs out of memory" \
  "deeplabv3's answer is verified"
expect_exit 0 "maxbatch of deeplabv3, not even batch 2 fits" -- "$SB" maxbatch -w deeplabv3 "${tiny[@]}" \
  --memory 0.0002
expect_output "predicted 0, verified 0 images .*one more runs out of memory" "the smallest batch already fails"

expect_exit 2 "maxbatch on the cpu without --memory" -- "$SB" maxbatch -w bert_base "${tiny[@]}"
expect_output "needs --memory GiB" "the missing budget is named"
expect_exit 2 "maxbatch of an unknown workload" -- "$SB" maxbatch -w resnet9000 "${tiny[@]}" --memory 1
expect_output "resnet9000" "the unknown workload is named"
expect_exit 2 "maxbatch without a workload" -- "$SB" maxbatch "${tiny[@]}" --memory 1
expect_lines 1 "^scalebench: error:" "one error line"

if ! mpi_available; then
  echo "SKIP: no MPI for the two-rank checks"
  finish
  exit
fi
expect_exit 0 "maxbatch on 2 ranks" -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" maxbatch -w transformer_big "${tiny[@]}" \
  --memory 0.01 --json "$WORK/mb2.json"
expect_output "sentence pairs \([0-9,]+ tokens\)" "translation batches in sentence pairs and tokens"
expect_lines 1 "^# max batch per GPU" "rank 0 alone prints the answer"

suite=("$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" suite "${tiny[@]}" --memory 0.04 --warmup 0 --steps 1)
expect_exit 0 "suite on two tiny workloads, 2 ranks" -- "${suite[@]}" --workloads bert_base,transformer_big \
  --out "$WORK/suite"
expect_output "^## Maximum batch per GPU before out-of-memory" "the max-batch table"
expect_output "^\| transformer_big \| tokens \| 500 sentence pairs \| [0-9,]+ \| [0-9,]+ \| [0-9.]+% \| [0-9.]+x \| [0-9,]+ sentence pairs \| [0-9,]+ \| [0-9,]+ \| [0-9.]+% \|" \
  "the throughput table: alone, together, E(2) and x RTX 8000 at the reference batch, then the max batch's"
expect_output "\[suite 6/6, .* left\] transformer_big: training at the max batch" "progress with the time left"
count_runs() { json_field "$WORK/suite/suite.json" 'len(d["runs"])'; }
files=$(ls "$WORK/suite" | grep -c '^\(bert_base\|transformer_big\)-.*\.json$')
if [ "$(count_runs)" = 1 ] && [ "$files" = 2 ] &&
   [ "$(json_field "$WORK/suite/$(ls "$WORK/suite" | grep ^bert_base | head -1)" 'd["runs"]["max_batch"]["status"]')" = ok ]; then
  passes=$((passes + 1))
else
  echo "FAIL: suite wrote $files workload files and $(count_runs) runs"
  failures=$((failures + 1))
fi
# Reruns (one workload, to keep CI short) append; --force replaces everything the summary lists.
expect_exit 0 "suite rerun" -- "${suite[@]}" --workloads bert_base --out "$WORK/suite"
files=$(ls "$WORK/suite" | grep -c '^\(bert_base\|transformer_big\)-.*\.json$')
[ "$(count_runs)" = 2 ] && [ "$files" = 3 ] && passes=$((passes + 1)) ||
  { echo "FAIL: a rerun must append (runs $(count_runs), files $files)"; failures=$((failures + 1)); }
expect_exit 0 "suite --force" -- "${suite[@]}" --workloads bert_base --out "$WORK/suite" --force
files=$(ls "$WORK/suite" | grep -c '^\(bert_base\|transformer_big\)-.*\.json$')
[ "$(count_runs)" = 1 ] && [ "$files" = 1 ] && passes=$((passes + 1)) ||
  { echo "FAIL: --force must replace (runs $(count_runs), files $files)"; failures=$((failures + 1)); }
echo '{"not": "a suite"}' > "$WORK/other.json"
mkdir -p "$WORK/other" && cp "$WORK/other.json" "$WORK/other/suite.json"
expect_exit 2 "suite into a folder whose suite.json is something else" -- "${suite[@]}" --out "$WORK/other"
expect_output "is not a scalebench suite summary" "the foreign summary is named"
finish

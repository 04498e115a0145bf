#!/usr/bin/env bash
# Bad input of issue 7, each on two ranks: exit 2, exactly one error line per rank naming the problem (and
# the valid choices where there is a list), and no measurement started. cli_errors.sh has the bandwidth
# flags' own checks; config_mismatch.sh ranks with different arguments.
source "$(dirname "$0")/lib/common.bash"
if ! mpi_available; then echo "SKIP: no MPI"; exit 0; fi
run2=("$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB")
tiny=(--device cpu --scale tiny --batch 2 --warmup 1 --steps 2)

# bad CASE PATTERN -- ARGS...: exit 2 and one line per rank matching PATTERN; nothing was measured.
bad() {
  local what=$1 pattern=$2
  shift 3
  expect_exit 2 "$what" -- "${run2[@]}" "$@"
  expect_lines 2 "^scalebench: error: \[rank [01]@.*$pattern" "$what: one line on every rank"
  expect_lines 0 "^# scalebench" "$what: stopped before any measurement (no report header)"
}

bad "unknown workload" "unknown workload 'resnet9' \(available: .*transformer_big" -- -w resnet9 "${tiny[@]}"
bad "unknown op" "unknown collective 'all_scatter' \(accepted: all_reduce" -- bandwidth --device cpu --op all_scatter
bad "unknown precision" "--precision: fp8 not in \{.*bf16.*\}" -- -w bert_base "${tiny[@]}" --precision fp8
bad "unknown backend" "--backend: gloo not in \{.*nccl.*\}" -- bandwidth --device cpu --backend gloo
bad "batch 0" "--batch: 0 is out of range: a whole number from 1 to 1000000000" -- -w bert_base --device cpu --scale tiny --batch 0
bad "negative batch" "--batch" -- -w bert_base --device cpu --scale tiny --batch -2
bad "a backend not built in (or, built in, not for this device)" "nccl backend (needs scalebench built with NCCL|needs the cuda device)" -- \
  bandwidth --device cpu --backend nccl
bad "emulation on the CPU device" "--emulate host shapes NCCL's transports: it needs the cuda device" -- \
  -w bert_base "${tiny[@]}" --emulate host
bad "CUDA graphs on the CPU device" "--cuda-graph on needs the cuda device" -- -w bert_base "${tiny[@]}" \
  --cuda-graph on
bad "unknown --cuda-graph mode" "--cuda-graph: always not in \{auto,on,off\}" -- -w bert_base "${tiny[@]}" \
  --cuda-graph always
bad "a bucket size neither a size nor auto" "--bucket-mb: soon is not a finite number .*\(or auto\)" -- -w bert_base \
  "${tiny[@]}" --bucket-mb soon
bad "unwritable output path" "cannot write '/nonexistent-dir/run.json'" -- -w bert_base "${tiny[@]}" \
  --json /nonexistent-dir/run.json
bad "unwritable trace path" "cannot write '/nonexistent-dir/trace.json'" -- -w bert_base "${tiny[@]}" \
  --trace /nonexistent-dir/trace.json

# An existing output file is kept unless --force says otherwise, for every output flag.
echo '{"kept": true}' > "$WORK/old.json"
for flag in --json --csv --trace; do
  bad "existing $flag file" "output file '$WORK/old.json' exists; pass --force" -- -w bert_base "${tiny[@]}" \
    "$flag" "$WORK/old.json"
done
bad "existing bandwidth --csv file" "output file '$WORK/old.json' exists" -- bandwidth --device cpu --csv "$WORK/old.json"
grep -q '"kept": true' "$WORK/old.json" && passes=$((passes + 1)) || { echo "FAIL: the existing file was touched"; failures=$((failures + 1)); }
expect_exit 0 "--force overwrites" -- "${run2[@]}" -w bert_base "${tiny[@]}" --phases dp --json "$WORK/old.json" --force
grep -q '"status": "ok"' "$WORK/old.json" && passes=$((passes + 1)) || { echo "FAIL: --force did not overwrite"; failures=$((failures + 1)); }
expect_exit 2 "compare --out onto an existing file" -- "$SB" compare "$WORK/old.json" --out "$WORK/old.json"
expect_output "output file '$WORK/old.json' exists" "compare --out is refused too"

# Flags that differ between ranks (here the run's batch): every rank says so.
expect_exit 2 "different --batch per rank" -- "$MPIEXEC" $OVERSUBSCRIBE -n 1 "$SB" -w bert_base "${tiny[@]}" : \
  -n 1 "$SB" -w bert_base --device cpu --scale tiny --batch 3 --warmup 1 --steps 2
expect_lines 2 "configuration differs between ranks: rank\(s\) 1 got other arguments" "both ranks name rank 1"
finish

#!/usr/bin/env bash
# `scalebench bandwidth` on the CPU device: every collective exact (--check) at 1, 2 and 4 ranks, JSON and
# CSV written and well-formed, the console table shaped like nccl-tests'.
source "$(dirname "$0")/lib/common.bash"

check_json() {  # check_json FILE NRANKS: valid JSON, right shape, zero wrong
  python3 - "$1" "$2" <<'PY' > "$WORK/out" 2>&1
import json, sys
report = json.load(open(sys.argv[1]))
assert report["schema_version"] == 1 and report["command"] == "bandwidth", report.get("command")
assert report["status"] == "ok", report["status"]
assert report["context"]["nranks"] == int(sys.argv[2])
assert len(report["context"]["devices"]) == int(sys.argv[2])
ops = {r["op"] for r in report["results"]}
assert ops == {"all_reduce", "reduce_scatter", "all_gather", "broadcast", "alltoall"}, ops
for r in report["results"]:
    assert r["wrong"] == 0, r
    assert r["time_us_p50"] > 0 and r["busbw_gbps"] >= 0, r
    assert len(r["samples_us"]) == report["config"]["iters"], r
assert report["summary"]["wrong_total"] == 0
print("json ok")
PY
  local rc=$?
  if [ $rc -ne 0 ]; then echo "FAIL: JSON check of $1"; cat "$WORK/out"; failures=$((failures + 1)); else passes=$((passes + 1)); fi
}

expect_exit 0 "one rank, local backend, all ops, check" -- "$SB" bandwidth --device cpu --backend local \
  --op all --min-bytes 64 --max-bytes 64K --iters 5 --check --json "$WORK/one.json" --csv "$WORK/one.csv"
expect_output "^# Out of bounds values : 0 OK" "footer reports zero wrong"
expect_output "^#\s+\(B\)\s+\(elements\)" "units row"
check_json "$WORK/one.json" 1
rows=$(($(wc -l < "$WORK/one.csv") - 1))
[ "$rows" -gt 0 ] && passes=$((passes + 1)) || { echo "FAIL: CSV has no rows"; failures=$((failures + 1)); }

expect_exit 0 "JSON to stdout keeps stdout machine-readable" -- "$SB" bandwidth --device cpu \
  --max-bytes 4K --iters 2 --json -
python3 -c "import json,sys; json.load(open('$WORK/out'))" 2> /dev/null && passes=$((passes + 1)) ||
  true  # stderr is mixed into $WORK/out by expect_exit; the stdout-only check follows
"$SB" bandwidth --device cpu --max-bytes 4K --iters 2 --json - 2> /dev/null > "$WORK/stdout.json"
python3 -c "import json; json.load(open('$WORK/stdout.json'))" && passes=$((passes + 1)) ||
  { echo "FAIL: --json - does not leave valid JSON on stdout"; failures=$((failures + 1)); }

if mpi_available; then
  for n in 2 4; do
    for dtype in fp32 bf16 fp16; do
      expect_exit 0 "$n ranks, mpi backend, $dtype, all ops, check" -- "$MPIEXEC" -n $n $OVERSUBSCRIBE \
        "$SB" bandwidth --device cpu --op all --dtype $dtype --min-bytes 1K --max-bytes 256K --iters 3 \
        --check --json "$WORK/mpi_${n}_${dtype}.json"
      expect_output "backend: mpi" "$n ranks report the mpi backend"
      check_json "$WORK/mpi_${n}_${dtype}.json" $n
    done
  done
  expect_exit 0 "4 ranks, avg, fp32" -- "$MPIEXEC" -n 4 $OVERSUBSCRIBE "$SB" bandwidth --device cpu \
    --op all_reduce,reduce_scatter --redop avg --max-bytes 64K --iters 2 --check
  expect_output "^# Out of bounds values : 0 OK" "avg results are within tolerance"
fi
finish

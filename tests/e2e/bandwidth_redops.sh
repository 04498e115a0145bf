#!/usr/bin/env bash
# `scalebench bandwidth -o all -d all --check` (nccl-tests' -o all / -d all) on the CPU device with 2 and 4
# ranks: every collective x element type x reduce op (reduce ops for all_reduce and reduce_scatter only, the
# others once per type, redop "none") is measured and exact (#wrong 0 in every console row and JSON record),
# the rows carry their own type and redop, and "# Avg bus bandwidth" is the mean over every row printed.
# Bad values of -o and -d are one line naming the flag and the accepted values, exit 2.
source "$(dirname "$0")/lib/common.bash"

check_all() {  # check_all JSON CONSOLE NRANKS
  python3 - "$1" "$2" "$3" <<'PY' > "$WORK/check" 2>&1
import json, re, sys
report = json.load(open(sys.argv[1]))
console = open(sys.argv[2]).read().splitlines()
nranks = int(sys.argv[3])
dtypes = ["fp32", "bf16", "fp16", "fp64", "int32"]
redops = ["sum", "prod", "max", "min", "avg"]
assert report["status"] == "ok" and report["context"]["nranks"] == nranks, report["status"]
assert report["config"]["dtypes"] == dtypes and report["config"]["redops"] == redops, report["config"]
want = set()
for op in ["all_reduce", "reduce_scatter", "all_gather", "broadcast", "alltoall"]:
    for dtype in dtypes:
        for redop in (redops if op in ("all_reduce", "reduce_scatter") else ["none"]):
            for placement in ["out_of_place", "in_place"]:
                want.add((op, dtype, redop, placement))
seen = {(r["op"], r["dtype"], r["redop"], r["placement"]) for r in report["results"]}
assert seen == want, ("missing", sorted(want - seen), "unexpected", sorted(seen - want))
bad = [r for r in report["results"] if r["wrong"] != 0]
assert not bad, bad[:3]
assert report["summary"]["wrong_total"] == 0

# Console data rows: size count type redop root, then time algbw busbw #wrong for each placement, p99s.
rows = [line.split() for line in console if re.match(r"^\s+\d+\s+\d+\s", line)]
assert len(rows) == len(report["results"]) // 2, (len(rows), len(report["results"]))
labels = {(row[2], row[3]) for row in rows}
assert labels == {(d, r) for d in dtypes for r in redops + ["none"]}, sorted(labels)
assert all(row[8] == "0" and row[12] == "0" for row in rows), [r for r in rows if r[8] != "0" or r[12] != "0"][:3]
busbw = [float(row[7]) for row in rows] + [float(row[11]) for row in rows]
avg_line = [line for line in console if line.startswith("# Avg bus bandwidth")]
assert len(avg_line) == 1, avg_line
printed = float(avg_line[0].split(":")[1])
exact = sum(r["busbw_gbps"] for r in report["results"]) / len(report["results"])
assert abs(printed - exact) <= 1e-5 * max(exact, 1e-9), (printed, exact)
# The rows show busbw with 2 decimals: their mean agrees with the line to that precision.
assert abs(sum(busbw) / len(busbw) - printed) <= 0.005 + 1e-9, (sum(busbw) / len(busbw), printed)
print("ok", len(rows), "rows")
PY
  local rc=$?
  if [ $rc -ne 0 ]; then echo "FAIL: -o all -d all check of $1"; cat "$WORK/check"; failures=$((failures + 1)); else passes=$((passes + 1)); fi
}

expect_exit 2 "unknown reduce op" -- "$SB" bandwidth --device cpu -o xor
expect_lines 1 "^scalebench: error: --redop: unknown reduce op 'xor' \(accepted: sum, prod, max, min, avg, all\)$" \
  "-o xor: one line naming the flag and the accepted values"
expect_exit 2 "unknown dtype" -- "$SB" bandwidth --device cpu -d int8
expect_lines 1 "^scalebench: error: --dtype: unknown dtype 'int8' \(accepted: fp32, bf16, fp16, fp64, int32, all\)$" \
  "-d int8: one line naming the flag and the accepted values"
expect_exit 0 "bandwidth --help" -- "$SB" bandwidth --help
expect_output "--dtype DTYPE=fp32 .*fp32, bf16, fp16, fp64, int32, or all" "help shows the dtypes and the default"
expect_output "--redop OP=sum .*sum, prod, max, min, avg, or all" "help shows the reduce ops and the default"

expect_exit 0 "one rank, local backend, -o all -d all" -- "$SB" bandwidth --device cpu --backend local --op all \
  -o all -d all -b 1K -e 2K -n 2 -w 0 --check
expect_output "^# Out of bounds values : 0 OK" "one rank: every op exact"

if mpi_available; then
  for n in 2 4; do
    "$MPIEXEC" -n $n $OVERSUBSCRIBE "$SB" bandwidth --device cpu --op all -o all -d all --check -b 1K -e 4K \
      -n 2 -w 1 --json "$WORK/all_$n.json" > "$WORK/console_$n.txt" 2> "$WORK/stderr_$n.txt"
    rc=$?
    if [ $rc -ne 0 ]; then
      echo "FAIL: $n ranks -o all -d all: exit $rc"; sed 's/^/    | /' "$WORK/stderr_$n.txt" | head; failures=$((failures + 1))
    else
      passes=$((passes + 1))
      check_all "$WORK/all_$n.json" "$WORK/console_$n.txt" $n
    fi
  done
fi
finish

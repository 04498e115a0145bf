#!/usr/bin/env bash
# --gpus-sweep (issue 29) on the CPU device at tiny scale: mpiexec -n 4 with auto trains k = 1, 2, 4 in one job with
# --check passing at each k; the k = 2 point leaves the weights a separate 2-rank job leaves, bit for bit;
# --concurrent-groups at 4 ranks trains two groups of 2 at once; one rank degrades to k = 1 with a notice; bad
# lists are exit 2 with one line on every rank and nothing measured.
source "$(dirname "$0")/lib/common.bash"
if ! mpi_available; then echo "SKIP: no MPI"; exit 0; fi
tiny=(--device cpu --scale tiny --batch 2 --warmup 1 --steps 2)
run4=("$MPIEXEC" -n 4 $OVERSUBSCRIBE "$SB")

expect_exit 0 "bert_base -n 4 --gpus-sweep auto --check" -- "${run4[@]}" -w bert_base "${tiny[@]}" \
  --gpus-sweep auto --check --json "$WORK/sweep.json"
expect_output "# gpus sweep: k = 1,2,4; one group of k ranks trains while the others wait" "the plan in the header"
expect_output "#   k = 2: ranks 0,1 \(host\)" "the k = 2 group and its link"
expect_output "# dp@2: [0-9.]+ ms per step .*E\(2\) = [0-9.]+%; weights identical yes" "the k = 2 point's dp line"
expect_output "# check@2: 2 ranks x batch 2 vs 1 rank x batch 4: .*: passed" "--check passes at k = 2"
expect_output "check \(3 SGD steps, no dropout[^)]*\).*: passed" "--check passes at k = 4"
expect_output "# scaling curve \(X\(1\): the median solo GPU\)" "the curve's table"
python3 - "$WORK/sweep.json" <<'PY' && passes=$((passes + 1)) || { echo "FAIL: the sweep's JSON"; failures=$((failures + 1)); }
import json, sys
d = json.load(open(sys.argv[1]))
s = d["gpus_sweep"]
assert s["sizes"] == [1, 2, 4] and s["concurrent_groups"] is False and s["notice"] is None, s
points = {p["gpus"]: p for p in s["points"]}
assert [p["phase"] for p in s["points"]] == ["solo", "dp@2", "dp"], s["points"]
assert all(p["measured"] and p["units_per_s_total"] > 0 and p["efficiency"] > 0 for p in s["points"]), s["points"]
assert points[1]["efficiency"] == 1.0 and points[1]["link"] is None
assert abs(points[4]["efficiency"] - d["scaling_efficiency"]) < 1e-12, (points[4], d["scaling_efficiency"])
two = points[2]
assert two["groups"][0]["ranks"] == [0, 1] and two["link"] == "host", two
assert len(two["groups"][0]["dp"]["ranks"]) == 2 and len(two["groups"][0]["comm"]["ranks"]) == 2, two
assert two["check"]["passed"] and two["weights_identical_after_dp"], two
d2 = two["efficiency_decomposition"]  # the first group's 1 - E, against its own ranks' solo steps
assert d2["measured"] is True, d2
assert abs(d2["loss"] - (d2["dilation"] + d2["tail"] + d2["skew"] + d2["residual"])) < 1e-9, d2
# units credited from the two ranks' own batches: per GPU times k is the total
assert abs(two["units_per_s_per_gpu"] * 2 - two["units_per_s_total"]) < 1e-6 * two["units_per_s_total"]
PY

# report and compare read the curve back: a table, and in HTML the throughput and E(k) curves with the ideal line.
expect_exit 0 "report of a swept run" -- "$SB" report "$WORK/sweep.json" --html "$WORK/sweep.html"
expect_output "# Scaling curve \(--gpus-sweep; X\(1\) the median solo GPU\)" "report: the curve's table"
expect_output "^  2 +host +[0-9.]+ +[0-9.]+ +[0-9.]+ " "report: the k = 2 row"
for text in "bert_base: throughput vs GPUs in one job" "bert_base: E(k) vs GPUs in one job" "ideal: k x one GPU" \
    "measured, host"; do
  grep -qF "$text" "$WORK/sweep.html" && passes=$((passes + 1)) || { echo "FAIL: report --html lacks '$text'"; failures=$((failures + 1)); }
done
expect_exit 0 "compare of a swept run" -- "$SB" compare "$WORK/sweep.json"
expect_output "# bert_base: scaling curve \(--gpus-sweep\): units/s total, E\(k\)" "compare: the curve's table"
expect_exit 0 "compare --csv of a swept run" -- "$SB" compare "$WORK/sweep.json" --csv
expect_output "^.*,run,bert_base,sequences,2,.*,dp@2,[0-9.e+]+,,,,[0-9.e+]+,[0-9.e+]+,[0-9.e+]+," "compare --csv: the dp@2 row"

# The k = 2 point trains what a 2-rank job trains (the same ranks' data, seeds and all-reduces): equal weights.
expect_exit 0 "the same workload as its own 2-rank job" -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" -w bert_base \
  "${tiny[@]}" --phases dp --json "$WORK/two.json"
python3 - "$WORK/sweep.json" "$WORK/two.json" <<'PY' && passes=$((passes + 1)) || { echo "FAIL: dp@2 differs from a 2-rank job"; failures=$((failures + 1)); }
import json, sys
sweep, two = (json.load(open(p)) for p in sys.argv[1:3])
point = [p for p in sweep["gpus_sweep"]["points"] if p["gpus"] == 2][0]
assert point["weights_checksum_after_dp"] == two["weights_checksum_after_dp"], (point["weights_checksum_after_dp"], two["weights_checksum_after_dp"])
PY

# Two groups of two at once, each checked.
expect_exit 0 "transformer_big -n 4 --gpus-sweep 1,2,4 --concurrent-groups --check" -- "${run4[@]}" \
  -w transformer_big "${tiny[@]}" --gpus-sweep 1,2,4 --concurrent-groups --check --json "$WORK/concurrent.json"
expect_output "#   k = 2: ranks 0,1 \(host\); ranks 2,3 \(host\)" "two groups of two"
expect_output "# dp@2: 2 groups at once: " "the point says its groups trained at once"
expect_output "# check@2: .*\(the worst of its groups\).*: passed" "--check passes in both groups"
python3 - "$WORK/concurrent.json" <<'PY' && passes=$((passes + 1)) || { echo "FAIL: concurrent groups' JSON"; failures=$((failures + 1)); }
import json, sys
s = json.load(open(sys.argv[1]))["gpus_sweep"]
assert s["concurrent_groups"] is True
two = [p for p in s["points"] if p["gpus"] == 2][0]
assert two["groups_at_once"] == 2 and [g["ranks"] for g in two["groups"]] == [[0, 1], [2, 3]], two
assert all(len(g["dp"]["ranks"]) == 2 for g in two["groups"]), two
one = [p for p in s["points"] if p["gpus"] == 1][0]
assert one["groups_at_once"] == 4, one
PY

# suite --gpus-sweep: the reference-batch run of each workload is one swept job; the guide's tables gain units/s at
# every k, and suite.json each reference run's curve.
expect_exit 0 "suite --gpus-sweep auto" -- "${run4[@]}" suite --device cpu --scale tiny --workloads bert_base \
  --reference-only --warmup 1 --steps 2 --gpus-sweep auto --out "$WORK/suite"
expect_output "^## Scaling curve at the reference batch" "suite: the curve's table"
expect_output "^\| bert_base \| sequences \| [0-9,]+ \| [0-9,]+ \([0-9.]+%\) \| [0-9,]+ \([0-9.]+%\) \|$" "suite: k = 1, 2, 4 cells"
python3 - "$WORK/suite/suite.json" <<'PY' && passes=$((passes + 1)) || { echo "FAIL: suite.json's curve"; failures=$((failures + 1)); }
import json, sys
curve = json.load(open(sys.argv[1]))["runs"][-1]["workloads"][0]["reference"]["gpus_sweep"]
assert [p["gpus"] for p in curve] == [1, 2, 4] and all(p["units_per_s_total"] > 0 for p in curve), curve
PY

# plan predicts the same curve, filling a node before the network.
expect_exit 0 "plan --gpus-sweep auto" -- "$SB" plan -w transformer_big --gpu "H100 SXM" --gpus 16 --nodes 2 \
  --gpus-sweep auto
expect_output "# PREDICTED scaling curve: transformer_big on H100 SXM \(8 per node\)" "plan: the curve's title"
for row in "1 +1 +- " "8 +1 +nvlink4-nvswitch " "16 +2 +ib-ndr "; do
  expect_output "^ +$row" "plan: the row '$row'"
done
expect_exit 2 "plan --gpus-sweep beyond --gpus" -- "$SB" plan -w transformer_big --gpu "H100 SXM" --gpus 2 --gpus-sweep 4
expect_output "--gpus-sweep: 4 GPUs, but the job has 2 ranks" "plan: the bad size is named"

# One rank: the curve is k = 1, said so.
expect_exit 0 "one rank --gpus-sweep auto" -- "$SB" -w bert_base "${tiny[@]}" --gpus-sweep auto --json "$WORK/one.json"
expect_output "# --gpus-sweep: one rank, so the curve has k = 1 only \(the solo phase\)" "the notice"
python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["gpus_sweep"]; assert s["sizes"] == [1] and s["notice"], s' \
  "$WORK/one.json" && passes=$((passes + 1)) || { echo "FAIL: one rank's sweep JSON"; failures=$((failures + 1)); }

# Faults at a sweep point end every rank, the idle ones included, and keep what was measured. A team member that
# stalls in dp@2: the team times out, names it, and the job ends (exit 3) within seconds of --timeout.
fault_run() {
  local name=$1 fault=$2 want=$3 start
  shift 3
  start=$(date +%s)
  expect_exit "$want" "$name: exit code" -- env SCALEBENCH_FAULT="$fault" "${run4[@]}" -w transformer_big \
    --device cpu --scale tiny --batch 2 --warmup 1 --steps 4 --timeout 3 --gpus-sweep auto --json "$WORK/$name.json"
  [ $(($(date +%s) - start)) -le 40 ] && passes=$((passes + 1)) || { echo "FAIL: $name: took too long"; failures=$((failures + 1)); }
  sleep 1
  ! pgrep -f "$WORK/$name.json" > /dev/null && passes=$((passes + 1)) || { echo "FAIL: $name: processes left"; failures=$((failures + 1)); }
}
fault_run stall "sleep:rank=1:phase=dp@2:step=3" 3
expect_lines 3 "^scalebench: error: \[rank [023]@.*\[dp@2 phase, step 3\].*suspect: rank 1 " \
  "stall in dp@2: its team mate and both idle ranks name rank 1 alone (one roll call, the world's)"
python3 - "$WORK/stall.json" <<'PY' && passes=$((passes + 1)) || { echo "FAIL: stall: partial JSON"; failures=$((failures + 1)); }
import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] == "failed" and "solo" in d["phases"], d["status"]
two = [p for p in d["gpus_sweep"]["points"] if p["gpus"] == 2][0]
assert "comm" in two["groups"][0] and len(two["groups"][0]["comm"]["ranks"]) == 2, two
PY
# SIGTERM on an idle rank during dp@2 (Slurm signals them all; here one is enough): every rank stops at the same
# boundary, and the point's timed steps so far (steps 2 to 4) are kept.
fault_run term "term:rank=3:phase=dp@2:step=4" 3
expect_lines 4 "^scalebench: error: .*stopped by SIGTERM after dp@2 phase, step 4" "SIGTERM at dp@2: all four stop together"
python3 - "$WORK/term.json" <<'PY' && passes=$((passes + 1)) || { echo "FAIL: term: partial JSON"; failures=$((failures + 1)); }
import json, sys
d = json.load(open(sys.argv[1]))
two = [p for p in d["gpus_sweep"]["points"] if p["gpus"] == 2][0]
assert two["measured"] and [len(r["step_ms"]) for r in two["groups"][0]["dp"]["ranks"]] == [3, 3], two
PY

# Bad lists: exit 2, one line per rank, nothing measured.
bad() {
  local what=$1 pattern=$2
  shift 3
  expect_exit 2 "$what" -- "${run4[@]}" -w bert_base "${tiny[@]}" "$@"
  expect_lines 4 "^scalebench: error: \[rank [0-3]@.*$pattern" "$what: one line on every rank"
  expect_lines 0 "^# scalebench" "$what: stopped before any measurement"
}
bad "a size of 0" "0 is not a GPU count" -- --gpus-sweep 0,2
bad "a size above N" "--gpus-sweep: 8 GPUs, but the job has 4 ranks" -- --gpus-sweep 2,8
bad "a size listed twice" "--gpus-sweep: 2 is listed twice" -- --gpus-sweep 2,4,2
bad "a size that does not divide N into concurrent groups" "3 does not divide the job's 4 ranks" -- --gpus-sweep 3 --concurrent-groups
bad "not a number" "'two' is not a GPU count" -- --gpus-sweep two
bad "--concurrent-groups alone" "--concurrent-groups needs --gpus-sweep" -- --concurrent-groups
bad "a sweep without the dp phase" "--gpus-sweep needs the dp phase" -- --gpus-sweep auto --phases solo,comm
finish

#!/usr/bin/env bash
# Issue 25 on the GPU: a captured dp step (forward, backward, the bucketed NCCL all-reduces on the comm stream,
# the update; one cudaGraphLaunch per step) trains like the eager dp step. Every workload at tiny scale, 2 ranks on
# 2 GPUs, `--phases dp` with --cuda-graph off and then on, from the same seed:
#   - the `on` run really replayed (its dp phase reports `cuda_graph: on`);
#   - both runs end with the same weights on every rank;
#   - the weights after dp are bit-identical to eager's; where they are not, a second eager run decides whether
#     the workload's kernels are run-to-run nondeterministic (then the replay's last losses must lie within a
#     few times that spread) or the replay trained differently (a failure).
# fp16 (loss scaling: scale, skip flag and step count on the device) is checked on bert_base too.
# Usage: dp_graph.sh SCALEBENCH [workload ...]; exit 77 (skipped) with fewer than 2 GPUs: NCCL refuses two ranks
# on one GPU ("Duplicate GPU detected"), and MPI's all-reduces cannot be captured. On one GPU the capture of the dp
# step is checked over a one-rank NCCL communicator instead (tests/gpu/test_dp_step_graph.cpp).
set -uo pipefail
bin=$1
shift
workloads=("$@")
[ ${#workloads[@]} -gt 0 ] || workloads=(transformer_big bert_base bert_finetune mt_dnn conv_seq2seq unsupmt
  nasnet_large yolov3 deeplabv3 pix2pixhd stylegan maskrcnn)
ngpu=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU')
[ "$ngpu" -ge 2 ] || { echo "dp_graph: needs 2 GPUs, $ngpu visible: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpiexec=${SB_MPIEXEC:-mpirun}

run_dp() {  # name mode precision workload: one 2-rank dp phase into $work/<name>.json
  local name=$1 mode=$2 precision=$3 workload=$4
  timeout 90 "$mpiexec" -np 2 --bind-to none -x NCCL_NVLS_ENABLE=0 "$bin" run --workload "$workload" \
    --scale tiny --precision "$precision" --phases dp --warmup 1 --steps 4 --cuda-graph "$mode" --force \
    --json "$work/$name.json" > "$work/$name.log" 2>&1
  local rc=$?
  if [ "$rc" -eq 124 ]; then  # a hung replay would hang every later one too: stop here, loudly
    echo "FAIL $workload/$precision: the $mode dp run did not finish in 90 s; the rest are skipped"
    tail -n 5 "$work/$name.log"
    exit 1
  fi
  return "$rc"
}

failures=0
check() {  # workload precision
  local workload=$1 precision=$2 tag="$1/$2"
  if ! run_dp off "off" "$precision" "$workload" || ! run_dp on "on" "$precision" "$workload"; then
    echo "FAIL $tag: a run failed"; tail -n 5 "$work/off.log" "$work/on.log"; failures=$((failures + 1)); return
  fi
  local verdict
  verdict=$(python3 - "$work" << 'EOF'
import json, sys
work = sys.argv[1]
def load(name):
    with open(f"{work}/{name}.json") as f:
        return json.load(f)
off, on = load("off"), load("on")
def losses(d):
    return [r["loss_last"] for r in d["phases"]["dp"]["ranks"]]
problems = []
if on["phases"]["dp"]["cuda_graph"] != "on":
    problems.append("the on run did not replay: " + on["phases"]["dp"]["cuda_graph"])
for name, d in (("off", off), ("on", on)):
    if not d["weights_identical_after_dp"]:
        problems.append(f"{name}: the ranks' weights differ after dp")
if problems:
    print("FAIL " + "; ".join(problems))
elif off["weights_checksum_after_dp"] == on["weights_checksum_after_dp"]:
    print("SAME weights bit for bit, last losses " + " ".join(f"{x:.6f}" for x in losses(on)))
else:
    print("DIFFER " + " ".join(f"{a!r} {b!r}" for a, b in zip(losses(off), losses(on))))
EOF
)
  case "$verdict" in
    SAME*) echo "ok   $tag: ${verdict#SAME }" ;;
    FAIL*) echo "FAIL $tag: ${verdict#FAIL }"; failures=$((failures + 1)) ;;
    DIFFER*)
      run_dp off2 "off" "$precision" "$workload" || { echo "FAIL $tag: the second eager run failed"; failures=$((failures + 1)); return; }
      python3 - "$work" "$tag" << 'EOF' || failures=$((failures + 1))
import json, sys
work, tag = sys.argv[1], sys.argv[2]
def load(name):
    with open(f"{work}/{name}.json") as f:
        return json.load(f)
off, off2, on = load("off"), load("off2"), load("on")
if off["weights_checksum_after_dp"] == off2["weights_checksum_after_dp"]:
    sys.exit(print(f"FAIL {tag}: eager is deterministic here, yet the replayed dp step trained other weights") or 1)
def losses(d):
    return [r["loss_last"] for r in d["phases"]["dp"]["ranks"]]
spread = max(abs(a - b) for a, b in zip(losses(off), losses(off2)))
gap = max(abs(a - b) for a, b in zip(losses(off), losses(on)))
if gap > 4 * spread + 1e-6:
    sys.exit(print(f"FAIL {tag}: replay's last losses differ from eager's by {gap:.3g}, eager from eager by {spread:.3g}") or 1)
print(f"ok   {tag}: eager is run-to-run nondeterministic (last losses spread {spread:.3g}); replay within it ({gap:.3g})")
EOF
      ;;
  esac
}

for workload in "${workloads[@]}"; do
  check "$workload" bf16
done
check bert_base fp16
echo "dp_graph: ${failures} failure(s)"
[ "$failures" -eq 0 ]

#!/usr/bin/env bash
# `scalebench run` on the CPU device at tiny scale: trains (the loss falls), writes JSON, every rank reports;
# `run` is also what a bare `scalebench --workload NAME` means;
# a plan that cannot fit stops before allocating with the largest batch that would (exit 3).
source "$(dirname "$0")/lib/common.bash"
expect_exit 0 "transformer_big tiny" -- "$SB" run --device cpu --workload transformer_big --scale tiny --batch 4 \
  --steps 8 --lr 1e-3 --json "$WORK/run.json"
python3 - "$WORK/run.json" <<'PY' && passes=$((passes + 1)) || { echo "FAIL: run JSON"; failures=$((failures + 1)); }
import json, sys
doc = json.load(open(sys.argv[1]))
solo = doc["phases"]["solo"]
rank = solo["ranks"][0]
assert doc["command"] == "run" and doc["status"] == "ok", doc
assert rank["loss_last"] < rank["loss_first"], rank
assert len(rank["step_ms"]) == 8 and solo["units_per_s_per_gpu"] > 0
assert doc["scaling_efficiency"] is None and "dp" not in doc["phases"]  # one rank: nothing to scale
PY
# mt_dnn: the SAN head, the turn mask drawn every step and the zero-filled gradients of the other heads.
expect_exit 0 "mt_dnn tiny" -- "$SB" run --device cpu --workload mt_dnn --scale tiny --batch 4 --steps 8 --lr 1e-3 \
  --json "$WORK/mt_dnn.json"
python3 - "$WORK/mt_dnn.json" <<'PY' && passes=$((passes + 1)) || { echo "FAIL: mt_dnn JSON"; failures=$((failures + 1)); }
import json, sys
doc = json.load(open(sys.argv[1]))
rank = doc["phases"]["solo"]["ranks"][0]
assert doc["status"] == "ok" and rank["loss_last"] < rank["loss_first"], rank
PY
# conv_seq2seq: weight-normalised convolutions, GLU, GradMultiply and fairseq's NAG with clipping (reference).
expect_exit 0 "conv_seq2seq tiny" -- "$SB" run --device cpu --workload conv_seq2seq --scale tiny --batch 4 \
  --steps 8 --optimizer reference --json "$WORK/conv_seq2seq.json"
python3 - "$WORK/conv_seq2seq.json" <<'PY' && passes=$((passes + 1)) || { echo "FAIL: conv_seq2seq JSON"; failures=$((failures + 1)); }
import json, sys
doc = json.load(open(sys.argv[1]))
rank = doc["phases"]["solo"]["ranks"][0]
assert doc["status"] == "ok" and rank["loss_last"] < rank["loss_first"], rank
PY
# pix2pixhd: the GAN step (generator, three discriminator passes, frozen VGG) with its two Adam optimizers' settings;
# G's and D's gradients in buckets of their own.
expect_exit 0 "pix2pixhd tiny" -- "$SB" run --device cpu --workload pix2pixhd --scale tiny --batch 2 \
  --steps 8 --optimizer reference --json "$WORK/pix2pixhd.json"
python3 - "$WORK/pix2pixhd.json" <<'PY' && passes=$((passes + 1)) || { echo "FAIL: pix2pixhd JSON"; failures=$((failures + 1)); }
import json, sys
doc = json.load(open(sys.argv[1]))
rank = doc["phases"]["solo"]["ranks"][0]
assert doc["status"] == "ok" and rank["loss_last"] < rank["loss_first"], rank
PY
# stylegan: the D part with R1 by double backward, the G part through D's stopped weights, Adam (0.003, beta1 0,
# beta2 0.99), the EMA generator updated by the graph; G's and D's gradients in buckets of their own. A GAN's
# summed loss need not fall: the run must finish with finite losses and say it ran its steps.
expect_exit 0 "stylegan tiny" -- "$SB" run --device cpu --workload stylegan --scale tiny --batch 2 \
  --steps 6 --optimizer reference --json "$WORK/stylegan.json"
python3 - "$WORK/stylegan.json" <<'PY' && passes=$((passes + 1)) || { echo "FAIL: stylegan JSON"; failures=$((failures + 1)); }
import json, math, sys
doc = json.load(open(sys.argv[1]))
rank = doc["phases"]["solo"]["ranks"][0]
assert doc["status"] == "ok" and math.isfinite(rank["loss_first"]) and math.isfinite(rank["loss_last"]), rank
assert rank["loss_last"] != rank["loss_first"], rank
PY
# maskrcnn: frozen stem, FrozenBatchNorm, the RPN's proposals (top-k, NMS), sampling, RoIAlign, five losses.
expect_exit 0 "maskrcnn tiny" -- "$SB" run --device cpu --workload maskrcnn --scale tiny --batch 2 \
  --steps 6 --optimizer reference --json "$WORK/maskrcnn.json"
python3 - "$WORK/maskrcnn.json" <<'PY' && passes=$((passes + 1)) || { echo "FAIL: maskrcnn JSON"; failures=$((failures + 1)); }
import json, sys
doc = json.load(open(sys.argv[1]))
rank = doc["phases"]["solo"]["ranks"][0]
assert doc["status"] == "ok" and rank["loss_last"] < rank["loss_first"], rank
PY
# unsupmt: four sub-steps per step (two autoencoder, two back-translation with a greedy decode loop), each
# with its own optimizer step; the profile has a "decode" category for the generation's share.
expect_exit 0 "unsupmt tiny" -- "$SB" run --device cpu --workload unsupmt --scale tiny --batch 3 \
  --steps 6 --optimizer reference --json "$WORK/unsupmt.json"
expect_output "decode" "unsupmt's step breakdown shows the decode loop"
expect_output "# host: enqueueing that step's nodes" "unsupmt's profiled step also times the host"
python3 - "$WORK/unsupmt.json" <<'PY' && passes=$((passes + 1)) || { echo "FAIL: unsupmt JSON"; failures=$((failures + 1)); }
import json, sys
doc = json.load(open(sys.argv[1]))
rank = doc["phases"]["solo"]["ranks"][0]
assert doc["status"] == "ok" and rank["loss_last"] < rank["loss_first"], rank
# the profiled step's host enqueue times cover the decode loop's nodes too
host_ops = {o["op"] for o in doc["op_host_ms"]}
assert doc["profiled_host_ms"] > 0 and any(op.startswith("decode: ") for op in host_ops), host_ops
PY
# The CPU device runs every step eagerly under the default --cuda-graph auto, and says why; the host's time to
# issue a step is reported per phase and per timed step.
expect_output "# solo: cuda graph off \(the cpu device runs each node when it is called\); the host issued a step in" \
  "the solo phase says it ran eagerly, and why"
python3 - "$WORK/unsupmt.json" <<'PY' && passes=$((passes + 1)) || { echo "FAIL: unsupmt cuda_graph/host JSON"; failures=$((failures + 1)); }
import json, sys
doc = json.load(open(sys.argv[1]))
solo = doc["phases"]["solo"]
assert doc["config"]["cuda_graph"] == "auto", doc["config"]
assert solo["cuda_graph"] == "off (the cpu device runs each node when it is called)", solo["cuda_graph"]
host = solo["ranks"][0]["host_ms"]
assert len(host) == len(solo["ranks"][0]["step_ms"]) and all(h > 0 for h in host), host
assert 0 < solo["host_ms_per_step"] and solo["host_bound"] is True, solo  # the CPU device: issuing is running
PY
expect_exit 0 "run is the default subcommand" -- "$SB" --device cpu --workload bert_base --scale tiny --batch 2 \
  --steps 1 --warmup 0
expect_output "run: bert_base" "a bare --workload runs the workload"
expect_exit 2 "tf32 on the CPU" -- "$SB" run --device cpu --workload bert_base --scale tiny --precision tf32
expect_output "--precision tf32 needs the cuda device" "tf32 on the CPU is refused"
expect_exit 2 "fp16 on the CPU" -- "$SB" run --device cpu --workload bert_base --scale tiny --precision fp16
expect_output "--precision fp16 needs the cuda device" "fp16 on the CPU is refused"
expect_exit 2 "unknown workload" -- "$SB" run --device cpu --workload resnet9000
expect_output "unknown workload 'resnet9000'" "the workload is named"
expect_exit 2 "deeplabv3 at batch 1" -- "$SB" run --device cpu --workload deeplabv3 --scale tiny --batch 1
expect_output "deeplabv3 trains at a per-rank batch of at least 2, not 1" "the smallest batch is named"
expect_exit 3 "a batch that cannot fit" -- "$SB" run --device cpu --workload bert_base --batch 100000000
expect_output "needs .* GiB, device has .* GiB usable; largest batch that fits: [0-9]+" "the fit error names the batch"
if mpi_available; then
  expect_exit 0 "two ranks train alone" -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" run --device cpu --workload bert_base \
    --scale tiny --batch 2 --steps 3 --phases solo
  expect_lines 2 "^ +[01] +" "one row per rank"
fi
finish

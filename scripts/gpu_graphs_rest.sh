#!/usr/bin/env bash
# Issue 25's second call (one H200, after `gpu_check.sh graphs` ran out of its budget): the four workloads it did
# not reach (--cuda-graph off and on), the host-independence runs of mt_dnn and transformer_big (pinned to core 3
# beside a busy loop, both modes, and their unloaded runs in the same call), then the replay gpu tests of the
# workloads the first call's test budget did not reach. Each part within its own time budget; files in $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$PWD/gpu-check-out}
export GPU_TEST_FILTER='-*'  # the graphs mode's gpu tests: none here, the replay tests run last
GRAPHS_BUDGET_S=${REST_BUDGET_S:-200} bash scripts/gpu_check.sh graphs 20 "conv_seq2seq yolov3 deeplabv3 maskrcnn" |
  grep -vE "^(== gpu tests|# solo)"
mv "$out/graphs.tgz" "$out/graphs_rest.tgz"
GRAPHS_BUDGET_S=${HOG_BUDGET_S:-110} GRAPHS_HOG=1 bash scripts/gpu_check.sh graphs 20 "mt_dnn transformer_big" |
  grep -vE "^(== gpu tests|# solo)"
mv "$out/graphs.tgz" "$out/graphs_hog.tgz"
echo "== replay gpu tests"
timeout "${TESTS_BUDGET_S:-90}" build-gpu/tests/gpu_tests \
  --gtest_filter='*StepGraphReplay*unsupmt:*StepGraphReplay*stylegan:*StepGraphReplay*pix2pixhd:*StepGraphReplay*conv_seq2seq:*StepGraphReplay*yolov3:*StepGraphReplay*deeplabv3:*StepGraphReplay*maskrcnn:*StepGraphReplay*nasnet_large' \
  > "$out/replay_tests.log" 2>&1
echo "replay tests rc=$?"
grep -E "^\[  (FAILED|PASSED) |OK \]|tests ran" "$out/replay_tests.log" | tail -15

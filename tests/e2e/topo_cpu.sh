#!/usr/bin/env bash
# `scalebench topo` with the CPU device: works without GPUs (and says so), writes valid JSON.
source "$(dirname "$0")/lib/common.bash"
expect_exit 0 "topo without GPUs" -- "$SB" topo --device cpu --json "$WORK/topo.json"
if ! command -v nvidia-smi > /dev/null; then
  expect_output "[Nn]o CUDA device" "topo says no GPU is visible"
fi
python3 -c "
import json; t = json.load(open('$WORK/topo.json'))
assert t['command'] == 'topo' and t['schema_version'] == 1 and len(t['nodes']) == 1, t
" && passes=$((passes + 1)) || { echo "FAIL: topo JSON"; failures=$((failures + 1)); }
finish

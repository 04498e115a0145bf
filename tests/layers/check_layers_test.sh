#!/usr/bin/env bash
# scripts/check_layers.sh catches what it is for: on a copy of src/, include/ and workloads/ it passes, then each
# planted violation is reported as file:line and the script exits 1; a name in a comment is not a violation.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cp -r "$repo/src" "$repo/include" "$repo/workloads" "$tmp/"
check() { bash "$repo/scripts/check_layers.sh" "$tmp"; }
fail() { echo "FAIL: $*"; exit 1; }

out="$(check)" || fail "the checkout itself has violations: $out"
echo "$out"

echo '#include "src/train/replica.h"' >> "$tmp/src/plan/fit.cpp"
fit_line=$(wc -l < "$tmp/src/plan/fit.cpp")
echo '#include "src/cli/commands.h"' >> "$tmp/src/plan/predict.cpp"
predict_line=$(wc -l < "$tmp/src/plan/predict.cpp")
echo '#include "src/train/replica.h"' >> "$tmp/include/scalebench/plan.h"
plan_line=$(wc -l < "$tmp/include/scalebench/plan.h")
echo '#include "scalebench/training.h"' >> "$tmp/include/scalebench/suite.h"  # report.h includes suite.h
suite_line=$(wc -l < "$tmp/include/scalebench/suite.h")
printf '%s\n' 'int planted(const std::string& w) { return w == "yolov3"; }' \
              'int documented = 0;  // "bert_base" named in a comment only' >> "$tmp/src/core/optimizer.cpp"
optimizer_line=$(($(wc -l < "$tmp/src/core/optimizer.cpp") - 1))
echo '#include "src/cpu/gemm.h"' >> "$tmp/src/core/graph.cpp"
graph_line=$(wc -l < "$tmp/src/core/graph.cpp")
echo '#include "src/train/replica.h"' >> "$tmp/src/cpu/gemm.cpp"
gemm_line=$(wc -l < "$tmp/src/cpu/gemm.cpp")
echo '#include "src/engine/conv2d_geometry.h"' >> "$tmp/workloads/registry.cpp"
registry_line=$(wc -l < "$tmp/workloads/registry.cpp")

set +e
out="$(check)"
rc=$?
set -e
echo "$out"
[ "$rc" -eq 1 ] || fail "exit $rc, expected 1"
for expected in "src/plan/fit.cpp:$fit_line: src/plan includes" "src/plan/predict.cpp:$predict_line: src/plan includes" \
                "include/scalebench/plan.h:$plan_line: a public header includes" \
                "include/scalebench/suite.h:$suite_line: report.h reaches scalebench/training.h" \
                "src/core/optimizer.cpp:$optimizer_line: a workload's name" \
                "src/core/graph.cpp:$graph_line: src/core includes a header outside src/core" \
                "src/cpu/gemm.cpp:$gemm_line: a kernel or executor file includes an engine internal" \
                "workloads/registry.cpp:$registry_line: includes a header of src/engine"; do
  grep -qF "$expected" <<< "$out" || fail "no line '$expected'"
done
[ "$(grep -c "src/core/optimizer.cpp" <<< "$out")" -eq 1 ] || fail "the comment's name was reported"
grep -qF "check_layers: 8 violation(s)" <<< "$out" || fail "expected exactly 8 violations"
echo "PASS"

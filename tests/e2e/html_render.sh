#!/usr/bin/env bash
# `compare --html` and `report --html` on two tiny CPU runs and a bandwidth sweep: the pages are written, hold their charts and name no
# URL; when chromium is on PATH each page is rendered headless and the screenshot must not be blank
# (lib/png_not_blank.py: > 10 colours, > 1% non-white). Without chromium that part prints SKIP.
source "$(dirname "$0")/lib/common.bash"
LIB=$(cd "$(dirname "$0")/lib" && pwd)
expect_exit 0 "bert_base tiny run" -- "$SB" run --device cpu --workload bert_base --scale tiny --batch 2 \
  --steps 2 --warmup 1 --json "$WORK/a.json"
expect_exit 0 "transformer_big tiny run" -- "$SB" run --device cpu --workload transformer_big --scale tiny \
  --batch 2 --steps 2 --warmup 1 --json "$WORK/b.json"
expect_exit 0 "compare --html" -- "$SB" compare "$WORK/a.json" "$WORK/b.json" --html "$WORK/out.html"
expect_output "^  bert_base \(sequences/s\) +[0-9]+\.[0-9]" "the console tables still print"
cp "$WORK/out.html" "$WORK/out"
expect_lines 1 "^<!DOCTYPE html>$" "an HTML page"
# Both runs carry one label (this machine's CPU): a chart of bars all at 1 would say nothing, and tiny runs have no
# guide ratio, so the page holds the tables alone.
expect_lines 0 "<title>Throughput relative to " "one label: no chart of bars at 1"
expect_lines 0 "<title>Per-GPU throughput relative to the Quadro" "tiny runs: no guide ratio"
expect_exit 0 "bert_base tiny run again" -- "$SB" run --device cpu --workload bert_base --scale tiny --batch 2 \
  --steps 2 --warmup 1 --json "$WORK/a2.json"
expect_exit 0 "compare two labels --html" -- "$SB" compare "$WORK/a.json" "$WORK/a2.json" --label "$WORK/a2.json=again" \
  --html "$WORK/labels.html"
cp "$WORK/labels.html" "$WORK/out"
expect_lines 1 "<title>Throughput relative to " "two labels: the normalized throughput chart"
expect_lines 0 "http|<script" "no URL and no script"
expect_exit 0 "a one-rank bandwidth sweep" -- "$SB" bandwidth --device cpu --max-bytes 64K --iters 2 \
  --json "$WORK/bw.json"
expect_exit 0 "compare runs and a sweep --html" -- "$SB" compare "$WORK/a.json" "$WORK/bw.json" --html "$WORK/bw.html"
cp "$WORK/bw.html" "$WORK/out"
expect_lines 0 "<title>all_reduce: bus bandwidth vs message size</title>" "one rank: no flat zero busbw line"
expect_lines 1 "Bandwidth files of one rank are in the tables only" "the one-rank sweep is explained"
if mpi_available; then
  expect_exit 0 "a two-rank bandwidth sweep" -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" bandwidth --device cpu \
    --max-bytes 64K --iters 2 --json "$WORK/bw2.json"
  expect_exit 0 "compare a two-rank sweep --html" -- "$SB" compare "$WORK/a.json" "$WORK/bw2.json" \
    --html "$WORK/bw2.html"
  cp "$WORK/bw2.html" "$WORK/out"
  expect_lines 1 "<title>all_reduce: bus bandwidth vs message size</title>" "the busbw vs size chart"
  expect_lines 1 ">64K</text>" "sizes labelled with binary prefixes"
fi
expect_exit 0 "report --html" -- "$SB" report "$WORK/a.json" --html "$WORK/report.html"
cp "$WORK/report.html" "$WORK/out"
expect_lines 1 "<title>Step time per rank" "the step-time breakdown chart"
# Checked before the files are read, like every output path: a usage error.
expect_exit 2 "--html into a missing directory" -- "$SB" compare "$WORK/a.json" --html "$WORK/no/such/dir/x.html"
expect_output "cannot write '.*x\.html'" "the unwritable page is named"

if command -v chromium > /dev/null; then
  for page in labels report; do
    expect_exit 0 "chromium renders $page.html" -- chromium --headless --no-sandbox --disable-gpu \
      --user-data-dir="$WORK/chromium" --screenshot="$WORK/$page.png" --window-size=1280,2000 \
      "file://$WORK/$page.html"
    expect_exit 0 "$page.png is not blank" -- python3 "$LIB/png_not_blank.py" "$WORK/$page.png"
    cat "$WORK/out"
  done
else
  echo "SKIP: chromium is not on PATH; the pages were not rendered"
fi
finish

#!/usr/bin/env bash
# The one GPU-machine script: build, run the unit and gpu-labelled tests, then the benchmarks, and print a
# short table last. Logs go to $OUT (the device tool's folder) or ./gpu-check-out (8 files at most).
#   usage: scripts/gpu_check.sh [max-bytes]    all tests, `topo`, bandwidth on every visible GPU (NVLink,
#                                              host shared memory, sockets; default up to 2G)
#          scripts/gpu_check.sh train [steps]  gpu-labelled tests, then every transformer-family workload
#                                              trained on GPU 0 by scalebench and by PyTorch eager (bf16
#                                              autocast, same shapes) in the same job; table last
#          scripts/gpu_check.sh dp [steps]     gpu-labelled tests, then data-parallel scaling of transformer_big and
#                                              bert_base on every visible GPU: NVLink (dp replayed, and eager),
#                                              NCCL_P2P_DISABLE=1 (fp32 and bf16 gradients), sockets; --bucket-mb
#                                              auto; --no-overlap; a 1-rank job; --check
#          scripts/gpu_check.sh ddp [steps]    PyTorch DDP (scripts/pytorch_reference.py --ddp) over the host path,
#                                              sockets and NVLink, same models and shapes (no build)
#          scripts/gpu_check.sh tune [steps]   gpu-labelled tests, then NVLink overlap experiments (comm stream
#                                              priority, NCCL_MAX_CTAS, --overlap-ctas 2/4/8, --embedding-grad
#                                              sparse/dense, --grad-registration local/symmetric, --strategy
#                                              zero1/zero2), --check and fp16 on the GPUs, and PyTorch DDP (plain,
#                                              ZeroRedundancyOptimizer, FSDP2 zero2) over NVLink
#          scripts/gpu_check.sh suite [steps]  gpu-labelled tests, `scalebench suite` on GPU 0 alone (maxbatch,
#                                              then throughput at the reference and the max batch, every workload),
#                                              and PyTorch's max batch of transformer_big and bert_base on it
#          scripts/gpu_check.sh cnn [steps]    gpu-labelled tests, then every convolutional workload on every visible GPU
#                                              (alone, and data-parallel on more than one) by scalebench, and PyTorch's
#                                              same-shape model alone on GPU 0 and under DDP (PYTORCH=0: not);
#                                              CNN_WORKLOADS="a b" picks the workloads, PYTORCH_DDP=0 skips DDP,
#                                              GPU_TEST_FILTER='A*:B*' runs just those gpu tests; table last
#          scripts/gpu_check.sh sockets [n]    transformer_big and bert_base over the emulated socket path n times
#                                              (run-to-run spread), each predicted by `plan --validate`
#          scripts/gpu_check.sh anchors [steps] [tools] [workloads]
#                                              every workload on GPU 0 (bf16) by scalebench, PyTorch eager and
#                                              PyTorch torch.compile'd (tools: any of "scalebench eager compiled
#                                              reduce_overhead", default all four, reduce_overhead = torch.compile's
#                                              CUDA-graph mode; workloads: default all 12), 3 warm-up and `steps`
#                                              (default 10) timed steps each, within ANCHORS_BUDGET_S (default 540) of
#                                              the call's start (builds only when scalebench runs); the table of
#                                              scripts/anchors_table.py last, over this call's files and the folders
#                                              in ANCHORS_FROM (earlier calls' anchors/, to assemble one table);
#                                              ANCHORS_COMPILE_LIMIT_S (default 300) bounds one compiled run
#                                              (nasnet_large's compile took longer than 228 s on H200);
#                                              ANCHORS_WARM_COMPILE_S=N first compiles every compiled workload
#                                              at once (one step each, up to N s, into Inductor's and Triton's
#                                              on-disk caches), then times them one at a time as before: compiles
#                                              longer than a call, measured with the GPU to themselves
#          scripts/gpu_check.sh planmem        plan's memory models on GPU 0 (~8 min on one H200, build included):
#                                              PyTorch's memory line per workload, eager and compiled, at two
#                                              batches (scripts/pytorch_memory.py fit, in parallel beside the
#                                              build), written as
#                                              $OUT/pytorch_memory.json (src/plan/data/'s format); then plan's
#                                              largest batch against scalebench maxbatch --memory 24/48 and against
#                                              PyTorch capped at 24/48 GiB less plan's reserve; table last.
#                                              PLANMEM_WORKLOADS="a b" picks the workloads
#          scripts/gpu_check.sh build          (configure and build only, for experiment scripts)
#          scripts/gpu_check.sh graphs [steps] [workloads]
#                                              gpu tests (GPU_TEST_FILTER), then each workload's solo phase with
#                                              --cuda-graph off and on (GRAPHS_HOG=1: also pinned to a core a busy
#                                              loop shares; GRAPHS_MODES="off_hog on_hog" picks modes;
#                                              GRAPHS_DP=1: the dp step captured first, on 2 GPUs 2 ranks off
#                                              and on, on one the DpStepGraph gpu tests); table of
#                                              scripts/graph_table.py last
#          scripts/gpu_check.sh ab SRC [steps] [workloads]
#                                              before/after: this tree's gpu tests while SRC (an earlier commit's
#                                              source, e.g. `git archive C | tar x -C build-before/src`, carried)
#                                              builds, then every workload trained by both builds on GPU 0; table
#                                              of parameters, losses and units/s (scripts/ab_table.py) last
#          scripts/gpu_check.sh sweep [steps]  --gpus-sweep auto over every visible GPU against separate k-rank jobs,
#                                              transformer_big and bert_base; the swept runs' HTML reports; table of
#                                              scripts/sweep_table.py last (one GPU: k = 1 and its notice)
#          scripts/gpu_check.sh strategies [steps] [workloads]
#                                              issue 31: each workload (default transformer_big) under --strategy
#                                              ddp, zero1, zero2 and zero3 (STRATEGIES picks) over NVLink and
#                                              --emulate host (STRATEGY_PATHS picks), PyTorch DDP,
#                                              ZeroRedundancyOptimizer, FSDP2 zero2 and zero3 beside it over NVLink,
#                                              each eager and compiled (the faster is the bar; PYTORCH_MODES picks);
#                                              on one GPU, two ranks sharing it run --check under each strategy
#                                              instead (no scaling figure)
#          scripts/gpu_check.sh strategies-maxbatch [workloads]
#                                              maxbatch per strategy (STRATEGIES picks) on every visible GPU, at the
#                                              card's memory and at --memory 24 (default transformer_big bert_base);
#                                              on one GPU two ranks share it at --memory 24 each
#          scripts/gpu_check.sh readme [which] README's two commands exactly as a new user runs them, timed:
#                                              which = quickstart, tests or both (default); the quickstart's
#                                              table and HTML report and both logs into $OUT
set -uo pipefail
# Nothing here reads the terminal, and mpirun forwards its stdin to rank 0: a script fed to bash on stdin (a device
# call's `bash /dev/stdin <<EOF`) lost its remaining lines to the first mpirun (2026-12-05).
exec < /dev/null
cd "$(dirname "$0")/.."
out=${OUT:-$PWD/gpu-check-out}
mkdir -p "$out"
max_bytes=${1:-2G}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0  # NVLink multicast can take a shared host's GPUs out of service: never on

# PyTorch's learning rate per workload: scalebench's reference optimizer's (workloads/*.cpp), which the
# convolutional PyTorch models' optimizers take (yolov3's tiny rate keeps its loss finite from random weights).
reference_lr() {
  case "$1" in
    yolov3) echo 1e-6 ;;
    maskrcnn) echo 0.0066667 ;;
    stylegan) echo 0.003 ;;  # G's and D's Adam, as scalebench's reference optimizer
    pix2pixhd) echo 2e-4 ;;
    nasnet_large|deeplabv3) echo 1e-3 ;;
    *) echo 1e-4 ;;
  esac
}

# The optimizer scalebench trains a workload with beside PyTorch: AdamW (scalebench's default) for the transformer
# family and conv_seq2seq (PyTorch's choice there), the workload's reference optimizer elsewhere.
optimizer_flags() {
  case "$1" in
    transformer_big|bert_base|bert_finetune|mt_dnn|conv_seq2seq) ;;
    *) echo "--optimizer reference" ;;
  esac
}

if [ "$max_bytes" = anchors ]; then
  # scalebench and PyTorch do the same step: the same batch and credited units, and the same optimizer family:
  # AdamW for the transformer family and conv_seq2seq (PyTorch's choice there), the reference's elsewhere.
  steps=${2:-10}
  tools=${3:-scalebench eager compiled reduce_overhead}
  workloads=${4:-transformer_big bert_base bert_finetune mt_dnn conv_seq2seq unsupmt nasnet_large yolov3 deeplabv3 pix2pixhd stylegan maskrcnn}
  budget=${ANCHORS_BUDGET_S:-540}
  dir="$out/anchors" && mkdir -p "$dir"
  log="$out/anchors.txt"
  if [[ " $tools " == *" scalebench "* ]]; then
    echo "== configure and build"
    { cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSB_REQUIRE_CUDA=ON \
        -DSB_REQUIRE_NCCL=ON -DSB_REQUIRE_MPI=ON && cmake --build build-gpu -j "$(nproc)"; } > "$out/build.log" 2>&1 ||
      { tail -40 "$out/build.log"; exit 1; }
    echo "build took ${SECONDS} s"
  fi
  # run TOOL WORKLOAD LIMIT COMMAND...: within the budget, else skipped with a line saying so.
  run_within_budget() {
    local tool=$1 workload=$2 limit=$3
    shift 3
    local left=$((budget - SECONDS))
    if [ "$left" -lt 30 ]; then
      echo "skipped $tool $workload: ${left}s of the ${budget}s budget left" >> "$log"
      return
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    echo "== $tool $workload (at ${SECONDS}s, limit ${limit}s)" >> "$log"
    CUDA_VISIBLE_DEVICES=0 PYTHONUNBUFFERED=1 timeout "$limit" "$@" >> "$log" 2>&1 || echo "rc=$? $tool $workload" >> "$log"
  }
  if [ -n "${ANCHORS_WARM_COMPILE_S:-}" ] && [[ " $tools " == *" compiled "* ]]; then
    # Compiling is host work (Dynamo, Inductor, Triton on the CPU cores); run side by side, the compiles fill the
    # caches that the timed runs below read, and no timed step shares the GPU.
    echo "== warm compile caches, in parallel, up to ${ANCHORS_WARM_COMPILE_S}s: $workloads" >> "$log"
    for workload in $workloads; do
      CUDA_VISIBLE_DEVICES=0 timeout "$ANCHORS_WARM_COMPILE_S" python3 scripts/pytorch_reference.py \
        --workload "$workload" --precision bf16 --lr "$(reference_lr "$workload")" --warmup 0 --steps 1 --compile \
        > /dev/null 2> "$dir/warm_compile_$workload.log" &
    done
    wait
    echo "== caches warm at ${SECONDS}s" >> "$log"
  fi
  for workload in $workloads; do
    lr=$(reference_lr "$workload")
    read -r -a optimizer <<< "$(optimizer_flags "$workload")"
    pytorch=(python3 scripts/pytorch_reference.py --workload "$workload" --precision bf16 --lr "$lr" --warmup 3
             --steps "$steps")
    for tool in $tools; do
      case "$tool" in
        scalebench) run_within_budget "$tool" "$workload" 150 build-gpu/scalebench run --workload "$workload" \
                      --precision bf16 "${optimizer[@]}" --warmup 3 --steps "$steps" --force --json "$dir/sb_$workload.json" ;;
        eager) run_within_budget "$tool" "$workload" 150 bash -c '"$@" > "$0"' "$dir/eager_$workload.json" "${pytorch[@]}" ;;
        compiled) run_within_budget "$tool" "$workload" "${ANCHORS_COMPILE_LIMIT_S:-300}" bash -c '"$@" > "$0"' "$dir/compiled_$workload.json" \
                    "${pytorch[@]}" --compile ;;
        # torch.compile's reduce-overhead mode: the compiled graphs replayed as CUDA graphs, as scalebench's steps
        reduce_overhead) run_within_budget "$tool" "$workload" "${ANCHORS_COMPILE_LIMIT_S:-300}" bash -c '"$@" > "$0"' \
                    "$dir/ro_$workload.json" "${pytorch[@]}" --compile --compile-mode reduce-overhead ;;
        *) echo "gpu_check.sh anchors: unknown tool '$tool' (scalebench, eager, compiled, reduce_overhead)" >&2; exit 2 ;;
      esac
    done
  done
  grep -E "^(== |rc=|skipped|# (median|torch.compile failed|cudnn|regional compile)|pytorch_reference.py:|error)" "$log" | tail -80
  echo "== anchors table (this call${ANCHORS_FROM:+ and $ANCHORS_FROM}), ${SECONDS}s"
  python3 scripts/anchors_table.py "$dir" ${ANCHORS_FROM:-}
  tar czf "$out/anchors.tgz" -C "$out" anchors && rm -rf "$dir"
  exit 0
fi

if [ "$max_bytes" = readme ]; then  # nothing of this script's own set-up: the commands must stand alone
  which=${2:-both}
  rc=0
  if [ "$which" != tests ]; then
    start=$SECONDS
    env -u OMPI_ALLOW_RUN_AS_ROOT -u OMPI_ALLOW_RUN_AS_ROOT_CONFIRM -u NCCL_NVLS_ENABLE bash scripts/quickstart.sh \
      > "$out/quickstart.log" 2>&1 || rc=$?
    echo "quickstart: exit $rc after $((SECONDS - start)) s"
    cp "$(tail -1 "$out/quickstart.log" | sed -n 's/^report: //p')" "$out/" 2> /dev/null
    grep -E "^main job|^\| |^Failures|^- " "$out/quickstart.log"
    tail -1 "$out/quickstart.log"
  fi
  if [ "$which" != quickstart ]; then
    start=$SECONDS
    tests_rc=0
    env -u OMPI_ALLOW_RUN_AS_ROOT -u OMPI_ALLOW_RUN_AS_ROOT_CONFIRM -u NCCL_NVLS_ENABLE bash scripts/run_tests.sh \
      > "$out/run_tests.log" 2>&1 || tests_rc=$?
    grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)" "$out/run_tests.log" | tail -15
    echo "run_tests: exit $tests_rc after $((SECONDS - start)) s"
    [ "$tests_rc" -ne 0 ] && rc=$tests_rc
  fi
  exit "$rc"
fi

if [ "$max_bytes" = ddp ]; then  # PyTorch only: nothing to build
  ngpu=$(nvidia-smi -L | wc -l)
  steps=${2:-30}
  for environment in "NCCL_P2P_DISABLE=1" "NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1" ""; do
    for workload in transformer_big bert_base; do
      echo "== PyTorch DDP $workload, $ngpu ranks, ${environment:-nvlink}" >> "$out/ddp.txt"
      env -u NCCL_P2P_DISABLE -u NCCL_SHM_DISABLE $environment PYTHONUNBUFFERED=1 timeout 200 \
        mpirun -np "$ngpu" --bind-to none -x NCCL_NVLS_ENABLE python3 scripts/pytorch_reference.py --workload "$workload" \
        --ddp --precision bf16 --warmup 10 --steps "$steps" >> "$out/ddp.jsonl" 2>> "$out/ddp.txt"
    done
  done
  tail -30 "$out/ddp.txt"
  cat "$out/ddp.jsonl"
  exit 0
fi

if [ "$max_bytes" = planmem ]; then  # PyTorch needs no build: its memory lines are measured while scalebench builds
  workloads=${PLANMEM_WORKLOADS:-transformer_big bert_base conv_seq2seq deeplabv3}
  export CUDA_VISIBLE_DEVICES=0 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True PYTHONUNBUFFERED=1
  echo "== PyTorch memory lines (eager and compiled, in parallel, beside the build): $workloads" | tee -a "$out/planmem.txt"
  for workload in $workloads; do
    for mode in eager compiled; do
      flag=$([ "$mode" = compiled ] && echo --compile)
      timeout 210 python3 scripts/pytorch_memory.py fit --workload "$workload" $flag \
        > "$out/fit_${workload}_$mode.jsonl" 2>> "$out/planmem.txt" &
    done
  done
fi

echo "== configure and build"
{ nvidia-smi; nvidia-smi topo -m; cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DSB_REQUIRE_CUDA=ON -DSB_REQUIRE_NCCL=ON -DSB_REQUIRE_MPI=ON &&
  cmake --build build-gpu -j "$(nproc)"; } > "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
grep "scalebench backends" "$out/build.log"
[ "$max_bytes" = build ] && exit 0

run_gpu_tests() {  # sets tests_rc; GPU_TEST_FILTER='A*:B*' runs just those gpu tests (gtest filter)
  echo "== gpu tests ${GPU_TEST_FILTER:-}"
  if [ -n "${GPU_TEST_FILTER:-}" ]; then
    timeout 200 build-gpu/tests/gpu_tests --gtest_filter="$GPU_TEST_FILTER" > "$out/ctest.log" 2>&1
  else
    # 4 at a time: ~330 gpu tests, each its own process and CUDA context, outgrew 200 s one by one (2026-12-04);
    # none of them times anything against a bar, and an H200 holds four tiny replicas at once.
    (cd build-gpu && timeout "${GPU_TESTS_LIMIT_S:-300}" ctest -L gpu -j 4 --output-on-failure --timeout 200) \
      > "$out/ctest.log" 2>&1
  fi
  tests_rc=$?
  grep -E "tests passed|FAILED|Failed|PASSED" "$out/ctest.log" | head -20
}

if [ "$max_bytes" = ab ]; then
  # Before/after on one GPU: this tree (built above) against an earlier commit's source tree, every workload
  # trained by both builds one after the other (bf16, the reference optimizers, as `anchors` does), within
  # AB_BUDGET_S (default 560) of the call's start; the gpu-labelled tests of this tree run while the earlier
  # tree builds (tests use the GPU, the build the CPU cores). Table last (scripts/ab_table.py).
  before_src=${2:?usage: gpu_check.sh ab BEFORE_SOURCE_DIR [steps] [workloads]}
  steps=${3:-20}
  workloads=${4:-transformer_big bert_base bert_finetune mt_dnn conv_seq2seq unsupmt nasnet_large yolov3 deeplabv3 pix2pixhd stylegan maskrcnn}
  budget=${AB_BUDGET_S:-560}
  ( run_gpu_tests; exit "$tests_rc" ) > "$out/gpu_tests_summary.txt" 2>&1 &
  tests_pid=$!
  { cmake -S "$before_src" -B build-before/build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
      -DSB_REQUIRE_CUDA=ON -DSB_REQUIRE_NCCL=ON -DSB_REQUIRE_MPI=ON &&
    cmake --build build-before/build -j "$(nproc)" --target scalebench; } > "$out/build_before.log" 2>&1 ||
    { tail -40 "$out/build_before.log"; exit 1; }
  wait "$tests_pid"; tests_rc=$?
  echo "earlier tree built, gpu tests done at ${SECONDS}s"
  dir="$out/ab" && mkdir -p "$dir"
  for workload in $workloads; do
    read -r -a optimizer <<< "$(optimizer_flags "$workload")"
    for side in before after; do
      binary=$([ "$side" = before ] && echo build-before/build/scalebench || echo build-gpu/scalebench)
      left=$((budget - SECONDS))
      if [ "$left" -lt 25 ]; then echo "skipped $side $workload: ${left}s left" >> "$out/ab.txt"; continue; fi
      echo "== $side $workload (at ${SECONDS}s)" >> "$out/ab.txt"
      CUDA_VISIBLE_DEVICES=0 timeout "$((left < 120 ? left : 120))" "$binary" run --workload "$workload" \
        --precision bf16 "${optimizer[@]}" --warmup 3 --steps "$steps" --force --json "$dir/${side}_$workload.json" \
        >> "$out/ab.txt" 2>&1 || echo "rc=$? $side $workload" >> "$out/ab.txt"
    done
  done
  cat "$out/gpu_tests_summary.txt"
  grep -E "^(rc=|skipped)" "$out/ab.txt"
  echo "== before ($before_src) / after (this tree), ${SECONDS}s"
  python3 scripts/ab_table.py "$dir"
  tar czf "$out/ab.tgz" -C "$out" ab && rm -rf "$dir"
  echo "tests rc=$tests_rc"
  exit 0
fi

if [ "$max_bytes" = sweep ]; then
  # Issue 29: the scaling curve in one job (--gpus-sweep auto over every visible GPU) against separate k-rank jobs
  # of the same workload and shapes, transformer_big and bert_base (bf16, reference optimizers): each k's units/s
  # total side by side, and the swept run's HTML report. One GPU: the sweep degrades to k = 1 with a notice.
  # Gpu tests first when GPU_TEST_FILTER names some. Table of scripts/sweep_table.py last.
  steps=${2:-20}
  [ -n "${GPU_TEST_FILTER:-}" ] && run_gpu_tests
  ngpu=$(nvidia-smi -L | wc -l)
  dir="$out/sweep" && mkdir -p "$dir"
  for workload in transformer_big bert_base; do
    read -r -a optimizer <<< "$(optimizer_flags "$workload")"
    common=(--workload "$workload" --precision bf16 "${optimizer[@]}" --warmup 3 --steps "$steps" --force)
    echo "== $workload: --gpus-sweep auto on $ngpu GPUs (at ${SECONDS}s)" >> "$out/sweep.txt"
    timeout 240 mpirun -np "$ngpu" --bind-to none -x NCCL_NVLS_ENABLE build-gpu/scalebench run "${common[@]}" \
      --gpus-sweep auto --json "$dir/swept_$workload.json" >> "$out/sweep.txt" 2>&1 || echo "rc=$? swept $workload" >> "$out/sweep.txt"
    for k in $(seq 1 "$ngpu"); do
      phases=$([ "$k" = 1 ] && echo solo || echo solo,comm,dp)
      echo "== $workload: a separate $k-rank job (at ${SECONDS}s)" >> "$out/sweep.txt"
      timeout 120 mpirun -np "$k" --bind-to none -x NCCL_NVLS_ENABLE build-gpu/scalebench run "${common[@]}" \
        --phases "$phases" --json "$dir/k${k}_$workload.json" >> "$out/sweep.txt" 2>&1 || echo "rc=$? k=$k $workload" >> "$out/sweep.txt"
    done
    build-gpu/scalebench report "$dir/swept_$workload.json" --html "$out/sweep_$workload.html" --force > /dev/null 2>&1
  done
  grep -E "^(rc=|# --gpus-sweep)" "$out/sweep.txt"
  python3 scripts/sweep_table.py "$dir"
  tar czf "$out/sweep.tgz" -C "$out" sweep && rm -rf "$dir"
  exit 0
fi

if [ "$max_bytes" = graphs ]; then
  # Issue 25: every workload's solo phase with each step enqueued node by node (--cuda-graph off) and replayed from
  # one captured graph (on), GPU 0, bf16, the anchors' optimizers; with GRAPHS_HOG=1 each mode again with the rank
  # pinned to core 3 beside a busy loop on that core (a weak or shared host). Within GRAPHS_BUDGET_S (default
  # 560) of the call's start; table last (scripts/graph_table.py).
  steps=${2:-20}
  workloads=${3:-transformer_big bert_base bert_finetune mt_dnn conv_seq2seq unsupmt nasnet_large yolov3 deeplabv3 pix2pixhd stylegan maskrcnn}
  budget=${GRAPHS_BUDGET_S:-560}
  modes=${GRAPHS_MODES:-off on}
  [ "${GRAPHS_HOG:-0}" = 1 ] && modes="off on off_hog on_hog"
  run_gpu_tests
  dir="$out/graphs" && mkdir -p "$dir"
  if [ "${GRAPHS_DP:-0}" = 1 ]; then
    # The dp step captured: on 2+ GPUs every workload at tiny scale (tests/gpu/dp_graph.sh), then bert_base and
    # transformer_big at full scale on 2 ranks, off and on; on one GPU (NCCL refuses 2 ranks on one GPU) the
    # capture over a one-rank NCCL communicator (gpu test DpStepGraph).
    if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
      timeout 300 bash tests/gpu/dp_graph.sh build-gpu/scalebench > "$out/graphs_dp.txt" 2>&1
      echo "dp_graph rc=$? (at ${SECONDS}s)" >> "$out/graphs_dp.txt"
      for workload in bert_base transformer_big; do
        for mode in off on; do
          echo "== dp 2 ranks $workload --cuda-graph $mode (at ${SECONDS}s)" >> "$out/graphs_dp.txt"
          timeout 150 mpirun -np 2 --bind-to none -x NCCL_NVLS_ENABLE build-gpu/scalebench run \
            --workload "$workload" --precision bf16 --warmup 3 --steps "$steps" --cuda-graph "$mode" --force \
            --json "$dir/dp_${mode}_$workload.json" >> "$out/graphs_dp.txt" 2>&1 || echo "rc=$? dp $mode $workload" >> "$out/graphs_dp.txt"
        done
      done
    else
      echo "one GPU: the dp capture over a one-rank NCCL communicator (DpStepGraph)" > "$out/graphs_dp.txt"
      timeout 200 build-gpu/tests/gpu_tests --gtest_filter='*DpStepGraph*' >> "$out/graphs_dp.txt" 2>&1
      echo "DpStepGraph rc=$? (at ${SECONDS}s)" >> "$out/graphs_dp.txt"
    fi
    grep -E "^(==|rc=|dp_graph|DpStepGraph|ok |FAIL|# (solo|dp):|# scaling|# weights|# status|\[  (FAILED|PASSED) )" "$out/graphs_dp.txt"
  fi
  for workload in $workloads; do
    read -r -a optimizer <<< "$(optimizer_flags "$workload")"
    for mode in $modes; do
      left=$((budget - SECONDS))
      if [ "$left" -lt 25 ]; then echo "skipped $mode $workload: ${left}s left" >> "$out/graphs.txt"; continue; fi
      pin=() hog_pid=""
      if [[ "$mode" == *_hog ]]; then
        taskset -c 3 bash -c 'while :; do :; done' &
        hog_pid=$!
        pin=(taskset -c 3)
      fi
      echo "== $mode $workload (at ${SECONDS}s)" >> "$out/graphs.txt"
      CUDA_VISIBLE_DEVICES=0 timeout "$((left < 120 ? left : 120))" "${pin[@]}" build-gpu/scalebench run \
        --workload "$workload" --precision bf16 "${optimizer[@]}" --phases solo --warmup 3 --steps "$steps" \
        --cuda-graph "${mode%_hog}" --force --json "$dir/${mode}_$workload.json" >> "$out/graphs.txt" 2>&1 ||
        echo "rc=$? $mode $workload" >> "$out/graphs.txt"
      [ -n "$hog_pid" ] && kill "$hog_pid" 2> /dev/null && wait "$hog_pid" 2> /dev/null
    done
  done
  grep -E "^(rc=|skipped|# solo:)" "$out/graphs.txt" | tail -60
  echo "== eager / graph steps (solo, GPU 0), ${SECONDS}s"
  python3 scripts/graph_table.py "$dir"
  tar czf "$out/graphs.tgz" -C "$out" graphs && rm -rf "$dir"
  echo "tests rc=$tests_rc"
  exit 0
fi

if [ "$max_bytes" = dp ]; then
  steps=${2:-30}
  ngpu=$(nvidia-smi -L | wc -l)
  run_gpu_tests
  runs="$out/runs" && mkdir -p "$runs"
  mpi=(mpirun -np "$ngpu" --bind-to none -x NCCL_NVLS_ENABLE)  # one node: ranks inherit the environment
  # name, environment, extra flags: the interconnects of issue 4's bar
  # (nvlink is the default: dp steps replayed as CUDA graphs; nvlink_eager the same run node by node, issue 25;
  # *_bucket_auto: --bucket-mb auto's measured choice against 25 MiB, issue 26)
  variants=("nvlink||" "nvlink_eager||--cuda-graph off" "nvlink_bucket_auto||--bucket-mb auto"
            "nvlink_no_overlap||--no-overlap" "host|NCCL_P2P_DISABLE=1|" "host_bucket_auto|NCCL_P2P_DISABLE=1|--bucket-mb auto"
            "host_bf16|NCCL_P2P_DISABLE=1|--grad-dtype bf16"
            "sockets|NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1|" "sockets_bf16|NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1|--grad-dtype bf16")
  for workload in transformer_big bert_base; do
    echo "== $workload alone on one GPU (a 1-rank job)" >> "$out/dp.txt"
    CUDA_VISIBLE_DEVICES=0 timeout 120 build-gpu/scalebench --workload "$workload" --phases solo --warmup 5 \
      --steps "$steps" --force --json "$runs/one_${workload}.json" >> "$out/dp.txt" 2>&1
    for variant in "${variants[@]}"; do
      IFS='|' read -r name environment flags <<< "$variant"
      echo "== $workload, $ngpu ranks, $name: $environment $flags" >> "$out/dp.txt"
      env -u NCCL_P2P_DISABLE -u NCCL_SHM_DISABLE $environment timeout 150 "${mpi[@]}" build-gpu/scalebench \
        --workload "$workload" --warmup 5 --steps "$steps" $flags --force --json "$runs/${name}_${workload}.json" \
        >> "$out/dp.txt" 2>&1 || echo "rc=$?" >> "$out/dp.txt"
    done
  done
  echo "== --check on the GPUs: $ngpu ranks x batch 16 against 1 rank x batch $((16 * ngpu))" >> "$out/dp.txt"
  timeout 150 "${mpi[@]}" build-gpu/scalebench --workload bert_base --batch 16 --phases dp --warmup 1 --steps 2 \
    --check >> "$out/dp.txt" 2>&1; echo "check rc=$?" >> "$out/dp.txt"
  tar czf "$out/runs.tgz" -C "$out" runs && rm -rf "$runs"
  grep -E "^(==|# (scaling|overlap|busbw|weights|check|status|comm|dp step|bucket size|dp: cuda graph)|  (solo|dp) |rc=)" "$out/dp.txt"
  echo "== summary"
  python3 scripts/scaling_summary.py "$out/runs.tgz"
  echo "tests rc=$tests_rc"
  exit 0
fi

if [ "$max_bytes" = planmem ]; then
  wait  # the PyTorch fits started before the build
  python3 scripts/pytorch_memory.py document "$out"/fit_*.jsonl > "$out/pytorch_memory.json" 2>> "$out/planmem.txt"
  (cd "$out" && tar czf fits.tgz fit_*.jsonl && rm -f fit_*.jsonl)
  echo "== predicted vs measured largest batch (scalebench maxbatch --memory G; PyTorch capped)" | tee -a "$out/planmem.txt"
  python3 scripts/pytorch_memory.py validate --scalebench build-gpu/scalebench --gpu H200 \
    --pytorch-memory "$out/pytorch_memory.json" --workloads "$(echo $workloads | tr ' ' ,)" --caps-gib 24,48 \
    --out "$out/validation.jsonl" --budget-s 270 > "$out/validation.md" 2>> "$out/planmem.txt"
  grep -E "^(# |pytorch_memory|Traceback)" "$out/planmem.txt" | tail -40
  echo "== PyTorch memory lines: $out/pytorch_memory.json, in src/plan/data/'s format (drop it in as is)"
  cat "$out/validation.md"
  exit 0
fi

if [ "$max_bytes" = suite ]; then
  steps=${2:-10}
  run_gpu_tests
  echo "== scalebench suite, one GPU" | tee -a "$out/suite.txt"
  CUDA_VISIBLE_DEVICES=0 timeout 420 build-gpu/scalebench suite --out "$out/suite" --warmup 2 --steps "$steps" \
    >> "$out/suite.txt" 2>&1; echo "suite rc=$?" >> "$out/suite.txt"
  # PyTorch's largest batch, searched from scalebench's verified one (expandable segments: its allocator's best
  # case against fragmentation); one JSON line per workload.
  for workload in transformer_big bert_base; do
    start=$(python3 -c 'import glob,json,sys
for f in glob.glob(sys.argv[1] + "/" + sys.argv[2] + "-*.json"):
    print(json.load(open(f))["maxbatch"]["verified"] or 500)' "$out/suite" "$workload" 2>/dev/null | head -1)
    echo "== PyTorch max batch of $workload from ${start:-the reference}" >> "$out/suite.txt"
    CUDA_VISIBLE_DEVICES=0 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True PYTHONUNBUFFERED=1 timeout 240 \
      python3 scripts/pytorch_reference.py --workload "$workload" --max-batch ${start:+--batch "$start"} \
      >> "$out/pytorch_max_batch.jsonl" 2>> "$out/suite.txt"
  done
  tar czf "$out/suite.tgz" -C "$out" suite && rm -rf "$out/suite"
  grep -vE "^\[suite" "$out/suite.txt" | grep -E "^(#|\||==|suite rc|- )" | tail -60
  cat "$out/pytorch_max_batch.jsonl" | python3 -c 'import json,sys
for line in sys.stdin:
    d = json.loads(line); print("pytorch", d["workload"], "max batch", d.get("max_batch"), "first failing", d.get("first_failing_batch"), d.get("status"))'
  echo "tests rc=$tests_rc"
  exit 0
fi

if [ "$max_bytes" = tune ]; then
  steps=${2:-30}
  ngpu=$(nvidia-smi -L | wc -l)
  run_gpu_tests
  runs="$out/runs" && mkdir -p "$runs"
  mpi=(mpirun -np "$ngpu" --bind-to none -x NCCL_NVLS_ENABLE)
  # Issue 26's levers beside the default: the all-reduces during the backward pass on 2, 4 or 8 CTAs
  # (--overlap-ctas, a communicator of their own), the tied table's rows reduced apart (sparse) or not, and the
  # gradient region registered with NCCL (locally, or as a symmetric window for NCCL's low-SM kernels).
  variants=("normal||" "high||--comm-priority high" "ctas8|NCCL_MAX_CTAS=8|" "ctas16|NCCL_MAX_CTAS=16|"
            "overlap_ctas2||--overlap-ctas 2" "overlap_ctas4||--overlap-ctas 4" "overlap_ctas8||--overlap-ctas 8"
            "rows_sparse||--embedding-grad sparse" "rows_dense||--embedding-grad dense"
            "reg_local||--grad-registration local" "reg_symmetric||--grad-registration symmetric"
            "reg_symmetric_ctas4||--grad-registration symmetric --overlap-ctas 4"
            "zero1||--strategy zero1" "zero2||--strategy zero2")
  for workload in transformer_big bert_base; do
    for variant in "${variants[@]}"; do
      IFS='|' read -r name environment flags <<< "$variant"
      echo "== $workload, $ngpu ranks, nvlink $name: $environment $flags" >> "$out/dp.txt"
      env $environment timeout 150 "${mpi[@]}" build-gpu/scalebench --workload "$workload" --warmup 5 \
        --steps "$steps" $flags --force --json "$runs/${name}_${workload}.json" >> "$out/dp.txt" 2>&1 || echo "rc=$?" >> "$out/dp.txt"
    done
  done
  echo "== --check on the GPUs: $ngpu ranks x batch 16 against 1 rank x batch $((16 * ngpu))" >> "$out/dp.txt"
  timeout 150 "${mpi[@]}" build-gpu/scalebench --workload bert_base --batch 16 --phases dp --warmup 1 --steps 2 \
    --check >> "$out/dp.txt" 2>&1; echo "check rc=$?" >> "$out/dp.txt"
  echo "== --check with the gradient region in a symmetric window" >> "$out/dp.txt"
  timeout 150 "${mpi[@]}" build-gpu/scalebench --workload bert_base --batch 16 --phases dp --warmup 1 --steps 2 \
    --grad-registration symmetric --check >> "$out/dp.txt" 2>&1; echo "check symmetric rc=$?" >> "$out/dp.txt"
  for strategy in zero1 zero2; do
    echo "== --check under --strategy $strategy" >> "$out/dp.txt"
    timeout 150 "${mpi[@]}" build-gpu/scalebench --workload bert_base --batch 16 --phases dp --warmup 1 --steps 2 \
      --strategy "$strategy" --check >> "$out/dp.txt" 2>&1; echo "check $strategy rc=$?" >> "$out/dp.txt"
  done
  echo "== fp16, 2 ranks" >> "$out/dp.txt"
  timeout 150 "${mpi[@]}" build-gpu/scalebench --workload transformer_big --precision fp16 --warmup 5 --steps "$steps" \
    --force --json "$runs/fp16_transformer_big.json" >> "$out/dp.txt" 2>&1; echo "fp16 rc=$?" >> "$out/dp.txt"
  for workload in transformer_big bert_base; do
    echo "== PyTorch DDP $workload, $ngpu ranks, nvlink" >> "$out/dp.txt"
    PYTHONUNBUFFERED=1 timeout 200 "${mpi[@]}" python3 scripts/pytorch_reference.py --workload "$workload" --ddp \
      --precision bf16 --warmup 10 --steps "$steps" >> "$out/ddp.jsonl" 2>> "$out/dp.txt"
    echo "== PyTorch DDP + ZeroRedundancyOptimizer $workload (beside --strategy zero1)" >> "$out/dp.txt"
    PYTHONUNBUFFERED=1 timeout 200 "${mpi[@]}" python3 scripts/pytorch_reference.py --workload "$workload" --ddp \
      --zero1 --precision bf16 --warmup 10 --steps "$steps" >> "$out/ddp.jsonl" 2>> "$out/dp.txt"
    echo "== PyTorch FSDP2 zero2 $workload (beside --strategy zero2)" >> "$out/dp.txt"
    PYTHONUNBUFFERED=1 timeout 200 "${mpi[@]}" python3 scripts/pytorch_reference.py --workload "$workload" --ddp \
      --fsdp2 zero2 --precision bf16 --warmup 10 --steps "$steps" >> "$out/ddp.jsonl" 2>> "$out/dp.txt"
  done
  tar czf "$out/runs.tgz" -C "$out" runs && rm -rf "$runs"
  grep -E "^(==|# (scaling|overlap|busbw|weights|check|status|comm|fp16|dp step|gradient buffers|--grad-registration|strategy)|  (solo|dp) |rc=|Traceback|Error)" "$out/dp.txt"
  echo "== summary"
  python3 scripts/scaling_summary.py "$out/runs.tgz" "$out/ddp.jsonl"
  echo "tests rc=$tests_rc"
  exit 0
fi

if [ "$max_bytes" = strategies ]; then
  steps=${2:-20}
  workloads=${3:-transformer_big}
  ngpu=$(nvidia-smi -L | wc -l)
  GPU_TEST_FILTER=${GPU_TEST_FILTER:-'*DpStepGraph*:*Optimizer*'} run_gpu_tests
  runs="$out/runs" && mkdir -p "$runs"
  if [ "$ngpu" -lt 2 ]; then
    # One GPU: two ranks share it. Correctness only (the sharded step against one rank with twice the batch), since
    # two ranks on one GPU measure no interconnect.
    for workload in $workloads; do
      for strategy in ${STRATEGIES:-ddp zero1 zero2 zero3}; do
        echo "== $workload, --strategy $strategy, 2 ranks sharing GPU 0, --check" >> "$out/strategies.txt"
        timeout 150 mpirun -np 2 --bind-to none -x NCCL_NVLS_ENABLE build-gpu/scalebench --workload "$workload" \
          --allow-gpu-sharing --batch 8 --phases dp --warmup 1 --steps 2 --strategy "$strategy" --check \
          >> "$out/strategies.txt" 2>&1; echo "check $strategy rc=$?" >> "$out/strategies.txt"
      done
    done
    grep -E "^(==|# (check|strategy|all-gathers|status|memory per GPU)|check .* rc=|scalebench: error)" "$out/strategies.txt"
    echo "tests rc=$tests_rc"
    exit 0
  fi
  mpi=(mpirun -np "$ngpu" --bind-to none -x NCCL_NVLS_ENABLE)
  for workload in $workloads; do
    for path in ${STRATEGY_PATHS:-nvlink host}; do
      emulate=""
      [ "$path" = host ] && emulate="--emulate host"
      for strategy in ${STRATEGIES:-ddp zero1 zero2 zero3}; do
        echo "== $workload, $ngpu ranks, $path, --strategy $strategy" >> "$out/strategies.txt"
        timeout 150 "${mpi[@]}" build-gpu/scalebench --workload "$workload" --warmup 5 --steps "$steps" \
          --strategy "$strategy" $emulate $(optimizer_flags "$workload") --force \
          --json "$runs/${path}_${strategy}_${workload}.json" >> "$out/strategies.txt" 2>&1 ||
          echo "rc=$?" >> "$out/strategies.txt"
      done
    done
    case "$workload" in pix2pixhd|stylegan) continue ;; esac  # two optimizers: no ZeRO or FSDP pair built
    # The PyTorch bar is the faster of eager and torch.compile: each configuration both ways (PYTORCH_MODES picks).
    for pytorch in "" "--zero1" "--fsdp2 zero2" "--fsdp2 zero3"; do
      for mode in ${PYTORCH_MODES:-eager --compile}; do
        [ "$mode" = eager ] && mode=""
        echo "== PyTorch $workload, $ngpu ranks, nvlink, DDP $pytorch ${mode:-eager}" >> "$out/strategies.txt"
        PYTHONUNBUFFERED=1 timeout 280 "${mpi[@]}" python3 scripts/pytorch_reference.py --workload "$workload" \
          --ddp $pytorch $mode --lr "$(reference_lr "$workload")" --precision bf16 --warmup 10 --steps "$steps" \
          >> "$out/pytorch.jsonl" 2>> "$out/strategies.txt" || echo "rc=$?" >> "$out/strategies.txt"
      done
    done
  done
  tar czf "$out/runs.tgz" -C "$out" runs
  build-gpu/scalebench compare "$runs"/*.json --html "$out/strategies.html" > "$out/compare.txt" 2>&1
  rm -rf "$runs"
  grep -E "^(==|# (scaling|strategy|all-gathers|busbw|weights|status|memory per GPU|the dilation)|rc=|Traceback|Error)" \
    "$out/strategies.txt"
  echo "== summary"
  python3 scripts/scaling_summary.py "$out/runs.tgz" "$out/pytorch.jsonl"
  echo "tests rc=$tests_rc"
  exit 0
fi

if [ "$max_bytes" = strategies-maxbatch ]; then
  ngpu=$(nvidia-smi -L | wc -l)
  ranks=$ngpu sharing="" memories=("" "--memory 24")
  if [ "$ngpu" -lt 2 ]; then
    # One GPU: two ranks share it, each held to 24 GiB (two 24 GB cards' worth of a 139 GiB H200), so the sharded
    # strategies' 1/N is measured at N = 2; the card's whole memory cannot be given to both.
    ranks=2 sharing="--allow-gpu-sharing" memories=("--memory 24")
  fi
  for workload in ${2:-transformer_big bert_base}; do
    for memory in "${memories[@]}"; do
      for strategy in ${STRATEGIES:-ddp zero1 zero2 zero3}; do
        echo "== maxbatch $workload, $ranks ranks on $ngpu GPU(s), --strategy $strategy $memory" >> "$out/maxbatch.txt"
        timeout 240 mpirun -np "$ranks" --bind-to none -x NCCL_NVLS_ENABLE build-gpu/scalebench maxbatch $sharing \
          -w "$workload" --strategy "$strategy" $memory --json "$out/maxbatch_${workload}_${strategy}${memory:+_24}.json" \
          >> "$out/maxbatch.txt" 2>&1 || echo "rc=$?" >> "$out/maxbatch.txt"
      done
    done
  done
  grep -E "^(==|# maxbatch|#   (sharded|parameters|gradients):?|\| |rc=|scalebench: error)" "$out/maxbatch.txt"
  exit 0
fi

if [ "$max_bytes" = sockets ]; then
  # Run-to-run spread of the emulated socket path (TCP over loopback), the path `plan --validate` missed: the
  # same two jobs repeated, then the plan's predictions of every repeat with the shipped calibration.
  repeats=${2:-3}
  ngpu=$(nvidia-smi -L | wc -l)
  runs="$out/sockets" && mkdir -p "$runs"
  for repeat in $(seq "$repeats"); do
    for workload in transformer_big bert_base; do
      timeout 150 mpirun -np "$ngpu" --bind-to none -x NCCL_NVLS_ENABLE build-gpu/scalebench --workload "$workload" \
        --emulate socket --warmup 3 --steps 10 --force --json "$runs/${workload}_socket_$repeat.json" \
        >> "$out/sockets.txt" 2>&1 || echo "rc=$? $workload $repeat" >> "$out/sockets.txt"
    done
  done
  grep -E "^(# scaling|rc=)" "$out/sockets.txt"
  build-gpu/scalebench plan --validate "$runs"/*.json | tail -8
  tar czf "$out/sockets.tgz" -C "$out" sockets && rm -rf "$runs"
  exit 0
fi

if [ "$max_bytes" = cnn ]; then
  steps=${2:-20}
  ngpu=$(nvidia-smi -L | wc -l)
  run_gpu_tests
  runs="$out/runs" && mkdir -p "$runs"
  : > "$out/torch.jsonl"
  mpi=(mpirun -np "$ngpu" --bind-to none -x NCCL_NVLS_ENABLE)
  # Every rank alone, then (on more than one GPU) data-parallel in the same job; SGD momentum as the references.
  # PyTorch after each: the same-shape model alone on GPU 0 (deeplabv3 also as torchvision ships it, OS8), then
  # DDP on every GPU.
  for workload in ${CNN_WORKLOADS:-deeplabv3 nasnet_large yolov3}; do
    echo "== $workload: scalebench on $ngpu GPU(s), then PyTorch" >> "$out/cnn.txt"
    timeout 400 "${mpi[@]}" build-gpu/scalebench run --workload "$workload" --optimizer reference --warmup 5 \
      --steps "$steps" --force --json "$runs/${workload}.json" >> "$out/cnn.txt" 2>&1 || echo "rc=$?" >> "$out/cnn.txt"
    [ "${PYTORCH:-1}" = 0 ] && continue  # PYTORCH=0: scalebench only (PyTorch measured in another call)
    lr=$(reference_lr "$workload")
    for model in $workload $([ "$workload" = deeplabv3 ] && echo deeplabv3_os8); do
      CUDA_VISIBLE_DEVICES=0 PYTHONUNBUFFERED=1 timeout 240 python3 scripts/pytorch_reference.py --workload "$model" \
        --precision bf16 --lr "$lr" --warmup 10 --steps "$steps" >> "$out/torch.jsonl" 2>> "$out/cnn.txt"
    done
    if [ "$workload" = maskrcnn ]; then  # also at shared/ANCHORS.md's batch 8 (torchvision, AMP: 11.8 img/s)
      CUDA_VISIBLE_DEVICES=0 PYTHONUNBUFFERED=1 timeout 240 python3 scripts/pytorch_reference.py --workload maskrcnn \
        --batch 8 --precision bf16 --lr "$lr" --warmup 10 --steps "$steps" >> "$out/torch.jsonl" 2>> "$out/cnn.txt"
    fi
    if [ "$ngpu" -gt 1 ] && [ "${PYTORCH_DDP:-1}" = 1 ]; then  # PYTORCH_DDP=0: PyTorch alone only
      PYTHONUNBUFFERED=1 timeout 300 "${mpi[@]}" python3 scripts/pytorch_reference.py --workload "$workload" --ddp \
        --precision bf16 --lr "$lr" --warmup 10 --steps "$steps" >> "$out/ddp.jsonl" 2>> "$out/cnn.txt"
    fi
  done
  tar czf "$out/runs.tgz" -C "$out" runs && rm -rf "$runs"
  grep -E "^(==|# (scaling|overlap|busbw|status|comm|dp step|breakdown|time)|  (solo|dp) |rc=|Traceback|Error|error)" "$out/cnn.txt"
  echo "== summary"
  python3 scripts/scaling_summary.py "$out/runs.tgz" "$out/ddp.jsonl" 2>&1 | tail -20
  python3 -c 'import json,sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    print("pytorch %-14s batch %3d  %8.1f img/s  %7.2f ms  %.1f GiB" % (d["workload"], d["batch"], d.get("units_per_s", 0), d.get("step_ms_median", 0), (d.get("peak_allocated_bytes") or 0) / 2**30))' "$out/torch.jsonl"
  echo "tests rc=$tests_rc"
  exit 0
fi

if [ "$max_bytes" = train ]; then
  steps=${2:-30}
  echo "== gpu tests"
  (cd build-gpu && timeout 240 ctest -L gpu --output-on-failure --timeout 200) > "$out/ctest.log" 2>&1
  tests_rc=$?
  grep -E "tests passed|FAILED|Failed" "$out/ctest.log" | head -20
  : > "$out/torch.jsonl"
  for workload in transformer_big bert_base bert_finetune mt_dnn; do
    echo "== $workload: scalebench, then PyTorch eager at the same shape" >> "$out/train.txt"
    CUDA_VISIBLE_DEVICES=0 timeout 240 build-gpu/scalebench run --workload "$workload" --precision bf16 \
      --warmup 5 --steps "$steps" --force --json "$out/run_$workload.json" >> "$out/train.txt" 2>&1
    case "$workload" in transformer_big|bert_base)  # the models scripts/pytorch_reference.py has
      CUDA_VISIBLE_DEVICES=0 PYTHONUNBUFFERED=1 timeout 240 python3 scripts/pytorch_reference.py --workload "$workload" \
        --precision bf16 --warmup 10 --steps "$steps" >> "$out/torch.jsonl" 2>> "$out/train.txt" ;;
    esac
  done
  echo "== bert_base with --recompute (GELU outputs recomputed in the backward pass: memory for time)" >> "$out/train.txt"
  CUDA_VISIBLE_DEVICES=0 timeout 240 build-gpu/scalebench run --workload bert_base --precision bf16 --recompute \
    --warmup 5 --steps "$steps" >> "$out/train.txt" 2>&1
  cat "$out/train.txt"
  echo "== summary"
  python3 scripts/training_summary.py "$out"
  echo "tests rc=$tests_rc"
  exit 0
fi

echo "== tests (unit, gpu, mpi, e2e)"
(cd build-gpu && timeout 200 ctest --output-on-failure -j 8 --timeout 120) > "$out/ctest.log" 2>&1
tests_rc=$?
tail -4 "$out/ctest.log"

ngpu=$(nvidia-smi -L | wc -l)
sb=build-gpu/scalebench
mpi=(timeout 150 mpirun -np "$ngpu" --bind-to none -x NCCL_NVLS_ENABLE)  # one node: ranks inherit the environment

echo "== topo"
"${mpi[@]}" $sb topo --force --json "$out/topo.json" > "$out/topo.txt" 2>&1
sed -n '1,40p' "$out/topo.txt"

echo "== bandwidth over the default transport (NVLink where present)"
"${mpi[@]}" $sb bandwidth --op all --min-bytes 1M --max-bytes "$max_bytes" --check \
  --force --json "$out/bandwidth_nvlink.json" > "$out/bandwidth_nvlink.txt" 2>&1
nvlink_rc=$?
# nccl-tests' timing method (one event pair around the timed loop), for comparison with its published runs.
"${mpi[@]}" $sb bandwidth --op all --min-bytes 1M --max-bytes "$max_bytes" --aggregate-timing \
  --force --json "$out/bandwidth_nvlink_aggregate.json" > /dev/null 2>&1
{
  echo "== graph replay, small sizes"
  "${mpi[@]}" $sb bandwidth --op all_reduce --min-bytes 8 --max-bytes 1M --graph --check
  echo "== eager, small sizes"
  "${mpi[@]}" $sb bandwidth --op all_reduce --min-bytes 8 --max-bytes 1M --check
  echo "== every reduce op and type through NCCL (nccl-tests' -o all -d all), small sizes"
  "${mpi[@]}" $sb bandwidth --op all -o all -d all --min-bytes 8 --max-bytes 1M --check
  echo "== bf16 all_reduce"
  "${mpi[@]}" $sb bandwidth --op all_reduce --dtype bf16 --min-bytes 1M --max-bytes 512M --check
  # nccl-tests' -R 1 and -R 2: local registration, and a symmetric window (NCCL's symmetric kernels over NVLink).
  for registration in local symmetric; do
    echo "== all_reduce, buffers registered: $registration (aggregate timing)"
    "${mpi[@]}" $sb bandwidth --op all_reduce,all_gather,reduce_scatter -R "$registration" --aggregate-timing \
      --min-bytes 1M --max-bytes 512M --check --force --json "$out/bandwidth_register_$registration.json"
  done
  echo "== out of memory must be a clean exit 3 on every rank (expect rc=3)"
  "${mpi[@]}" $sb bandwidth --op all_reduce --min-bytes 1M --max-bytes 200G
  echo "out-of-memory rc=$?"
  echo "== P2P disabled (host shared memory)"
  NCCL_P2P_DISABLE=1 "${mpi[@]}" $sb bandwidth --op all_reduce --min-bytes 1M --max-bytes 512M --check
  echo "== P2P and SHM disabled (sockets)"
  NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 "${mpi[@]}" $sb bandwidth --op all_reduce --min-bytes 1M \
    --max-bytes 128M --iters 10 --check
} > "$out/bandwidth_variants.txt" 2>&1

echo "== summary"
python3 scripts/bandwidth_summary.py "$out/bandwidth_nvlink.json"
echo "-- the same with --aggregate-timing"
python3 scripts/bandwidth_summary.py "$out/bandwidth_nvlink_aggregate.json"
grep -E "out-of-memory rc|error" "$out/bandwidth_variants.txt"
grep -E "^# (backend|Peak|Out of|Buffers registered)|transport" "$out/bandwidth_variants.txt"
for registration in local symmetric; do
  echo "-- registered: $registration"
  [ -f "$out/bandwidth_register_$registration.json" ] &&
    python3 scripts/bandwidth_summary.py "$out/bandwidth_register_$registration.json"
done
echo "tests rc=$tests_rc  nvlink sweep rc=$nvlink_rc"

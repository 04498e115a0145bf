#!/usr/bin/env bash
# Issue 7 on a GPU machine (2 GPUs or more): the fault tests with NCCL and the --emulate figures.
#   scripts/gpu_faults.sh            build (gpu_check.sh build), then:
#     1. timeout: rank 1 sleeps in dp step 5; rank 0's NCCL wait gives up after --timeout 20, names rank 1
#        (exit 3) and writes the partial JSON (solo, comm);
#     2. kill: rank 1 SIGKILLs itself in dp step 5; mpirun stops rank 0, which has written solo and comm;
#     3. SIGTERM on both ranks in dp step 5: both stop at that boundary, dp's 2 timed steps kept (exit 3);
#     4. bad input: one rank more than GPUs (exit 2, both GPUs untouched), --emulate with a clashing variable;
#     5. transformer_big over NVLink, --emulate host and --emulate socket, and compare's Markdown table.
# Logs and JSON in $OUT (default ./gpu-check-out); a summary is printed last.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$PWD/gpu-check-out}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0  # NVLink multicast can take a shared host's GPUs out of service: never on
bash scripts/gpu_check.sh build || exit 1
sb=build-gpu/scalebench
ngpu=$(nvidia-smi -L | wc -l)
mpi=(mpirun -np 2 --bind-to none -x NCCL_NVLS_ENABLE)  # local ranks inherit SCALEBENCH_FAULT
tb=(--workload transformer_big --warmup 3 --steps 6)
summary="$out/faults_summary.txt"
: > "$summary"

# case NAME FAULT -- ARGS...: one job; exit code, seconds, leftover processes and the JSON's status, phases,
# dp steps and error go to the summary.
case_run() {
  local name=$1 fault=$2
  shift 3
  local start=$SECONDS
  SCALEBENCH_FAULT=$fault timeout 300 "$@" --json "$out/fault_$name.json" --force > "$out/fault_$name.txt" 2>&1
  local rc=$? took=$((SECONDS - start))
  sleep 2
  local left
  left=$(pgrep -f "fault_$name.json" | wc -l)
  python3 - "$out/fault_$name.json" "$name" "$rc" "$took" "$left" >> "$summary" <<'PY'
import json, sys
path, name, rc, took, left = sys.argv[1:]
try:
    d = json.load(open(path))
    dp = d["phases"].get("dp")
    steps = [len(r["step_ms"]) for r in dp["ranks"]] if dp else None
    print(f"{name}: exit {rc} after {took} s, {left} processes left; JSON status {d['status']}, phases "
          f"{sorted(d['phases'])}, dp timed steps {steps}; error: {d['error']}")
except Exception as e:  # no file is a finding too
    print(f"{name}: exit {rc} after {took} s, {left} processes left; no JSON ({e})")
PY
  grep -E "scalebench: error|suspect|stopped by" "$out/fault_$name.txt" | sed 's/^/    /' >> "$summary"
}

case_run timeout "sleep:rank=1:phase=dp:step=5" -- "${mpi[@]}" $sb "${tb[@]}" --timeout 20
case_run kill "kill:rank=1:phase=dp:step=5" -- "${mpi[@]}" $sb "${tb[@]}" --timeout 20
case_run term "term:rank=all:phase=dp:step=5" -- "${mpi[@]}" $sb "${tb[@]}" --timeout 20

echo "== bad input" >> "$summary"
mpirun -np $((ngpu + 1)) --bind-to none -x NCCL_NVLS_ENABLE $sb bandwidth --max-bytes 1M > "$out/bad_ranks.txt" 2>&1
echo "$((ngpu + 1)) ranks on $ngpu GPUs: exit $?" >> "$summary"
grep "scalebench: error" "$out/bad_ranks.txt" | sed 's/^/    /' >> "$summary"
NCCL_P2P_DISABLE=0 "${mpi[@]}" -x NCCL_P2P_DISABLE $sb bandwidth --emulate host > "$out/bad_emulate.txt" 2>&1
echo "--emulate host with NCCL_P2P_DISABLE=0: exit $?" >> "$summary"
grep "scalebench: error" "$out/bad_emulate.txt" | sed 's/^/    /' >> "$summary"

echo "== transformer_big: NVLink, emulated host path, emulated sockets ($ngpu GPUs)" >> "$summary"
for emulate in none host socket; do
  env -u NCCL_P2P_DISABLE -u NCCL_SHM_DISABLE -u NCCL_IB_DISABLE -u NCCL_NET timeout 300 \
    mpirun -np "$ngpu" --bind-to none -x NCCL_NVLS_ENABLE $sb --workload transformer_big --warmup 5 --steps 20 \
    --emulate "$emulate" --json "$out/emulate_$emulate.json" --force > "$out/emulate_$emulate.txt" 2>&1
  echo "--emulate $emulate: exit $?" >> "$summary"
  grep -E "EMULATED|transport" "$out/emulate_$emulate.txt" | head -3 | sed 's/^/    /' >> "$summary"
done
$sb compare "$out/emulate_none.json" "$out/emulate_host.json" "$out/emulate_socket.json" --markdown \
  > "$out/emulate_compare.md" 2>&1
cat "$summary" "$out/emulate_compare.md"

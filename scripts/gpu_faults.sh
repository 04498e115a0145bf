#!/usr/bin/env bash
# Fault tests on the GPU machine (issues 7 and 27), one command; logs and JSON in $OUT (default
# ./gpu-check-out), a pass/fail table printed last.
#   scripts/gpu_faults.sh          build scalebench in build-gpu/ (gpu_check.sh's configuration: CUDA, NCCL and
#                                  MPI required), then:
#     A. SIGKILL of rank 0 one second into the dp phase: every process ends within --timeout + 15 s, and the
#        JSON keeps the finished solo and comm phases (rank 0 wrote them as they finished; rank 1, on the same
#        host, rewrites them naming rank 0 as dead);
#     B. SIGSTOP of rank 1 in the middle of the comm phase's all-reduces: rank 0 times out after --timeout,
#        names rank 1, keeps the solo phase; every process ends within --timeout + 15 s.
#   On one GPU both ranks share it (--allow-gpu-sharing) and the all-reduces go through MPI: NCCL refuses two
#   ranks on one device ("Duplicate GPU detected"). With two GPUs or more they run on NCCL, and the older
#   cases follow (C: a rank that sleeps past --timeout, D: SIGTERM on every rank, E: bad input, F: --emulate).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$PWD/gpu-check-out}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0  # NVLink multicast can take a shared host's GPUs out of service: never on
# The executable only (gpu_check.sh's configuration and build folder, without the test programs): minutes less.
echo "== configure and build scalebench in build-gpu"
{ cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSB_REQUIRE_CUDA=ON \
    -DSB_REQUIRE_NCCL=ON -DSB_REQUIRE_MPI=ON && cmake --build build-gpu -j "$(nproc)" --target scalebench; } \
  > "$out/faults_build.log" 2>&1 || { tail -40 "$out/faults_build.log"; exit 1; }
sb=$PWD/build-gpu/scalebench
ngpu=$(nvidia-smi -L | wc -l)
timeout_s=20
if [ "$ngpu" -ge 2 ]; then
  shape=(--backend nccl)
  where="2 GPUs, NCCL"
else
  shape=(--allow-gpu-sharing --backend mpi)
  where="2 ranks on 1 GPU, MPI all-reduce"
fi
mpi=(mpirun -np 2 --bind-to none -x NCCL_NVLS_ENABLE)
# bert_base: 110 M parameters, so the comm phase's all-reduces last long enough to stop a rank inside them.
job=(--workload bert_base --batch 16 --warmup 2 --timeout "$timeout_s" "${shape[@]}")
table="$out/faults_table.txt"
printf '%-34s %-6s %s\n' case result detail > "$table"

# row NAME OK DETAIL
row() { printf '%-34s %-6s %s\n' "$1" "$([ "$2" = 1 ] && echo PASS || echo FAIL)" "$3" >> "$table"; }

# phases FILE: the JSON's status, phases and error, or "no JSON".
phases() {
  python3 - "$1" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
    print(d["status"], ",".join(sorted(d["phases"])), "|", d.get("error", "")[:160])
except Exception as e:
    print("no JSON", e)
PY
}

# wait_gone MARKER LIMIT: seconds until no process of the job (MARKER in its command line) is left, or LIMIT+1.
wait_gone() {
  local t0=$SECONDS
  while pgrep -f "$1" > /dev/null && [ $((SECONDS - t0)) -le "$2" ]; do sleep 0.2; done
  echo $((SECONDS - t0))
}

# rank_pid MARKER RANK: the pid of the scalebench process of RANK in the job whose command line holds MARKER.
rank_pid() {
  for pid in $(pgrep -f "$1"); do
    [ "$(cat /proc/$pid/comm 2> /dev/null)" = scalebench ] &&
      tr '\0' '\n' < /proc/$pid/environ 2> /dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2" && echo "$pid"
  done
}

# has_phase FILE PHASE: FILE is a result that holds PHASE (rank 0 rewrites it after every finished phase).
has_phase() { python3 -c "import json,sys; sys.exit(0 if sys.argv[2] in json.load(open(sys.argv[1]))['phases'] else 1)" "$1" "$2" 2> /dev/null; }

# A. SIGKILL of rank 0 one second into the dp phase (once the comm phase is on disk).
json="$out/fault_kill0.json"
rm -f "$json"
"${mpi[@]}" "$sb" "${job[@]}" --steps 40 --json "$json" > "$out/fault_kill0.txt" 2>&1 &
launcher=$!
for _ in $(seq 1200); do has_phase "$json" comm && break; sleep 0.2; done
sleep 1
victim=$(rank_pid "$json" 0)
killed_at=$SECONDS
[ -n "$victim" ] && kill -KILL "$victim"
( sleep $((timeout_s + 60)); kill -9 $launcher 2> /dev/null ) &
backstop=$!
wait $launcher
rc=$?
kill $backstop 2> /dev/null
left=$(wait_gone "$json" 15)
ended=$((SECONDS - killed_at))
state=$(phases "$json")
limit=$((timeout_s + 15))
ok=0
[ -n "$victim" ] && [ "$ended" -le "$limit" ] && [[ "$state" == "failed comm,solo |"* ]] && ok=1
row "A SIGKILL rank 0 in dp" $ok "$where; pid ${victim:-none}; every process ended $ended s after the kill (limit $limit); mpirun exit $rc; JSON: $state"

# B. SIGSTOP of rank 1 once the solo phase is written (the comm phase's all-reduces are next).
json="$out/fault_stop1.json"
rm -f "$json"
"${mpi[@]}" "$sb" "${job[@]}" --phases solo,comm,dp --steps 40 --json "$json" > "$out/fault_stop1.txt" 2>&1 &
launcher=$!
for _ in $(seq 600); do [ -s "$json" ] && break; sleep 0.1; done
sleep 0.5
victim=$(rank_pid "$json" 1)
stopped_at=$SECONDS
[ -n "$victim" ] && kill -STOP "$victim"
limit=$((timeout_s + 15))
( sleep $((limit + 30)); kill -9 $launcher 2> /dev/null ) &  # a backstop, so the script itself never hangs
backstop=$!
wait $launcher
rc=$?
ended=$((SECONDS - stopped_at))
kill $backstop 2> /dev/null
# mpirun leaves a stopped rank stopped (its SIGTERM stays pending); a scheduler would SIGCONT or SIGKILL it.
# Continued, it must end by itself within seconds and leave rank 0's result (which names it) alone.
[ -n "$victim" ] && kill -CONT "$victim" 2> /dev/null
left=$(wait_gone "$json" 15)
state=$(phases "$json")
ok=0
[ -n "$victim" ] && [ "$ended" -le "$limit" ] && [ "$left" -le 15 ] && [[ "$state" == failed*solo* ]] &&
  grep -q "suspect: rank 1" <<< "$state" && ok=1
row "B SIGSTOP rank 1 in all-reduce" $ok "pid ${victim:-none}; job ended $ended s after the stop (limit $limit), the stopped rank $left s after SIGCONT; exit $rc; JSON: $state"
grep -h "scalebench: error" "$out/fault_stop1.txt" | head -2 | sed 's/^/    /' >> "$table"

if [ "$ngpu" -ge 2 ]; then
  tb=(--workload transformer_big --warmup 3 --steps 6 --timeout 20)
  for spec in "C-sleep sleep:rank=1:phase=dp:step=5 3" "D-term term:rank=all:phase=dp:step=5 3"; do
    read -r name fault want <<< "$spec"
    SCALEBENCH_FAULT=$fault timeout 300 "${mpi[@]}" -x SCALEBENCH_FAULT "$sb" "${tb[@]}" --json "$out/fault_$name.json" \
      > "$out/fault_$name.txt" 2>&1
    rc=$?
    row "$name" $([ $rc -eq "$want" ] && echo 1 || echo 0) "exit $rc; JSON: $(phases "$out/fault_$name.json")"
  done
  mpirun -np $((ngpu + 1)) --bind-to none -x NCCL_NVLS_ENABLE "$sb" bandwidth --max-bytes 1M > "$out/bad_ranks.txt" 2>&1
  rc=$?
  row "E $((ngpu + 1)) ranks on $ngpu GPUs" $([ $rc -eq 2 ] && echo 1 || echo 0) "exit $rc"
  for emulate in none host socket; do
    env -u NCCL_P2P_DISABLE -u NCCL_SHM_DISABLE timeout 300 mpirun -np "$ngpu" --bind-to none -x NCCL_NVLS_ENABLE \
      "$sb" --workload transformer_big --warmup 5 --steps 20 --emulate "$emulate" --json "$out/emulate_$emulate.json" \
      > "$out/emulate_$emulate.txt" 2>&1
    rc=$?
    row "F --emulate $emulate" $([ $rc -eq 0 ] && echo 1 || echo 0) "exit $rc"
  done
fi
cat "$table"
! grep -q " FAIL " "$table"

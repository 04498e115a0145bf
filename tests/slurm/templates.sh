#!/usr/bin/env bash
# scripts/slurm under a real Slurm (issue 32): a one-node cluster of this machine (lib/cluster.bash; Slurm
# and munge installed with apt when missing, a skip when that cannot be done) runs the templates on the
# CPU device at tiny scale, 2 tasks: (1) one_node.sbatch: topo, bandwidth --check, a data-parallel run;
# (2) the time limit: SIGTERM from --signal stops the run at a step boundary, partial JSON kept; (3)
# scancel: no process left, the finished commands' results kept (with --signal=TERM: the partial JSON);
# (4) a task that dies: the job ends at once, srun names it; one that hangs: the job ends within --timeout
# + 15 s, rank 0 names it; (5) mpirun.sh inside salloc. Copies of one_node.sbatch broken on purpose (a wrong
# --mpi, no --signal) must fail cases 1 and 2. The daemons are stopped, whatever happens, and the test
# asserts that nothing of the cluster is left running.
#   usage: tests/slurm/templates.sh path/to/scalebench      (as root; ctest -L slurm)
source "$(dirname "$0")/../e2e/lib/common.bash"
source "$(dirname "$0")/lib/cluster.bash"
source "$(dirname "$0")/lib/jobs.bash"
repo=$(cd "$(dirname "$0")/../.." && pwd)
SB=$(realpath "$SB")
CLUSTER_DIR=$WORK
trap 'cluster_stop; [ "${SB_SLURM_KEEP:-0}" = 1 ] && echo "kept $WORK" || rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

[ "$(id -u)" -eq 0 ] || cluster_skip "the Slurm daemons need root"
mpi_available || cluster_skip "no MPI"
[ "$(nproc)" -ge 2 ] || cluster_skip "2 tasks need 2 CPUs, this machine has $(nproc)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # Open MPI refuses root without them
cluster_install
cluster_write_config
if ! cluster_start; then
  echo "FAIL: the cluster did not come up"
  tail -n 20 "$WORK"/*.log "$WORK"/*.out
  exit 1
fi
CLUSTER_DEADLINE=$((SECONDS + 400))  # the cases take about 3 minutes; ctest stops the test at 10
echo "cluster up: $(sinfo -h -N -o '%N %c CPUs %t');" \
  "srun --mpi=list: $(srun --mpi=list 2>&1 | tr -d '\t' | tail -n +2 | xargs)"

# The submit folders: the repository's scripts, and copies of them with one_node.sbatch broken.
mkdir -p "$WORK/good" "$WORK/wrong-mpi/scripts" "$WORK/no-signal/scripts"
ln -s "$repo/scripts" "$WORK/good/scripts"
for broken in wrong-mpi no-signal; do cp -r "$repo/scripts/slurm" "$WORK/$broken/scripts/"; done
sed -i 's/^mpi=.*/mpi=none/' "$WORK/wrong-mpi/scripts/slurm/one_node.sbatch"
sed -i '/^#SBATCH --signal/d' "$WORK/no-signal/scripts/slurm/one_node.sbatch"

# Every job: the CPU device at tiny scale (SB_DEVICE=cpu, scripts/slurm/run_suite.sh), 2 tasks of 1 CPU,
# no GPU; the template's other #SBATCH lines (--signal, --output) as written.
export SB SB_DEVICE=cpu
cpu_job=(--ntasks-per-node=2 --cpus-per-task=1 --gpus-per-task=0)
long_run="--scale tiny --batch 2 --warmup 1 --steps 1000000"

# (1) one_node.sbatch: topo, the bandwidth sweep with --check and a dp run, all through srun.
case_one_node() {
  local dir=$1 id results state
  id=$(submit "$dir" -- "${cpu_job[@]}" --job-name=sb-one-node scripts/slurm/one_node.sbatch) ||
    { check "sbatch refused the job" false; return; }
  results=$dir/results/sb-one-node-$id
  case_files=("$dir/sb-one-node-$id.out" "$results/topo.txt" "$results/bandwidth.txt"
    "$results/run_bert_base.txt")
  state=$(wait_job "$id" 120)
  check "job $id ended $state, expected COMPLETED 0:0" [ "$state" = "COMPLETED 0:0" ]
  check "srun started the tasks with a PMI flavour" \
    grep -qE -- "^== topo: srun --mpi=(pmix|pmi2) " "$dir/sb-one-node-$id.out"
  check "topo.json: 2 ranks on 1 node" json_is "$results/topo.json" \
    "d['world_size'] == 2 and d['nodes'][0]['local_ranks'] == 2"
  check "bandwidth.json: 2 ranks, checked, no wrong element" json_is "$results/bandwidth.json" \
    "d['status'] == 'ok' and d['context']['nranks'] == 2 and d['config']['check'] and len(d['results']) > 0 \
     and all(r['wrong'] == 0 for r in d['results'])"
  check "run_bert_base.json: ok, 2 ranks of one srun step of job $id" json_is "$results/run_bert_base.json" \
    "d['status'] == 'ok' and d['nranks'] == 2 and env['SLURM_JOB_ID'] == '$id' and env['SLURM_STEP_NUM_TASKS'] == '2'"
}

# started_run DIR NAME ID: waits until the job's run is training: rank 0 prints its header once its stop
# handlers are in place (a SIGTERM before that kills the rank at once); a second more for rank 1's.
started_run() {
  wait_for 60 "job $3's run to print its header" \
    grep -qs "^# scalebench .* run: " "$1/results/$2-$3/run_bert_base.txt" && sleep 1
}

# check_stopped_by_sigterm RESULTS: the ranks stopped at a step boundary, rank 0 wrote the partial result.
check_stopped_by_sigterm() {
  check "the ranks stopped by SIGTERM at a step boundary" grep -q "stopped by SIGTERM after" "$1/run_bert_base.txt"
  check "partial JSON with status failed" json_is "$1/run_bert_base.json" \
    "d['status'] == 'failed' and 'SIGTERM' in d['error'] and len(d['phases']) > 0"
}

# (2) The time limit: Slurm counts limits in minutes and checks them every 30 s, so a limit of 1 minute set
# once the run is under way expires mid-run, and the template's --signal=TERM@60 is due at once (sent at
# the next check, before the limit). Without --signal the job would run into the limit: TIMEOUT.
case_time_limit() {
  local dir=$1 id results state
  id=$(submit "$dir" RUN_ARGS="$long_run" -- "${cpu_job[@]}" --job-name=sb-limit scripts/slurm/one_node.sbatch) ||
    { check "sbatch refused the job" false; return; }
  results=$dir/results/sb-limit-$id
  case_files=("$dir/sb-limit-$id.out" "$results/run_bert_base.txt")
  check "the run started" started_run "$dir" sb-limit "$id"
  scontrol update JobId="$id" TimeLimit=1
  # The signal is due at once; 50 s covers Slurm's 30 s between checks. A job still running then has had
  # no SIGTERM and would run into the limit: it is cancelled rather than waited for.
  state=$(wait_job "$id" 50)
  check "job $id: $state (waited 50 s after setting its limit), expected FAILED 3:0 (SIGTERM, exit 3)" \
    [ "$state" = "FAILED 3:0" ]
  [ "$state" = "FAILED 3:0" ] || { scancel "$id" 2> /dev/null; wait_job "$id" 30 > /dev/null; }
  check_stopped_by_sigterm "$results"
  check "the suite skipped what was left" grep -q "stopped by a signal" "$dir/sb-limit-$id.out"
}

# (3) scancel of a running job. A plain scancel sends SIGTERM to every process of the job, srun included,
# and srun turns a SIGTERM of its own into SIGKILL for its tasks: the ranks die at once, what the finished
# commands wrote stays. `scancel --signal=TERM` signals the steps only: the ranks stop at a step boundary and
# rank 0 writes the partial result.
case_scancel() {
  local dir=$1 how=$2 id results state name=sb-cancel-$2
  id=$(submit "$dir" RUN_ARGS="$long_run" -- "${cpu_job[@]}" --job-name="$name" scripts/slurm/one_node.sbatch) ||
    { check "sbatch refused the job" false; return; }
  results=$dir/results/$name-$id
  case_files=("$dir/$name-$id.out" "$results/run_bert_base.txt")
  check "the run started" started_run "$dir" "$name" "$id"
  if [ "$how" = kill ]; then
    scancel "$id"
    state=$(wait_job "$id" 60)
    check "job $id ended $state, expected CANCELLED" [ "${state%% *}" = CANCELLED ]
    check "the finished commands' results kept" json_is "$results/bandwidth.json" "d['status'] == 'ok'"
  else
    scancel --signal=TERM "$id"
    state=$(wait_job "$id" 60)
    check "job $id ended $state, expected FAILED 3:0 (scalebench's exit 3 after SIGTERM)" [ "$state" = "FAILED 3:0" ]
    check_stopped_by_sigterm "$results"
  fi
  check "every process of the job gone within 15 s" wait_for 15 "the job's processes to end" no_job_processes
}

# (4) A task that dies (SIGKILL at dp step 2): Slurm's PMIx plugin kills the step's other tasks at once and
# srun names the dead one. A task that hangs (asleep at dp step 2): the others give up after --timeout, name
# it, and rank 0 writes the partial result. Either way the job ends within --timeout + 15 s.
case_dead_task() {
  local dir=$1 fault=$2 id results state seconds name=sb-$2
  id=$(submit "$dir" SB_ARGS="--timeout 10" SCALEBENCH_FAULT="$fault:rank=1:phase=dp:step=2" \
    RUN_ARGS="--scale tiny --batch 2 --warmup 1 --steps 4" -- "${cpu_job[@]}" --job-name="$name" \
    scripts/slurm/one_node.sbatch) || { check "sbatch refused the job" false; return; }
  results=$dir/results/$name-$id
  case_files=("$dir/$name-$id.out" "$results/run_bert_base.txt")
  state=$(wait_job "$id" 90)
  check "job $id ended $state, expected FAILED with a non-zero exit" [ "${state%% *}" = FAILED ]
  # From the run's start (the previous command's last file written) to the job's end.
  seconds=$(($(date -d "$(job_field "$id" EndTime)" +%s) - $(stat -c %Y "$results/bandwidth.csv")))
  check "the run took $seconds s to the job's end, more than --timeout + 15 s" [ "$seconds" -le 25 ]
  if [ "$fault" = kill ]; then
    check "srun names the dead task" grep -qE "srun: error: .*: task 1: Killed" "$results/run_bert_base.txt"
  else
    check "rank 0 names rank 1" grep -qE "^scalebench: error: \[rank 0@.*suspect: rank 1 " "$results/run_bert_base.txt"
    check "partial JSON naming rank 1" json_is "$results/run_bert_base.json" \
      "d['status'] == 'failed' and 'suspect: rank 1 ' in d['error']"
  fi
}

# (5) mpirun.sh inside an allocation: Open MPI finds the node and its 2 slots from Slurm.
case_salloc_mpirun() {
  local dir=$1 id results=$1/results/salloc rc
  case_files=("$WORK/salloc.out" "$results/run_bert_base.txt")
  (cd "$dir" && timeout $(($(seconds_left) + 1)) salloc --ntasks=2 --cpus-per-task=1 --job-name=sb-salloc \
    env RESULTS_DIR="$results" bash scripts/slurm/mpirun.sh) > "$WORK/salloc.out" 2>&1
  rc=$?
  id=$(sed -n 's/.*Granted job allocation \([0-9]*\).*/\1/p' "$WORK/salloc.out")
  check "salloc + mpirun.sh exited $rc, expected 0" [ "$rc" -eq 0 ]
  check "the allocation $id ended COMPLETED" [ "$(job_field "$id" JobState)" = COMPLETED ]
  check "run_bert_base.json: ok, 2 Open MPI ranks in allocation $id" json_is "$results/run_bert_base.json" \
    "d['status'] == 'ok' and d['nranks'] == 2 and env['OMPI_COMM_WORLD_SIZE'] == '2' and env['SLURM_JOB_ID'] == '$id'"
}

run_case pass "one_node.sbatch: topo, bandwidth --check, dp run" case_one_node "$WORK/good"
run_case fail "one_node.sbatch with srun --mpi=none" case_one_node "$WORK/wrong-mpi"
run_case pass "time limit: SIGTERM from --signal, partial JSON" case_time_limit "$WORK/good"
run_case fail "one_node.sbatch without --signal" case_time_limit "$WORK/no-signal"
run_case pass "scancel: every rank gone, the finished commands' results kept" case_scancel "$WORK/good" kill
run_case pass "scancel --signal=TERM: stopped at a step boundary, partial JSON" case_scancel "$WORK/good" signal
run_case pass "a task killed: the job ends at once, srun names it" case_dead_task "$WORK/good" kill
run_case pass "a task hung: the job ends within --timeout + 15 s naming it" case_dead_task "$WORK/good" sleep
run_case pass "mpirun.sh inside salloc" case_salloc_mpirun "$WORK/good"

# Nothing of the cluster may outlive an orderly stop (cluster_stop names and kills what does).
if cluster_stop && [ -z "$(cluster_processes all)" ]; then passes=$((passes + 1)); else
  echo "FAIL: processes of the cluster were left running"
  failures=$((failures + 1))
fi
[ "$failures" -eq 0 ] || tail -n 15 "$WORK/slurmctld.log" "$WORK/slurmd.log" | sed 's/^/    | /'
finish

# A throwaway one-node Slurm cluster for tests/slurm: this machine with its real CPU count, one partition,
# every config, state, spool, log and socket file under one temporary folder, munge with a generated key
# (Slurm 22.05, Debian 12's, has no auth/slurm yet). The daemons run in the foreground as children of the
# test; cluster_stop (the caller's EXIT trap) cancels every job and stops them, whatever happened.
# Every process of the cluster (daemons, slurmstepd, job tasks) carries SB_SLURM_CLUSTER=<folder> in its
# environment: that is how cluster_processes finds what is left, and nothing else on the machine is touched.

CLUSTER_SKIP=77  # ctest's SKIP_RETURN_CODE for this suite (tests/CMakeLists.txt)
cluster_daemons=()

# cluster_skip REASON: a skip (exit 77), or a failure where SB_REQUIRE_SLURM=1 (CI, where the suite must run).
cluster_skip() {
  if [ "${SB_REQUIRE_SLURM:-0}" = 1 ]; then
    echo "FAIL: SB_REQUIRE_SLURM=1 but $1"
    exit 1
  fi
  echo "SKIP: $1"
  exit $CLUSTER_SKIP
}

# cluster_install: slurm-wlm and munge present, installed with apt as root when missing; otherwise a skip
# naming why.
cluster_install() {
  local tool missing=()
  for tool in sbatch srun salloc scancel scontrol sinfo slurmctld slurmd munged; do
    command -v "$tool" > /dev/null || missing+=("$tool")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local why=""
  if [ "$(id -u)" -ne 0 ]; then why="not root"
  elif ! command -v apt-get > /dev/null; then why="no apt-get"
  fi
  if [ -z "$why" ]; then
    echo "installing slurm-wlm and munge (missing: ${missing[*]})"
    # Bounded waits: where no mirror answers (an offline GPU node), the skip comes in a minute, not many.
    { apt-get -o DPkg::Lock::Timeout=120 -o Acquire::http::Timeout=30 -o Acquire::Retries=1 update &&
      DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=120 install -y --no-install-recommends \
        slurm-wlm munge; } > "$CLUSTER_DIR/apt.log" 2>&1 && return 0
    why="apt-get failed: $(tail -n 1 "$CLUSTER_DIR/apt.log")"
  fi
  cluster_skip "Slurm is not installed (missing: ${missing[*]}) and cannot be: $why"
}

# free_ports: two distinct TCP ports nobody listens on now (two test runs on one machine must not share
# daemons).
free_ports() {
  python3 -c '
import socket
sockets = [socket.socket() for _ in range(2)]
for s in sockets: s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in sockets))'
}

# cluster_write_config: slurm.conf for one node (this host, its CPUs) in one partition; munge's key.
cluster_write_config() {
  local dir=$CLUSTER_DIR host ctld_port slurmd_port
  host=$(hostname -s)
  read -r ctld_port slurmd_port < <(free_ports)
  mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
  chmod 755 "$dir" "$dir/munge"  # munged insists that its socket's folder is reachable by everyone
  head -c 1024 /dev/urandom > "$dir/munge/munge.key"
  chmod 400 "$dir/munge/munge.key"
  cat > "$dir/slurm.conf" <<CONF
ClusterName=sbtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
PlugStackConfig=$dir/plugstack.conf
# No cgroups in containers: processes tracked by parentage, no CPU binding, no accounting daemon (job states
# come from scontrol, kept for an hour by MinJobAge).
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
SlurmdParameters=config_overrides
MinJobAge=3600
KillWait=10
MailProg=/bin/true
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
  : > "$dir/plugstack.conf"
}

# cluster_start: munged, slurmctld, slurmd in the foreground (children of this shell); waits until sinfo
# shows the node idle.
cluster_start() {
  export SLURM_CONF=$CLUSTER_DIR/slurm.conf SB_SLURM_CLUSTER=$CLUSTER_DIR
  local dir=$CLUSTER_DIR
  munged -F --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.sock" --pid-file="$dir/munge/munged.pid" \
    --seed-file="$dir/munge/munged.seed" > "$dir/munged.log" 2>&1 &
  cluster_daemons+=($!)
  wait_for 10 "munged's socket" test -S "$dir/munge/munge.sock" || return 1
  slurmctld -D -f "$SLURM_CONF" > "$dir/slurmctld.out" 2>&1 &
  cluster_daemons+=($!)
  slurmd -D -f "$SLURM_CONF" > "$dir/slurmd.out" 2>&1 &
  cluster_daemons+=($!)
  wait_for 60 "the node idle in sinfo" node_idle
}

node_idle() { [ "$(sinfo -h -N -o %t 2> /dev/null)" = idle ]; }

# CLUSTER_DEADLINE ($SECONDS): no wait goes past it, so that a cluster gone wrong ends the test (and stops
# its daemons) well before ctest's limit; cluster_stop's own waits are exempt.
CLUSTER_DEADLINE=${CLUSTER_DEADLINE:-450}
seconds_left() { echo $((CLUSTER_DEADLINE > SECONDS ? CLUSTER_DEADLINE - SECONDS : 0)); }

# wait_for SECONDS WHAT COMMAND...: polls COMMAND every half second; says what it waited for on a timeout.
wait_for() {
  local seconds=$1 what=$2 end
  shift 2
  end=$((SECONDS + seconds))
  while [ "$SECONDS" -lt "$end" ]; do
    "$@" && return 0
    [ "${cluster_stopping:-0}" = 1 ] || [ "$(seconds_left)" -gt 0 ] || break
    sleep 0.5
  done
  echo "timed out after $seconds s waiting for $what"
  return 1
}

# cluster_processes: pids of every live process of the cluster except the daemons themselves (with "all":
# the daemons too), found by SB_SLURM_CLUSTER in their environment.
cluster_processes() {
  local proc pid daemon
  for proc in /proc/[0-9]*; do
    pid=${proc#/proc/}
    [ "$pid" = $$ ] || [ "$pid" = "$BASHPID" ] && continue
    if [ "${1:-}" != all ]; then
      for daemon in "${cluster_daemons[@]}"; do [ "$pid" = "$daemon" ] && continue 2; done
    fi
    grep -qsz "^SB_SLURM_CLUSTER=$CLUSTER_DIR\$" "$proc/environ" && echo "$pid"
  done
}

# cluster_stop: cancels every job, waits for their processes to go, stops the daemons with SIGTERM, and
# after 10 s kills by pid anything of the cluster still alive, naming it and returning 1.
cluster_stop() {
  [ ${#cluster_daemons[@]} -gt 0 ] || return 0
  cluster_stopping=1
  scancel --quiet --user=root 2> /dev/null
  wait_for 20 "the cancelled jobs' processes to end" no_job_processes > /dev/null
  kill -TERM "${cluster_daemons[@]}" 2> /dev/null
  wait_for 10 "the daemons to stop" no_cluster_processes > /dev/null
  local left rc=0
  left=$(cluster_processes all)
  if [ -n "$left" ]; then
    echo "cluster_stop: still alive after the jobs were cancelled and the daemons stopped; killed:"
    ps -o pid,args -p "$(echo $left | tr ' ' ,)" | sed 's/^/    /'
    kill -KILL $left 2> /dev/null
    rc=1
  fi
  wait "${cluster_daemons[@]}" 2> /dev/null
  cluster_daemons=()
  return $rc
}

no_job_processes() { [ -z "$(cluster_processes)" ]; }
no_cluster_processes() { [ -z "$(cluster_processes all)" ]; }

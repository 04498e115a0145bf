#!/usr/bin/env bash
# scripts/slurm: the sbatch templates run as Slurm would run them (SLURM_* set, `srun` on the PATH: here a
# stand-in that offers pmix in `srun --mpi=list`, checks that the templates chose it and starts the tasks
# with mpiexec; tests/slurm runs them under a real Slurm), and mpirun.sh, all on the CPU device; results
# must land in the job-named folder. Then the launcher cross-checks under simulated Slurm, Open MPI and
# torchrun variables.
source "$(dirname "$0")/lib/common.bash"
if ! mpi_available; then echo "SKIP: no MPI"; exit 0; fi
repo=$(cd "$(dirname "$0")/../.." && pwd)
for script in "$repo"/scripts/slurm/*; do
  bash -n "$script" && passes=$((passes + 1)) || { echo "FAIL: $script: syntax"; failures=$((failures + 1)); }
done

# The srun stand-in: one task per SLURM_NTASKS through mpiexec; srun's own flags dropped after checking.
mkdir -p "$WORK/bin" "$WORK/submit"
cat > "$WORK/bin/srun" <<SRUN
#!/usr/bin/env bash
[ "\$*" = --mpi=list ] && { printf 'MPI plugin types are...\n\tnone\n\tpmix\n'; exit 0; }
pmix=no
while [ \$# -gt 0 ] && [ "\${1#-}" != "\$1" ]; do [ "\$1" = --mpi=pmix ] && pmix=yes; shift; done
[ \$pmix = yes ] || { echo "srun stand-in: --mpi=pmix missing" >&2; exit 9; }
exec "$MPIEXEC" -n "\$SLURM_NTASKS" $OVERSUBSCRIBE "\$@"
SRUN
chmod +x "$WORK/bin/srun"
ln -s "$repo/scripts" "$WORK/submit/scripts"
cpu=(SB="$SB" SB_ARGS="--device cpu --timeout 60" BANDWIDTH_ARGS="--max-bytes 4K --iters 2" WORKLOADS=bert_base
     RUN_ARGS="--scale tiny --batch 2 --warmup 1 --steps 2")

for template in one_node multi_node; do
  expect_exit 0 "$template.sbatch" -- env PATH="$WORK/bin:$PATH" SLURM_SUBMIT_DIR="$WORK/submit" \
    SLURM_JOB_NAME="sb-$template" SLURM_JOB_ID=42 SLURM_NTASKS=2 "${cpu[@]}" bash "$repo/scripts/slurm/$template.sbatch"
  folder="$WORK/submit/results/sb-$template-42"
  python3 - "$folder" <<'PY' && passes=$((passes + 1)) || { echo "FAIL: $template: results folder"; failures=$((failures + 1)); }
import json, os, sys
folder = sys.argv[1]
for name in ("topo.json", "bandwidth.json", "bandwidth.csv", "run_bert_base.json", "run_bert_base.csv"):
    assert os.path.exists(os.path.join(folder, name)), name
run = json.load(open(os.path.join(folder, "run_bert_base.json")))
assert run["status"] == "ok" and run["nranks"] == 2, (run["status"], run["nranks"])
assert json.load(open(os.path.join(folder, "bandwidth.json")))["context"]["nranks"] == 2
PY
done

expect_exit 0 "mpirun.sh" -- env GPUS_PER_NODE=2 NODES=1 RESULTS_DIR="$WORK/mpirun" "${cpu[@]}" \
  bash "$repo/scripts/slurm/mpirun.sh" $OVERSUBSCRIBE
[ -s "$WORK/mpirun/run_bert_base.json" ] && passes=$((passes + 1)) || { echo "FAIL: mpirun.sh wrote no result"; failures=$((failures + 1)); }

# srun_mpi.sh against a stand-in srun whose `--mpi=list` prints $WORK/lists/offered: pmix when offered;
# PMI-2 only where the MPI library speaks it (Debian's Open MPI 4.1 has no s2 component); else exit 3.
mkdir -p "$WORK/lists/bin"
printf '#!/bin/sh\ncat "%s"\n' "$WORK/lists/offered" > "$WORK/lists/bin/srun"
chmod +x "$WORK/lists/bin/srun"
pmi2_ok=0
command -v ompi_info > /dev/null && ! ompi_info --parsable | grep -q '^mca:pmix:s2:' && pmi2_ok=3
for offered in "none pmi2 pmix:0" "none pmi2:$pmi2_ok" "none:3"; do
  { echo "MPI plugin types are..."; printf '\t%s\n' ${offered%:*}; } > "$WORK/lists/offered"
  expect_exit "${offered##*:}" "srun_mpi.sh with '${offered%:*}'" -- \
    env PATH="$WORK/lists/bin:$PATH" bash "$repo/scripts/slurm/srun_mpi.sh"
done
expect_output "share no PMI flavour .*offers none\)" "srun_mpi.sh names what Slurm offers"
printf 'srun: MPI types are...\nsrun: none\nsrun: pmix\n' > "$WORK/lists/offered"  # before 22.05
expect_exit 0 "srun_mpi.sh with Slurm's older layout" -- \
  env PATH="$WORK/lists/bin:$PATH" bash "$repo/scripts/slurm/srun_mpi.sh"
expect_output "^pmix$" "srun_mpi.sh picks pmix"
expect_exit 0 "SRUN_MPI overrides" -- env SRUN_MPI=pmi2 bash "$repo/scripts/slurm/srun_mpi.sh"
expect_output "^pmi2$" "SRUN_MPI is printed as is"

# Launcher cross-checks. srun without --mpi=pmix starts independent one-rank jobs: refused.
expect_exit 2 "srun step of 4 tasks, MPI sees 1" -- env SLURM_PROCID=2 SLURM_STEP_ID=0 SLURM_STEP_NUM_TASKS=4 \
  SLURM_LOCALID=2 "$SB" bandwidth --device cpu --max-bytes 4K
expect_output "slurm started 4 ranks but MPI sees 1.*--mpi=pmix" "the missing PMIx is explained"
# mpirun inside an allocation: the batch step's SLURM_* describe the job, Open MPI's the ranks.
expect_exit 0 "mpirun inside a Slurm batch step" -- env SLURM_PROCID=0 SLURM_STEP_ID=batch SLURM_NTASKS=16 \
  "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" bandwidth --device cpu --max-bytes 4K --iters 2
expect_lines 0 "warning|error" "no launcher complaint"
# torchrun (a world of 2) around a one-rank MPI job: refused with the way out.
expect_exit 2 "torchrun world of 2" -- env RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=2 "$SB" bandwidth --device cpu
expect_output "torchrun started 2 ranks but MPI sees 1.*launch it with mpirun or srun --mpi=pmix" "torchrun is explained"
finish

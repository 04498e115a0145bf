#!/usr/bin/env bash
# Prints the `srun --mpi=` flavour that this Slurm and this MPI library share, for the sbatch templates:
# PMIx where both speak it, else PMI-2 (srun's default, MpiDefault, is often "none": every task would then
# be an MPI job of one rank). Slurm's flavours come from `srun --mpi=list`; Open MPI's from ompi_info (5.x
# always speaks PMIx; 4.x through an ext*x/pmix*x component, PMI-2 through s2); another MPI (no ompi_info)
# is taken to speak both. SRUN_MPI=<flavour> skips the detection.
#   usage: mpi=$(bash scripts/slurm/srun_mpi.sh) && srun --mpi="$mpi" ...
set -uo pipefail
if [ -n "${SRUN_MPI:-}" ]; then echo "$SRUN_MPI"; exit 0; fi
if ! slurm_list=$(srun --mpi=list 2>&1); then
  echo "srun_mpi.sh: 'srun --mpi=list' failed: $(tail -n 1 <<< "$slurm_list")" >&2
  exit 3
fi
ompi=$(ompi_info --parsable 2> /dev/null || true)

# Lines of `srun --mpi=list` are "<tab>pmix" (22.05 and later) or "srun: pmix" (earlier).
slurm_has() { grep -qE "^([[:space:]]+|srun: )$1\$" <<< "$slurm_list"; }
mpi_has() {
  [ -n "$ompi" ] || return 0
  grep -qE '^ompi:version:full:([5-9]|[1-9][0-9])\.' <<< "$ompi" && [ "$1" = pmix ] && return 0
  case $1 in
    pmix) grep -qE '^mca:pmix:(ext[0-9]+x|pmix[0-9]+x):' <<< "$ompi" ;;
    pmi2) grep -qE '^mca:pmix:s2:' <<< "$ompi" ;;
  esac
}

for flavour in pmix pmi2; do
  if slurm_has "$flavour" && mpi_has "$flavour"; then
    echo "$flavour"
    exit 0
  fi
done
echo "srun_mpi.sh: Slurm and the MPI library share no PMI flavour (pmix or pmi2; srun --mpi=list offers" \
  "$(grep -E '^([[:space:]]+|srun: )[a-z_0-9]+$' <<< "$slurm_list" | sed 's/^srun: //' | tr -d '\t' | xargs)):" \
  "set SRUN_MPI to the one that starts your MPI's ranks" >&2
exit 3

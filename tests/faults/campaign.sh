#!/usr/bin/env bash
# The fault campaign as one command (docs/RELIABILITY.md's table): runs every script of tests/faults/ with a
# tally of its trials and prints, per script, trials, clean, crashes, hangs, lost results and wrong answers.
#   bash tests/faults/campaign.sh build/scalebench
# Needs mpiexec; about 3 minutes on two cores. Exit 0 when every trial was clean.
set -u
SB=${1:?usage: $0 path/to/scalebench}
here=$(cd "$(dirname "$0")" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export SB_FAULT_TALLY=$(mktemp)
trap 'rm -f "$SB_FAULT_TALLY"' EXIT
start=$SECONDS
for script in hangs data_loss readers messages; do
  bash "$here/$script.sh" "$SB" > "/tmp/faults_$script.log" 2>&1 || echo "# $script: failures (see /tmp/faults_$script.log)"
done
echo "# fault campaign: $(date -u +%Y-%m-%dT%H:%MZ), $((SECONDS - start)) s"
printf '%-10s %7s %6s %8s %6s %5s %6s\n' suite trials clean crashes hangs lost wrong
awk '{ n[$1]++; c[$1 "," $NF]++ } END {
  for (s in n) { printf "%-10s %7d %6d %8d %6d %5d %6d\n", s, n[s], c[s ",clean"], c[s ",crash"], c[s ",hang"],
                 c[s ",lost"], c[s ",wrong"]; t += n[s]; for (k in c) if (index(k, s ",") == 1) tot[substr(k, length(s) + 2)] += c[k] }
  printf "%-10s %7d %6d %8d %6d %5d %6d\n", "total", t, tot["clean"], tot["crash"], tot["hang"], tot["lost"], tot["wrong"] }' \
  "$SB_FAULT_TALLY"
! grep -qv " clean$" "$SB_FAULT_TALLY"

#!/usr/bin/env bash
# Issue 27, findings 9-11 and 13 (result readers): a generated corpus of malformed and partial result files
# (make_corpus.py, from a real run and a real sweep made here) read by `report`, `compare` and
# `plan --validate`. No reader may crash (exit >= 128) or hang; a refusal is exit 2 naming the file and
# the field; partial results are read (exit 0, a notice saying partial), nothing measured is exit 3.
source "$(dirname "$0")/lib.bash"
if ! mpi_available; then echo "SKIP: no MPI"; exit 0; fi

"$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" "${tiny[@]}" --json "$WORK/run.json" > /dev/null 2>&1 ||
  { echo "FAIL: the reference run"; exit 1; }
"$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" bandwidth --device cpu --op all -b 1K -e 4K -n 2 -w 1 --json "$WORK/bw.json" \
  > /dev/null 2>&1 || { echo "FAIL: the reference sweep"; exit 1; }
python3 "$(dirname "$0")/make_corpus.py" "$WORK/run.json" "$WORK/bw.json" "$WORK/corpus" > /dev/null
touch "$WORK/corpus/MALFORMED_ON_PURPOSE"  # broken on purpose: not for the schema check of what scalebench wrote

# read_case READER NAME KIND EXPECT: one reader on one corpus file; appends "OUTCOME READER:NAME DETAIL" to
# $WORK/results (cases run four at a time: most of a reader's second is MPI's start-up, not work).
read_case() {
  local reader=$1 name=$2 expect=$4 file="$WORK/corpus/$2.json" args log="$WORK/log.$1.$2"
  case $reader in
    report) args=(report "$file") ;;
    compare) args=(compare "$file" "$WORK/run.json") ;;
    plan) args=(plan --validate "$file") ;;
  esac
  timeout -k 2 30 "$SB" "${args[@]}" > "$log" 2>&1
  local got=$? outcome=clean field=${expect#refuse }
  if [ $got -eq 124 ] || [ $got -eq 137 ]; then outcome=hang
  elif [ $got -ge 128 ]; then outcome=crash
  else
    case $expect in
      refuse*) [ $got -eq 2 ] && grep -F "$file: " "$log" | grep -qF "$field" || outcome=wrong ;;
      read) [ $got -eq 0 ] || outcome=wrong ;;
      nothing) { [ $got -eq 3 ] && grep -q "nothing measured" "$log"; } || [ "$reader" = plan -a $got -eq 2 ] ||
                 outcome=wrong ;;
      any) [ $got -eq 0 ] || { [ $got -eq 2 ] && grep -qF "$file" "$log"; } || outcome=wrong ;;
    esac
  fi
  echo "$outcome $reader:$name exit $got, expected $expect: $(head -c 300 "$log" | tr '\n' ' ')" >> "$WORK/results"
}

while IFS=$'\t' read -r name kind expect; do
  for reader in report compare plan; do
    [ "$kind" = bandwidth ] && [ $reader != compare ] && continue
    [ $reader = plan ] && [ "$expect" = read ] && continue  # plan refuses tiny runs: no verdict to check
    while [ "$(jobs -rp | wc -l)" -ge 4 ]; do wait -n; done
    read_case $reader "$name" "$kind" "$expect" &
  done
done < "$WORK/corpus/expect.tsv"
wait
while read -r outcome reader_name detail; do
  tally "$reader_name" "$outcome"
  if [ "$outcome" = clean ]; then passes=$((passes + 1)); else
    echo "FAIL: $reader_name: $outcome: $detail"; failures=$((failures + 1)); fi
done < "$WORK/results"

# Finding 11: partial results read back and shown as partial: a real run stopped during solo (its timed steps so
# far kept), and the corpus's sweep that did not reach a collective.
SCALEBENCH_FAULT="term:rank=all:phase=solo:step=3" "$MPIEXEC" -n 2 $OVERSUBSCRIBE -x SCALEBENCH_FAULT "$SB" "${tiny[@]}" \
  --json "$WORK/stopped.json" > /dev/null 2>&1
timed "11 stopped in solo" 20 0 -- "$SB" report "$WORK/stopped.json"
expect_output "partial result \(status failed\): stopped by SIGTERM after solo phase, step 3" "11: shown as partial"
timed "11 stopped in solo, compare" 20 0 -- "$SB" compare "$WORK/stopped.json" "$WORK/run.json"
timed "11 partial report" 20 0 -- "$SB" report "$WORK/corpus/run-partial-solo-only.json"
timed "11 partial sweep" 20 0 -- "$SB" compare "$WORK/corpus/bw-partial-null-peak.json"
# Finding 13: the oversize file is refused unread (reading 100 MB took 44 s; MPI's start-up alone can take
# seconds on a loaded machine).
start=$(date +%s%N)
"$SB" report "$WORK/corpus/run-oversize.json" > /dev/null 2>&1
[ $(( ($(date +%s%N) - start) / 1000000 )) -lt 10000 ] && passes=$((passes + 1)) ||
  { echo "FAIL: 13: the oversize file took $(( ($(date +%s%N) - start) / 1000000 )) ms"; failures=$((failures + 1)); }
finish

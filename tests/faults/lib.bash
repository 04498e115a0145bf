# Shared by the fault-campaign scripts (tests/faults/*.sh, issue 27): the e2e helpers plus what a fault case
# needs: a time limit per case, the job's leftover processes, the partial JSON's content, and a tally of
# trials (clean, crash, hang, lost) that RELIABILITY.md's table is made from.
source "$(dirname "${BASH_SOURCE[0]}")/../e2e/lib/common.bash"

# The smallest real run: one warm-up and four timed steps per phase, so step 3 of a phase is a timed step.
tiny=(-w transformer_big --device cpu --scale tiny --batch 2 --warmup 1 --steps 4)
TALLY=${SB_FAULT_TALLY:-/dev/null}  # one line per trial: "SUITE CASE OUTCOME"

# tally CASE OUTCOME: OUTCOME is clean, crash (exit >= 128 that is not the injected kill), hang (the time
# limit ended it) or lost (a phase finished before the fault is missing from the result).
tally() { echo "$(basename "$0" .sh) $1 $2" >> "$TALLY"; }

# timed NAME LIMIT_S WANT_EXIT -- COMMAND...: runs COMMAND with a hard limit; checks the exit code and the
# time, counts the trial; output in $WORK/out, seconds in $took.
timed() {
  local name=$1 limit=$2 want=$3
  shift 4
  local start=$SECONDS
  timeout -k 5 "$limit" "$@" > "$WORK/out" 2>&1
  local got=$?
  took=$((SECONDS - start))
  if [ "$got" -eq 124 ] || [ "$got" -eq 137 -a "$want" -ne 137 ]; then
    echo "FAIL: $name: still running after $limit s"; failures=$((failures + 1)); tally "$name" hang; return 1
  fi
  if [ "$got" -ne "$want" ]; then
    echo "FAIL: $name: exit $got, expected $want"; sed 's/^/    | /' "$WORK/out" | head -12
    failures=$((failures + 1)); tally "$name" "$([ "$got" -ge 128 ] && echo crash || echo wrong)"; return 1
  fi
  passes=$((passes + 1)); tally "$name" clean
}

# no_leftovers NAME MARKER: no process whose command line holds MARKER (a unique path) is alive.
no_leftovers() {
  sleep 1
  if pgrep -f "$2" > /dev/null; then
    echo "FAIL: $1: processes left behind:"; pgrep -af "$2"; pgrep -f "$2" | xargs -r kill -9; failures=$((failures + 1))
  else passes=$((passes + 1)); fi
}

# json_check NAME FILE PYTHON_ASSERTIONS: runs the assertions with `doc` loaded from FILE; a missing file is
# a lost result.
json_check() {
  if [ ! -s "$2" ]; then echo "FAIL: $1: no result file $2"; failures=$((failures + 1)); tally "$1" lost; return 1; fi
  if python3 -c "import json, re, sys; doc = json.load(open(sys.argv[1])); $3" "$2"; then
    passes=$((passes + 1))
  else
    echo "FAIL: $1: $2 does not satisfy: $3"; failures=$((failures + 1)); tally "$1" lost
  fi
}

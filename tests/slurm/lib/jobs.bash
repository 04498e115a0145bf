# Submitting and watching jobs on the test cluster (cluster.bash), and the assertions of one case: each
# case function calls `check`, and run_case turns the failed checks into FAIL lines (a case expected to
# pass) or into the proof that a deliberately broken template is caught (a case expected to fail).

# submit DIR [VAR=VALUE...] -- SBATCH_ARGS...: sbatch from DIR (the job's submit folder, holding scripts/)
# with the variables added to the job's environment; prints the job id.
submit() {
  local dir=$1 vars=()
  shift
  while [ "$1" != -- ]; do vars+=("$1"); shift; done
  shift
  (cd "$dir" && env "${vars[@]}" sbatch --parsable "$@")
}

# job_field ID FIELD: one field of `scontrol show job` (JobState, ExitCode, StartTime, ...).
job_field() {
  scontrol show job -o "$1" 2> /dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}

# wait_job ID SECONDS: waits for the job to end; prints "STATE EXITCODE" (e.g. "COMPLETED 0:0"), or the
# state it was still in at the deadline (RUNNING, or SIGNALING while a --signal is being delivered).
wait_job() {
  local id=$1 state end=$((SECONDS + $2))
  while :; do
    state=$(job_field "$id" JobState)
    case $state in
      COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | PREEMPTED | BOOT_FAIL | DEADLINE) break ;;
    esac
    [ "$SECONDS" -lt "$end" ] && [ "$(seconds_left)" -gt 0 ] || break
    sleep 0.5
  done
  echo "$state $(job_field "$id" ExitCode)"
}

# json_is FILE EXPRESSION: the JSON document d in FILE satisfies the Python EXPRESSION; env is its
# context's recorded environment (a dict).
json_is() {
  python3 - "$1" "$2" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except (OSError, ValueError) as error:
    sys.exit(f"    {error}")
env = dict(d.get("context", {}).get("environment", {}))
if not eval(sys.argv[2]):
    sys.exit(f"    {sys.argv[1]}: status {d.get('status')!r}, error {d.get('error')!r}")
PY
}

# check DESCRIPTION COMMAND...: one assertion of the running case.
check() {
  local what=$1
  shift
  "$@" >> "$WORK/check.log" 2>&1 || case_failed+=("$what")
}

# run_case pass|fail NAME FUNCTION ARGS...: runs one case. "pass": every failed check is a FAIL, with the
# files the case named in case_files shown. "fail" (a broken template): at least one check must fail.
run_case() {
  local expect=$1 name=$2 start=$SECONDS
  shift 2
  case_failed=()
  case_files=()
  : > "$WORK/check.log"
  "$@"
  local took=$((SECONDS - start)) file failed
  if [ "$expect" = pass ] && [ ${#case_failed[@]} -eq 0 ]; then
    echo "ok: $name (${took} s)"
    passes=$((passes + 1))
  elif [ "$expect" = pass ]; then
    for failed in "${case_failed[@]}"; do echo "FAIL: $name: $failed"; done
    sed 's/^/    | /' "$WORK/check.log" | head -n 20
    for file in "${case_files[@]}"; do
      [ -f "$file" ] || continue
      echo "    $file:"
      tail -n 15 "$file" | sed 's/^/    | /'
    done
    failures=$((failures + 1))
  elif [ ${#case_failed[@]} -gt 0 ]; then
    echo "ok: $name: caught (${case_failed[0]}; ${took} s)"
    passes=$((passes + 1))
  else
    echo "FAIL: $name: every check passed on a broken template"
    failures=$((failures + 1))
  fi
}

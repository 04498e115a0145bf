# Shared helpers for the end-to-end scripts: run the binary, assert exit codes and output.
# Each script gets the scalebench binary as $1; ctest sets SB_MPIEXEC, SB_OVERSUBSCRIBE and SB_HAVE_MPI.
set -u
SB=${1:?usage: $0 path/to/scalebench}
MPIEXEC=${SB_MPIEXEC:-mpiexec}
OVERSUBSCRIBE=${SB_OVERSUBSCRIBE:---oversubscribe}
WORK=$(mktemp -d)
E2E_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Every scalebench JSON a test wrote under $WORK is validated against docs/schema before it is removed; an
# invalid one fails the test (tests/e2e/lib/validate_schemas.py).
validate_and_clean_up() {
  local status=$?
  python3 "$E2E_LIB/validate_schemas.py" "$WORK" || status=1
  rm -rf "$WORK"
  exit "$status"
}
trap validate_and_clean_up EXIT
failures=0
passes=0

# expect_exit CODE DESCRIPTION -- COMMAND...: runs COMMAND (stdout+stderr to $WORK/out) with a time limit.
expect_exit() {
  local want=$1 what=$2
  shift 3
  timeout 120 "$@" > "$WORK/out" 2>&1
  local got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL: $what: exit $got, expected $want"
    sed 's/^/    | /' "$WORK/out" | head -20
    failures=$((failures + 1))
  else
    passes=$((passes + 1))
  fi
}

# expect_output PATTERN DESCRIPTION: the last command's output matches the extended regex PATTERN.
expect_output() {
  if ! grep -Eq -- "$1" "$WORK/out"; then
    echo "FAIL: $2: output lacks /$1/"
    sed 's/^/    | /' "$WORK/out" | head -20
    failures=$((failures + 1))
  else
    passes=$((passes + 1))
  fi
}

# expect_lines N PATTERN DESCRIPTION: exactly N output lines match PATTERN.
expect_lines() {
  local n
  n=$(grep -Ec -- "$2" "$WORK/out")
  if [ "$n" -ne "$1" ]; then
    echo "FAIL: $3: $n lines match /$2/, expected $1"
    sed 's/^/    | /' "$WORK/out" | head -20
    failures=$((failures + 1))
  else
    passes=$((passes + 1))
  fi
}

# expect_json FILE ASSERTION DESCRIPTION: python's ASSERTION holds with d = the JSON document in FILE.
expect_json() {
  if python3 -c "import json, sys; d = json.load(open(sys.argv[1])); $2" "$1"; then
    passes=$((passes + 1))
  else
    echo "FAIL: $3"
    failures=$((failures + 1))
  fi
}

mpi_available() { [ "${SB_HAVE_MPI:-ON}" = "ON" ] && command -v "$MPIEXEC" > /dev/null; }

finish() {
  echo "$passes passed, $failures failed"
  [ "$failures" -eq 0 ]
}

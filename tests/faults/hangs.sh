#!/usr/bin/env bash
# Issue 27, findings 1-4 (hangs): a NaN that disables the timeout, a rank stalled in MPI start-up, a FIFO as
# output, a bandwidth sweep of 97,000 sizes. Each ends within seconds with one line and exit 2 or 3.
source "$(dirname "$0")/lib.bash"
if ! mpi_available; then echo "SKIP: no MPI"; exit 0; fi

# 1. Non-finite numbers are refused by name; none silently becomes a default or disables a deadline.
for flag in "--timeout nan" "--lr nan" "--bucket-mb nan" "--timeout inf" "--min-time nan"; do
  timed "1 $flag" 20 2 -- "$SB" "${tiny[@]}" $flag
  expect_output "^scalebench: error: ${flag%% *}: ${flag##* } is not a finite number" "1: $flag named"
done

# 2. A rank that never gets through MPI start-up (here rank 1 sleeps before it starts): rank 0 gives up after
# --timeout with a line naming what it waited for, and the job ends.
stall=(bash -c '[ "${OMPI_COMM_WORLD_RANK:-0}" = 1 ] && sleep 60; exec "$0" "$@"' "$SB")
timed "2 start-up stall" 30 3 -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "${stall[@]}" "${tiny[@]}" --timeout 3 \
  --json "$WORK/stall.json"
expect_output "start-up did not finish within 3 s \(--timeout\): still waiting for MPI initialisation" \
  "2: the line names MPI initialisation"
[ "$took" -le 20 ] && passes=$((passes + 1)) || { echo "FAIL: 2: took $took s"; failures=$((failures + 1)); }
no_leftovers "2 start-up stall" "$WORK/stall.json"

# 2b. A real SIGSTOP of rank 1 inside the comm phase's all-reduces: rank 0 times out after --timeout, names rank 1
# in its line and its JSON (solo kept), and the job ends within --timeout + roll call + a few seconds. mpirun
# leaves the stopped rank stopped; continued, it ends by itself and leaves rank 0's result alone.
json="$WORK/stop.json"
"$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" "${tiny[@]/#4/400}" --timeout 3 --json "$json" > "$WORK/out" 2>&1 &
launcher=$!
for _ in $(seq 300); do [ -s "$json" ] && break; sleep 0.1; done
sleep 0.3
victim=""
for pid in $(pgrep -f "$json"); do
  tr '\0' '\n' < "/proc/$pid/environ" 2> /dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1" && victim=$pid
done
start=$SECONDS
[ -n "$victim" ] && kill -STOP "$victim"
timeout 30 tail --pid=$launcher -f /dev/null
took=$((SECONDS - start))
[ -n "$victim" ] && kill -CONT "$victim"
if [ "$took" -le 12 ]; then passes=$((passes + 1)); tally "2b SIGSTOP" clean; else
  echo "FAIL: 2b: the job took $took s after the SIGSTOP"; failures=$((failures + 1)); tally "2b SIGSTOP" hang; fi
expect_output "\[rank 0@.*suspect: rank 1 " "2b: rank 0 names the stopped rank"
no_leftovers "2b SIGSTOP" "$json"
json_check "2b SIGSTOP" "$json" "assert 'solo' in doc['phases']; assert 'suspect: rank 1 ' in doc['error'], doc['error']"

# 3. A FIFO as --json: refused before any work (opening it would block until a reader comes).
mkfifo "$WORK/fifo.json"
timed "3 fifo" 20 2 -- "$MPIEXEC" -n 2 $OVERSUBSCRIBE "$SB" "${tiny[@]}" --json "$WORK/fifo.json" --timeout 30
expect_lines 2 "output '$WORK/fifo.json' is a FIFO \(named pipe\); scalebench writes only regular files" \
  "3: every rank names the FIFO"

# 4. An absurd sweep is refused up front, naming its size count.
timed "4 sweep" 20 2 -- "$SB" bandwidth --device cpu -f 1.0001 -b 1K -e 16M
expect_output "is a sweep of [0-9]+ sizes of all_reduce; at most 1000" "4: the sweep's size is named"
finish

#!/usr/bin/env bash
# Issue 27, findings 5-8 (data lost or clobbered): rank 0 killed, a double SIGINT, --force on a symlink or a
# pipe, a file that appears during the run, two outputs on one file. Every phase finished before a fault is
# on disk afterwards; nothing that is not a regular file is ever replaced.
source "$(dirname "$0")/lib.bash"
if ! mpi_available; then echo "SKIP: no MPI"; exit 0; fi

# 5. Rank 0 SIGKILLed in dp: solo and comm are on disk (rank 0 wrote them as they finished; rank 1, told of
# the kill by mpiexec's SIGTERM, names rank 0), and a 0-byte temporary of an earlier killed writer is gone.
: > "$WORK/kill0.json.tmp.999999999"
SCALEBENCH_FAULT="kill:rank=0:phase=dp:step=3" timed "5 kill rank 0" 40 137 -- \
  "$MPIEXEC" -n 2 $OVERSUBSCRIBE -x SCALEBENCH_FAULT "$SB" "${tiny[@]}" --timeout 5 --json "$WORK/kill0.json"
json_check "5 kill rank 0" "$WORK/kill0.json" \
  "assert doc['status'] == 'failed'; assert sorted(doc['phases']) == ['comm', 'solo'], sorted(doc['phases']); \
   assert re.search('rank 0 had already ended', doc['error']), doc['error']"
[ ! -e "$WORK/kill0.json.tmp.999999999" ] && passes=$((passes + 1)) || { echo "FAIL: 5: stale temporary kept"; failures=$((failures + 1)); }
no_leftovers "5 kill rank 0" "$WORK/kill0.json"

# 5b. SIGKILL of either rank at step 3 of each phase: every phase finished before the kill is on disk.
for rank in 0 1; do
  for phase in solo comm dp; do
    case $phase in solo) before="" ;; comm) before="solo" ;; dp) before="comm,solo" ;; esac
    name="kill-$rank-$phase"
    SCALEBENCH_FAULT="kill:rank=$rank:phase=$phase:step=3" timed "5b $name" 40 137 -- \
      "$MPIEXEC" -n 2 $OVERSUBSCRIBE -x SCALEBENCH_FAULT "$SB" "${tiny[@]}" --timeout 5 --json "$WORK/$name.json"
    if [ -n "$before" ]; then
      json_check "5b $name" "$WORK/$name.json" \
        "assert set('$before'.split(',')) <= set(doc['phases']), sorted(doc['phases'])"
    fi
    no_leftovers "5b $name" "$WORK/$name.json"
  done
done

# 6. Two SIGINTs to mpiexec while every rank is busy in the comm phase: mpiexec kills the ranks at once,
# and the solo phase finished before is on disk.
SCALEBENCH_FAULT="sleep:rank=all:phase=comm:step=2:seconds=30" "$MPIEXEC" -n 2 $OVERSUBSCRIBE -x SCALEBENCH_FAULT \
  "$SB" "${tiny[@]}" --timeout 60 --json "$WORK/sigint.json" > "$WORK/out" 2>&1 &
launcher=$!
# Rank 0 writes the result once the solo phase is over; the comm phase's sleep starts a moment later.
for _ in $(seq 150); do [ -s "$WORK/sigint.json" ] && break; sleep 0.2; done
sleep 2
kill -INT $launcher; sleep 0.2; kill -INT $launcher
start=$SECONDS
wait $launcher
[ $((SECONDS - start)) -le 20 ] && { passes=$((passes + 1)); tally "6 double SIGINT" clean; } || {
  echo "FAIL: 6: mpiexec took $((SECONDS - start)) s after the SIGINTs"; failures=$((failures + 1)); tally "6 double SIGINT" hang; }
json_check "6 double SIGINT" "$WORK/sigint.json" "assert 'solo' in doc['phases'], sorted(doc['phases'])"
no_leftovers "6 double SIGINT" "$WORK/sigint.json"

# 7. --force never replaces a symlink (or what it points to) or a pipe: refused before any work.
echo precious > "$WORK/target.txt"
ln -s "$WORK/target.txt" "$WORK/link.json"
timed "7 symlink --force" 20 2 -- "$SB" "${tiny[@]}" --json "$WORK/link.json" --force
expect_output "output '$WORK/link.json' is a symbolic link" "7: the symlink is named"
[ -L "$WORK/link.json" ] && [ "$(cat "$WORK/target.txt")" = precious ] && passes=$((passes + 1)) ||
  { echo "FAIL: 7: the symlink or its target changed"; failures=$((failures + 1)); }
timed "7 pipe --force" 20 2 -- bash -c '"$0" "$@" --json >(cat > /dev/null) --force' "$SB" "${tiny[@]}"
expect_output "is a symbolic link|is a FIFO" "7: a process substitution is refused up front"

# 8. A file created at the path during the run is not overwritten (the result goes beside it); two outputs on
# one file, or both on stdout, are refused.
SCALEBENCH_FAULT="sleep:rank=0:phase=solo:step=2:seconds=4" "$SB" "${tiny[@]}" --phases solo \
  --json "$WORK/late.json" > "$WORK/out" 2>&1 &
runner=$!
sleep 2
echo "someone else's" > "$WORK/late.json"
wait $runner
rc=$?
[ "$rc" -eq 3 ] && [ "$(cat "$WORK/late.json")" = "someone else's" ] && ls "$WORK"/late.json.kept.* > /dev/null 2>&1 &&
  { passes=$((passes + 1)); tally "8 appears during run" clean; } ||
  { echo "FAIL: 8: exit $rc, late.json: $(head -c 40 "$WORK/late.json")"; sed 's/^/    | /' "$WORK/out" | tail -5
    failures=$((failures + 1)); tally "8 appears during run" wrong; }
expect_output "created by someone else during the run; it is not overwritten without --force; this result is in" \
  "8: the message says where the result is"
timed "8 --json X --csv X" 20 2 -- "$SB" "${tiny[@]}" --json "$WORK/same" --csv "$WORK/same"
expect_output "two outputs name the same file" "8: one file for two outputs is named"
timed "8 --json - --csv -" 20 2 -- "$SB" "${tiny[@]}" --json - --csv -
expect_output "only one output may go to stdout" "8: two outputs on stdout are refused"
finish

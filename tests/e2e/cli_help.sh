#!/usr/bin/env bash
# What the command line tells a new user (issue 28): unknown options and subcommands named with a close match
# (even though `run` is the default subcommand), output options a subcommand does not write refused (exit 2),
# global options and defaults with units in every subcommand's help, the git commit in --version, the batch
# unit, and run's warning and progress line on the CPU device.
source "$(dirname "$0")/lib/common.bash"

expect_exit 2 "an unknown flag, run by default" -- "$SB" --foo
expect_output "unknown option '--foo' \(run 'scalebench --help'\)" "the unknown flag is named"
expect_lines 0 "workload is required" "not the default subcommand's missing option"
expect_exit 2 "a misspelt subcommand" -- "$SB" bandwith
expect_output "unknown subcommand 'bandwith'; did you mean 'bandwidth'\?" "the close subcommand is offered"
expect_exit 2 "a misspelt global option" -- "$SB" -w bert_base --jsn out.json
expect_output "unknown option '--jsn'.*did you mean '--json'\?" "the close option is offered"
expect_exit 2 "a misspelt subcommand option" -- "$SB" bandwidth --device cpu --iter 5
expect_output "unknown option '--iter' for bandwidth; did you mean '--iters'\?" "the subcommand's option is offered"

for command in "list --csv $WORK/l.csv" "topo --csv $WORK/t.csv" "report $WORK/r.json --csv $WORK/r.csv" \
  "compare $WORK/r.json --json $WORK/c.json" "suite --json $WORK/s.json" \
  "plan -w bert_base --gpu H100 --csv $WORK/p.csv"; do
  expect_exit 2 "$command" -- "$SB" $command
  expect_output "does not write (CSV|JSON)" "$command: the ignored output is refused"
done
[ ! -e "$WORK/l.csv" ] && passes=$((passes + 1)) || { echo "FAIL: list --csv wrote a file"; failures=$((failures + 1)); }

expect_exit 0 "bandwidth --help" -- "$SB" bandwidth --help
expect_output "Global options" "subcommand help lists the global options"
expect_output "--device" "the global --device is in bandwidth's help"
expect_output "-n,--iters N.*(=20|\[20\])" "the default of --iters is shown"
expect_exit 0 "run --help" -- "$SB" run --help
expect_output "--steps N.*(=20|\[20\])" "run's default steps"
expect_output "--warmup N.*(=3|\[3\])" "run's default warm-up"
expect_output "--bucket-mb MiB" "bucket size in MiB"
expect_output "--json FILE" "a named FILE placeholder"
expect_output "Per-rank batch in the workload's batch unit: sentence pairs" "the batch unit in --batch's help"
expect_lines 0 "--json TEXT" "no CLI11 type name for a file"

expect_exit 0 "--version" -- "$SB" --version
expect_output "^scalebench [0-9.]+ \(git ([0-9a-f]{12}(-dirty)?|unknown)\)$" "--version names the git commit"

# Full scale on the CPU device: the warning comes before any step (the run is cut short here).
timeout -s KILL 20 "$SB" run --device cpu -w bert_base --steps 1 > "$WORK/out" 2>&1
expect_output "this will take minutes; add --scale tiny" "full scale on the CPU warns first"

# On a terminal, rank 0 shows the phase's progress (script(1) gives the run a pseudo-terminal).
if command -v script > /dev/null; then
  expect_exit 0 "run on a terminal" -- script -qec "$SB run --device cpu --scale tiny -w bert_base --batch 2 \
    --warmup 1 --steps 3 --phases solo" /dev/null
  expect_output "\[run\] solo phase: step [0-9]+ of 4" "a progress line with the step count"
fi
expect_exit 0 "run off a terminal" -- "$SB" run --device cpu --scale tiny -w bert_base --batch 2 --warmup 1 \
  --steps 3 --phases solo
expect_lines 0 "\[run\] solo phase" "no progress line when stderr is not a terminal"
expect_output "# batch 2 sequences per rank" "the batch in its unit"
finish

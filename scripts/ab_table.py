#!/usr/bin/env python3
"""Before/after table of one device call: the same workloads trained by two builds of scalebench on one GPU, side by
side (`scripts/gpu_check.sh ab`). A refactor that must not change behaviour shows equal parameter counts, equal
first and last losses, and units/s within noise.

usage: ab_table.py DIR [TOLERANCE_PCT]
  DIR/before_<workload>.json   scalebench run --json of the earlier build
  DIR/after_<workload>.json    the same of this tree's build
TOLERANCE_PCT (default 2): a units/s change beyond it is flagged; a different parameter count or loss is always
flagged. Exit 1 when any row is flagged or missing, 0 otherwise.
"""
import glob
import json
import os
import sys


def solo(doc):
    """(parameters, first loss, last loss, units/s, step ms) of a run's solo phase, or an error text."""
    if doc.get("status") != "ok" or "solo" not in doc.get("phases", {}):
        return doc.get("error") or doc.get("status") or "no result"
    phase = doc["phases"]["solo"]
    rank = phase["ranks"][0]
    return (doc["workload"]["parameters"], rank["loss_first"], rank["loss_last"], phase["units_per_s_per_gpu"],
            phase["step_ms_p50"])


def load(path):
    try:
        with open(path) as f:
            return solo(json.load(f))
    except (OSError, ValueError, KeyError) as error:
        return f"unreadable: {error}"


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__.strip().splitlines()[3], file=sys.stderr)
        return 2
    directory = sys.argv[1]
    tolerance = float(sys.argv[2]) if len(sys.argv) == 3 else 2.0
    workloads = sorted({os.path.basename(p)[len("before_"):-len(".json")]
                        for p in glob.glob(os.path.join(directory, "before_*.json"))} |
                       {os.path.basename(p)[len("after_"):-len(".json")]
                        for p in glob.glob(os.path.join(directory, "after_*.json"))})
    print("| workload | parameters | loss first (before / after) | loss last (before / after) "
          "| units/s before | units/s after | change | |")
    print("|---|---|---|---|---|---|---|---|")
    flagged = 0
    for workload in workloads:
        before = load(os.path.join(directory, f"before_{workload}.json"))
        after = load(os.path.join(directory, f"after_{workload}.json"))
        if isinstance(before, str) or isinstance(after, str):
            flagged += 1
            print(f"| {workload} | before: {before if isinstance(before, str) else 'ok'}; "
                  f"after: {after if isinstance(after, str) else 'ok'} | | | | | | MISSING |")
            continue
        notes = []
        if before[0] != after[0]:
            notes.append("parameters differ")
        # Same seed, same kernels: the losses should agree to the last bit; a relative 1e-5 allows a kernel
        # whose reduction order depends on scheduling (atomics), nothing more.
        for index, name in ((1, "first loss"), (2, "last loss")):
            if abs(before[index] - after[index]) > 1e-5 * max(1.0, abs(before[index])):
                notes.append(f"{name} differs")
        change = 100.0 * (after[3] / before[3] - 1.0)
        if abs(change) > tolerance:
            notes.append(f"beyond ±{tolerance:g}%")
        flagged += bool(notes)
        print(f"| {workload} | {before[0]:,}{'' if before[0] == after[0] else ' / ' + format(after[0], ',')} "
              f"| {before[1]:.6f} / {after[1]:.6f} | {before[2]:.6f} / {after[2]:.6f} | {before[3]:,.1f} "
              f"| {after[3]:,.1f} | {change:+.2f}% | {'; '.join(notes) or 'same'} |")
    print(f"{len(workloads)} workloads, {flagged} flagged (units/s tolerance ±{tolerance:g}%)")
    return 1 if flagged or not workloads else 0


if __name__ == "__main__":
    sys.exit(main())

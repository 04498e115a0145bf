#!/usr/bin/env python3
"""Eager against CUDA-graph steps, with and without a CPU hog, from `scripts/gpu_check.sh graphs` (issue 25).

usage: graph_table.py DIR
  DIR/<mode>_<workload>.json   scalebench run --phases solo --json, mode one of:
    off, on             --cuda-graph off / on, the rank free to use the host
    off_hog, on_hog     the same with the rank pinned to one core that a busy loop shares (taskset)

Columns: units/s per GPU in each mode, the graph's change over eager, the host's time to issue one step (p50)
beside the device's step, the phase's cuda_graph status, and under the hog each mode's change against its own
unloaded run (issue 25's bar: graph mode within 3%). Exit 0; the table is the output.
"""
import glob
import json
import os
import re
import sys

MODES = ("off", "on", "off_hog", "on_hog")


def solo(path):
    """(units/s, step ms, host ms, cuda_graph) of a run's solo phase, or an error text; None when absent."""
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as error:
        return f"unreadable: {error}"
    phase = doc.get("phases", {}).get("solo")
    if doc.get("status") != "ok" or phase is None:
        return doc.get("error") or doc.get("status") or "no result"
    return (phase["units_per_s_per_gpu"], phase["step_ms_p50"], phase.get("host_ms_per_step", 0.0),
            phase.get("cuda_graph", "?"))


def change(new, old):
    return f"{100.0 * (new / old - 1.0):+.1f}%" if old else "-"


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    directory = sys.argv[1]
    names = (re.fullmatch(r"(?:off|on)(?:_hog)?_(\w+)\.json", os.path.basename(p))
             for p in glob.glob(os.path.join(directory, "*.json")))
    workloads = sorted({match.group(1) for match in names if match})
    print("| workload | eager units/s | graph units/s | graph vs eager | host ms/step eager / graph | device ms "
          "eager / graph | graph status | hog: eager | hog: graph |")
    print("|---|---|---|---|---|---|---|---|---|")
    for workload in workloads:
        runs = {mode: solo(os.path.join(directory, f"{mode}_{workload}.json")) for mode in MODES}
        errors = [f"{mode}: {r}" for mode, r in runs.items() if isinstance(r, str)]
        off, on = runs["off"], runs["on"]
        if not isinstance(off, tuple) or not isinstance(on, tuple):
            print(f"| {workload} | {'; '.join(errors) or 'not run'} | | | | | | | |")
            continue
        hog = []
        for mode, unloaded in (("off_hog", off), ("on_hog", on)):
            r = runs[mode]
            hog.append(f"{r[0]:,.1f} ({change(r[0], unloaded[0])})" if isinstance(r, tuple) else (r or "not run"))
        print(f"| {workload} | {off[0]:,.1f} | {on[0]:,.1f} | {change(on[0], off[0])} | {off[2]:.2f} / {on[2]:.3f} "
              f"| {off[1]:.2f} / {on[1]:.2f} | {on[3]} | {hog[0]} | {hog[1]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

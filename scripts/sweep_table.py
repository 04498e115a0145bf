#!/usr/bin/env python3
"""The table of `scripts/gpu_check.sh sweep`: each k of a --gpus-sweep run beside a separate k-rank job.

usage: sweep_table.py DIR   (DIR holds swept_WORKLOAD.json and kK_WORKLOAD.json files)
A swept point's units/s total is compared with the separate job's (its dp phase, or its solo phase at k = 1);
issue 29 asks for them within 1%.
"""
import glob
import json
import os
import sys


def separate_units(doc, k):
    phases = doc.get("phases", {})
    if k == 1:
        return phases.get("solo", {}).get("units_per_s_per_gpu")
    return phases.get("dp", {}).get("units_per_s_total")


def main(folder):
    print(f"{'workload':16} {'k':>3} {'link':>8} {'swept units/s':>14} {'separate':>14} {'diff':>7}  within 1%")
    for swept_path in sorted(glob.glob(os.path.join(folder, "swept_*.json"))):
        workload = os.path.basename(swept_path)[len("swept_"):-len(".json")]
        swept = json.load(open(swept_path))
        sweep = swept.get("gpus_sweep") or {}
        if sweep.get("notice"):
            print(f"{workload:16} notice: {sweep['notice']}")
        for point in sweep.get("points", []):
            k = point["gpus"]
            separate_path = os.path.join(folder, f"k{k}_{workload}.json")
            separate = separate_units(json.load(open(separate_path)), k) if os.path.exists(separate_path) else None
            mine = point.get("units_per_s_total")
            if mine is None or not separate:
                print(f"{workload:16} {k:>3} {point.get('link') or '-':>8} {mine or '-':>14} {separate or '-':>14}")
                continue
            diff = 100 * (mine / separate - 1)
            print(f"{workload:16} {k:>3} {point.get('link') or '-':>8} {mine:>14.1f} {separate:>14.1f} {diff:>+6.2f}%  "
                  f"{'yes' if abs(diff) <= 1 else 'NO'}")


if __name__ == "__main__":
    main(sys.argv[1])

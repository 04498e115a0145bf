#!/usr/bin/env python3
"""Side-by-side table of scalebench and PyTorch training on one GPU, from scripts/gpu_check.sh train's files.

usage: training_summary.py DIR
  DIR/run_<workload>.json   scalebench run --json (rank 0's row is used)
  DIR/torch.jsonl           one JSON line per workload from scripts/pytorch_reference.py

MFU is against the run's peak_tflops: the GPU table's dense peak for the device and precision
(src/plan/data/gpus.json, the one table `run`, `plan` and scripts/gpu_peaks.py read).
"speed-up" is against PyTorch eager (`gpu_check.sh anchors` compares with the faster of eager and compiled).
scalebench's memory is its plan (arena + AdamW moments: every tensor of the step, laid out before the run),
PyTorch's is torch.cuda.max_memory_allocated (tensors only); neither counts the CUDA context.
"""
import glob
import json
import os
import sys

TARGETS = {"transformer_big": 1.5, "bert_base": 1.3}  # issue 3: scalebench / PyTorch eager, same shape


def load(directory):
    ours, theirs = {}, {}
    for path in sorted(glob.glob(os.path.join(directory, "run_*.json"))):
        with open(path) as f:
                doc = json.load(f)
        name = doc["workload"]["name"]
        solo = doc.get("phases", {}).get("solo")
        if doc.get("status") == "ok" and solo:
            ours[name] = {"step_ms_p50": solo["step_ms_p50"], "units_per_second": solo["units_per_s_per_gpu"],
                          "tflops": solo["tflops_per_gpu"], "peak_tflops": doc.get("peak_tflops"), "plan_bytes": doc["workload"]["plan_bytes"],
                          "breakdown_ms": doc.get("breakdown_ms"), "op_ms": doc.get("op_ms")}
        else:
            ours[name] = {"error": doc.get("error") or "failed"}
    torch_path = os.path.join(directory, "torch.jsonl")
    if os.path.exists(torch_path):
        with open(torch_path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    row = json.loads(line)
                    theirs[row["workload"]] = row
    return ours, theirs


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: training_summary.py DIR")
    ours, theirs = load(sys.argv[1])
    header = (f"{'workload':16} {'ours ms':>8} {'ours /s':>10} {'MFU':>5} {'GiB':>6} | {'torch ms':>8} "
              f"{'torch /s':>10} {'GiB':>6} | {'speed-up':>8} {'target':>6} {'memory':>6}")
    print(header)
    print("-" * len(header))
    for workload in sorted(set(ours) | set(theirs)):
        o, t = ours.get(workload, {}), theirs.get(workload, {})
        if "error" in o:
            print(f"{workload:16} scalebench failed: {o['error']}")
            continue
        o_ms, o_rate = o.get("step_ms_p50"), o.get("units_per_second")
        o_mfu = o["tflops"] / o["peak_tflops"] if o.get("peak_tflops") else None
        o_gib = o.get("plan_bytes", 0) / 2**30 if o else None
        t_ms, t_rate = t.get("step_ms_median"), t.get("units_per_s")
        t_gib = t.get("peak_allocated_bytes", 0) / 2**30 if t else None

        def num(value, fmt):
            return format(value, fmt) if value is not None else "-"

        speedup = o_rate / t_rate if o_rate and t_rate else None
        memory = o_gib / t_gib if o_gib and t_gib else None
        print(f"{workload:16} {num(o_ms, '8.2f')} {num(o_rate, '10.0f')} {num(o_mfu, '5.0%')} {num(o_gib, '6.2f')} | "
              f"{num(t_ms, '8.2f')} {num(t_rate, '10.0f')} {num(t_gib, '6.2f')} | {num(speedup, '7.2f')}x "
              f"{TARGETS.get(workload, 0):5.1f}x {num(memory, '5.2f')}x")
        breakdown = o.get("breakdown_ms") or []
        if breakdown:
            total = sum(entry["ms"] for entry in breakdown)
            parts = ", ".join(f"{e['category']} {100 * e['ms'] / total:.0f}%" for e in breakdown)
            print(f"{'':16} ours by category: {parts}")
        ops = o.get("op_ms") or []
        if ops:
            print(f"{'':16} ours, largest ops: " + ", ".join(f"{e['op']} {e['ms']:.2f} ms" for e in ops[:10]))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Table of data-parallel scaling from scripts/gpu_check.sh dp's runs (scalebench run --json files).

usage: scaling_summary.py RUNS.tgz|DIR [DDP.jsonl]
  one_<workload>.json         a 1-rank job (solo only): the per-GPU throughput alone
  <variant>_<workload>.json   N-rank jobs: nvlink, host (NCCL_P2P_DISABLE=1), sockets (+ NCCL_SHM_DISABLE=1),
                              *_bf16 with bf16 gradients on the wire
Prints per run: solo and dp step times, scaling efficiency E(N), exposed communication, overlap, the bound
min(1, solo / comm), bus bandwidth in training and alone, the solo rate against the 1-rank job's, and the
solo rate per GPU in the workload's unit.
"""
import glob
import json
import os
import sys
import tarfile
import tempfile


def load_runs(source):
    if os.path.isdir(source):
        directory = source
    else:
        directory = tempfile.mkdtemp()
        with tarfile.open(source) as archive:
            archive.extractall(directory)
    runs = {}
    for path in glob.glob(os.path.join(directory, "**", "*.json"), recursive=True):
        with open(path) as f:
            runs[os.path.basename(path)[:-5]] = json.load(f)
    return runs


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: scaling_summary.py RUNS.tgz|DIR [DDP.jsonl]")
    runs = load_runs(sys.argv[1])
    header = (f"{'run':26} {'solo ms':>8} {'dp ms':>8} {'E(N)':>7} {'bound':>6} {'exposed':>8} {'overlap':>7} "
              f"{'busbw':>7} {'alone':>7} {'solo/1-rank':>11} {'solo/s/GPU':>11} {'AG exp':>7} {'dp GiB':>7} "
              f"{'P shard':>7} {'dp-only':>7}")
    print(header)
    print("-" * len(header))
    for name in sorted(runs):
        doc = runs[name]
        if name.startswith("one_"):
            continue
        if doc.get("status") != "ok":
            print(f"{name:26} {doc.get('status')}: {doc.get('error')}")
            continue
        workload = doc["workload"]["name"]
        one = runs.get(f"one_{workload}", {}).get("phases", {}).get("solo", {})
        phases = doc["phases"]
        solo, dp = phases.get("solo", {}), phases.get("dp", {})
        ratio = solo.get("units_per_s_per_gpu", 0) / one["units_per_s_per_gpu"] if one else None
        eff, bound = doc.get("scaling_efficiency"), doc.get("efficiency_bound")
        # The dp phases' memory in use on the device (sharded strategies hold less), and the all-gathers' exposed time.
        used = (doc.get("dp_memory") or {}).get("device_used_bytes")
        # zero3 with its parameters in blocks: the rank's parameter shard (GiB) and the nodes only its dp step runs
        # (the backward copies' casts, in the decomposition's dilation).
        parameter_shard = (doc.get("dp_memory") or {}).get("parameter_shard_bytes")
        print(f"{name:26} {fmt(solo.get('step_ms_p50'), '8.2f')} {fmt(dp.get('step_ms_p50'), '8.2f')} "
              f"{fmt(eff and 100 * eff, '6.1f')}% {fmt(bound and 100 * bound, '5.0f')}% "
              f"{fmt(doc.get('exposed_comm_ms'), '8.2f')} {fmt(doc.get('overlap_pct'), '6.0f')}% "
              f"{fmt(doc.get('busbw_gbps'), '7.1f')} {fmt(doc.get('comm_busbw_gbps'), '7.1f')} {fmt(ratio, '11.3f')} "
              f"{fmt(solo.get('units_per_s_per_gpu'), '11.1f')} "
              f"{fmt((doc.get('all_gather') or {}).get('exposed_ms_per_step'), '7.2f')} "
              f"{fmt(used and used / 2**30, '7.2f')} {fmt(parameter_shard and parameter_shard / 2**30, '7.2f')} "
              f"{fmt(doc.get('dp_only_nodes'), '7d')}")
    if len(sys.argv) > 2 and os.path.exists(sys.argv[2]):
        print("PyTorch DDP (same model, batch and bucket size):")
        with open(sys.argv[2]) as f:
            for line in f:
                if line.startswith("{"):
                    row = json.loads(line)
                    print(f"  {row['workload']:16} {row.get('strategy', 'ddp'):5} "
                          f"{'compiled' if row.get('compile') else 'eager':8} "
                          f"p2p_disable={row.get('nccl_p2p_disable')} "
                          f"shm_disable={row.get('nccl_shm_disable')}: solo {row['solo_step_ms']:.2f} ms, "
                          f"dp {row['dp_step_ms']:.2f} ms, E = {100 * row['scaling_efficiency']:.1f}%")


if __name__ == "__main__":
    main()

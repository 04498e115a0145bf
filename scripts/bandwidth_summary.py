#!/usr/bin/env python3
"""Prints busbw per collective at the anchor sizes of shared/ANCHORS.md from a `scalebench bandwidth
--json` file, one row per size, so GPU-machine runs end with a short comparable table."""
import json
import sys

ANCHOR_SIZES = [1 << 20, 8 << 20, 32 << 20, 64 << 20, 128 << 20, 512 << 20, 2 << 30]


def main(path):
    with open(path) as f:
        report = json.load(f)
    ops = report["config"]["ops"]
    rows = {}
    for record in report["results"]:
        if record["placement"] != "out_of_place":
            continue
        rows.setdefault(record["size_bytes"], {})[record["op"]] = (record["busbw_gbps"], record["wrong"])
    print(f"transport: {report['context']['transport']}   ranks: {report['context']['nranks']}   "
          f"status: {report['status']}")
    print(f"{'size':>10} " + " ".join(f"{op:>15}" for op in ops))
    for size in ANCHOR_SIZES:
        if size not in rows:
            continue
        cells = []
        for op in ops:
            busbw, wrong = rows[size].get(op, (None, None))
            cells.append(f"{busbw:15.1f}" if busbw is not None else f"{'-':>15}")
        print(f"{size >> 20:>8}Mi " + " ".join(cells))
    print(f"wrong total: {report['summary']['wrong_total']}")


if __name__ == "__main__":
    main(sys.argv[1])

#!/usr/bin/env python3
"""The anchors table: every workload by scalebench, PyTorch eager and PyTorch compiled on one GPU, from the files
of `scripts/gpu_check.sh anchors` (one call or several: pass every folder; a later file of the same name wins).

usage: anchors_table.py DIR|TGZ [DIR|TGZ...]   (TGZ: a call's anchors.tgz, read as its anchors/ folder)
  DIR/sb_<workload>.json        scalebench run --json
  DIR/eager_<workload>.json     scripts/pytorch_reference.py's JSON line, eager
  DIR/compiled_<workload>.json  the same with --compile (compiled false: it fell back to eager, and says why)
  DIR/ro_<workload>.json        the same with --compile --compile-mode reduce-overhead (CUDA graphs)

The compiled column is the faster of the two compile modes that compiled (the ratio names the mode when
reduce-overhead won): scalebench replays its steps as CUDA graphs, so PyTorch's bar includes its own.

ratio = scalebench's units/s over the faster PyTorch's (named); a compile that fell back is not a compiled
number. MFU: both tools' step time against ONE count and ONE peak: scalebench's train FLOPs of the step (`list`'s
count, which the PyTorch scripts reproduce) and the GPU table's dense peak for the device and precision
(src/plan/data/gpus.json, as `run` reports it in peak_tflops). Credited units must be equal: a row whose tools
credit different counts says so instead of a ratio.
"""
import glob
import json
import os
import sys
import tarfile
import tempfile

TARGET = 1.2  # issue 23: scalebench >= 1.2x the faster PyTorch (compiled where it compiles), per GPU
ORDER = ["transformer_big", "bert_base", "bert_finetune", "mt_dnn", "conv_seq2seq", "unsupmt", "nasnet_large",
         "yolov3", "deeplabv3", "pix2pixhd", "stylegan", "maskrcnn"]


NOT_RUN = "not run"  # no file: that tool did not run for the workload in the calls given


def read_json(path):
    """The JSON document in `path`: a whole file (scalebench) or its last line starting with '{' (PyTorch)."""
    with open(path) as f:
        text = f.read()
    try:
        return json.loads(text)
    except ValueError:
        lines = [line for line in text.splitlines() if line.startswith("{")]
        return json.loads(lines[-1]) if lines else {"status": "no JSON line (see the call's anchors.txt)"}


def folders(arguments, scratch):
    """The folders to read: each argument itself, or a .tgz unpacked under `scratch` (its anchors/ folder)."""
    for number, argument in enumerate(arguments):
        if argument.endswith((".tgz", ".tar.gz")):
            target = os.path.join(scratch, str(number))
            with tarfile.open(argument) as archive:
                archive.extractall(target, filter="data")
            yield os.path.join(target, "anchors")
        else:
            yield argument


def load(directories):
    rows = {}
    for directory in directories:
        for path in sorted(glob.glob(os.path.join(directory, "*_*.json"))):
            tool, _, workload = os.path.basename(path)[:-len(".json")].partition("_")
            if tool in ("sb", "eager", "compiled", "ro"):
                try:
                    rows.setdefault(workload, {})[tool] = read_json(path)
                except (OSError, ValueError) as error:
                    rows.setdefault(workload, {})[tool] = {"status": f"unreadable: {error}"}
    return rows


def scalebench_side(doc):
    """(units/s, step ms, units per step, train FLOPs per step, peak TFLOP/s) or an error text."""
    if doc is None:
        return NOT_RUN
    if doc.get("status") != "ok" or "solo" not in doc.get("phases", {}):
        return doc.get("error") or doc.get("status") or "no result"
    solo = doc["phases"]["solo"]
    return (solo["units_per_s_per_gpu"], solo["step_ms_p50"], doc["workload"]["units_per_step_per_rank"],
            doc["workload"]["train_flops_per_step_per_rank"], doc.get("peak_tflops"))


def pytorch_side(doc, compiled):
    """(units/s, step ms, units per step, note) or an error text; a compile that fell back is an error here."""
    if doc is None:
        return NOT_RUN
    if doc.get("status") != "ok":
        return doc.get("error") or doc.get("status") or "no result"
    if compiled and not doc.get("compiled"):
        return "fell back to eager: " + str(doc.get("compile_error"))
    return doc["units_per_s"], doc["step_ms_median"], doc["units_per_step"]


def cell(side, width):
    return f"{side[0]:>{width},.0f}" if isinstance(side, tuple) else f"{'-':>{width}}"


def main(argv):
    if not argv:
        print("usage: anchors_table.py DIR [DIR...]", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as scratch:
        rows = load(list(folders(argv, scratch)))
    if not rows:
        print(f"anchors_table.py: no sb_/eager_/compiled_/ro_ files under {' '.join(argv)}", file=sys.stderr)
        return 3
    header = (f"| {'workload':15} | {'unit':9} | {'scalebench':>10} | {'eager':>10} | {'compiled':>10} | "
              f"{'ratio vs the faster PyTorch':34} | {'MFU sb':>6} | {'MFU pt':>6} |")
    print(header)
    print("|" + "|".join("-" * (len(part)) for part in header.split("|")[1:-1]) + "|")
    notes = []
    for workload in sorted(rows, key=lambda w: (ORDER.index(w) if w in ORDER else len(ORDER), w)):
        r = rows[workload]
        sb = scalebench_side(r.get("sb"))
        eager = pytorch_side(r.get("eager"), False)
        default_mode, reduce_overhead = pytorch_side(r.get("compiled"), True), pytorch_side(r.get("ro"), True)
        # The compiled bar: the faster compile mode that compiled, named in the ratio.
        compiled, compiled_name = default_mode, "compiled"
        if isinstance(reduce_overhead, tuple) and (not isinstance(default_mode, tuple) or
                                                   reduce_overhead[0] > default_mode[0]):
            compiled, compiled_name = reduce_overhead, "compiled (reduce-overhead)"
        unit = next((d.get("unit") or d.get("workload", {}).get("unit") for d in r.values()
                     if isinstance(d, dict) and (d.get("unit") or isinstance(d.get("workload"), dict))), "")
        scope = (r.get("ro" if compiled is reduce_overhead else "compiled") or {}).get("compile_scope") or ""
        if isinstance(compiled, tuple) and scope.startswith("regional"):
            notes.append(f"{workload} compiled: {scope}")
        for name, side in (("scalebench", sb), ("eager", eager), ("compiled", default_mode),
                           ("compiled (reduce-overhead)", reduce_overhead)):
            if isinstance(side, str) and side != NOT_RUN:
                notes.append(f"{workload} {name}: {side[:160]}")
        torch_sides = [(name, side) for name, side in (("eager", eager), (compiled_name, compiled))
                       if isinstance(side, tuple)]
        ratio, mfu_sb, mfu_pt = "-", "-", "-"
        if isinstance(sb, tuple) and torch_sides:
            name, best = max(torch_sides, key=lambda item: item[1][0])
            if any(abs(side[2] - sb[2]) > 1e-6 * sb[2] for _, side in torch_sides):
                ratio = "credits differ: " + ", ".join(f"{n} {s[2]:g}" for n, s in torch_sides) + f" vs {sb[2]:g}"
            else:
                value = sb[0] / best[0]
                ratio = f"{value:.2f}x {name}{'' if value >= TARGET else f' (target {TARGET}x: {value / TARGET - 1:+.0%})'}"
            if sb[4]:
                mfu = lambda ms: sb[3] / (ms / 1e3) / (sb[4] * 1e12)
                mfu_sb, mfu_pt = f"{mfu(sb[1]):.1%}", f"{mfu(best[1]):.1%}"
        print(f"| {workload:15} | {unit:9} | {cell(sb, 10)} | {cell(eager, 10)} | {cell(compiled, 10)} | "
              f"{ratio:34} | {mfu_sb:>6} | {mfu_pt:>6} |")
    peaks = {d.get("peak_tflops") for r in rows.values() for d in [r.get("sb")] if isinstance(d, dict)}
    print(f"units/s per GPU; MFU = scalebench's train FLOPs of the step / step time / the GPU table's peak "
          f"({', '.join(f'{p:g}' for p in sorted(p for p in peaks if p)) or 'unknown'} TFLOP/s), the faster PyTorch's "
          f"step in 'MFU pt'")
    for note in notes:
        print("note:", note)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""Writes the fault campaign's malformed result files (issue 27, findings 9-11 and 13) from two valid ones.

usage: make_corpus.py RUN.json BANDWIDTH.json OUT_DIR

Each mutant is OUT_DIR/NAME.json, and OUT_DIR/expect.tsv lists NAME, the kind (run or bandwidth), the
expected outcome of `report`/`compare` and, for refusals, the field the message must name:
  refuse FIELD   exit 2, the message naming the file and FIELD
  read           exit 0 (a partial result, or a value that is odd but legal)
  any            exit 0 or 2 with the file named (a mutation the readers need not look at)
The corpus is generated, never checked in: a few hundred small files, one oversize sparse file.
"""
import copy
import json
import os
import sys


def set_path(doc, path, value):
    node = doc
    for key in path[:-1]:
        node = node[key]
    if value is DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value


DELETE = object()
RAW_BIG = "__RAW_1E400__"  # replaced in the text: json.dumps cannot write 1e400 itself

# (value, label, whether a reader must refuse it in a count / a time / a size field)
COUNT_BAD = [(0, "zero"), (-2, "negative"), (10**18, "huge"), (2**64 - 1, "u64max"), (1.5, "fraction"),
             (None, "null"), (RAW_BIG, "overflow")]
TIME_BAD = [(0, "zero"), (-1.0, "negative"), ("fast", "string"), (RAW_BIG, "overflow")]


def field_named(path, value):
    """What a refusal must name: the dotted path, or only the last key for a number too large to parse (the
    parser stops there, before the path is known)."""
    if value is RAW_BIG:
        return next(str(key) for key in reversed(path) if isinstance(key, str))
    text = ""
    for key in path:
        text += f"[{key}]" if isinstance(key, int) else (("." if text else "") + key)
    return text


def mutants(run, bandwidth):
    phases = [p for p in ("solo", "comm", "dp") if p in run["phases"]]
    # Counts: at least 1.
    for value, label in COUNT_BAD:
        yield f"run-nranks-{label}", "run", ["nranks"], value, "refuse nranks"
        yield f"run-batch-{label}", "run", ["config", "batch_per_rank"], value, "refuse config.batch_per_rank"
        yield f"bw-nranks-{label}", "bandwidth", ["context", "nranks"], value, "refuse context.nranks"
    # Times and throughputs: above 0.
    for phase in phases:
        keys = ["step_ms_p50"] + (["units_per_s_total"] if phase != "comm" else [])
        for key in keys:
            for value, label in TIME_BAD:
                yield (f"run-{phase}-{key}-{label}", "run", ["phases", phase, key], value,
                       f"refuse phases.{phase}.{key}")
        if "ranks" in run["phases"][phase] and phase != "comm":
            yield f"run-{phase}-ranks-empty", "run", ["phases", phase, "ranks"], [], f"refuse phases.{phase}.ranks"
            yield (f"run-{phase}-step0-negative", "run", ["phases", phase, "ranks", 0, "step_ms", 0], -3.0,
                   f"refuse phases.{phase}.ranks[0].step_ms[0]")
            yield (f"run-{phase}-step0-overflow", "run", ["phases", phase, "ranks", 0, "step_ms", 0], RAW_BIG,
                   "refuse step_ms")
    for i in range(min(1, len(bandwidth["results"]))):
        for key in ("size_bytes", "busbw_gbps"):
            for value, label in TIME_BAD[1:]:
                yield f"bw-result{i}-{key}-{label}", "bandwidth", ["results", i, key], value, f"refuse results[{i}].{key}"
    # Structure: missing and mistyped top-level fields are refused by name.
    for key in ("schema_version", "command", "status", "config", "workload", "context"):
        yield f"run-missing-{key}", "run", [key], DELETE, f"refuse {key}"
    for key in ("context", "config", "results", "summary"):
        yield f"bw-missing-{key}", "bandwidth", [key], DELETE, f"refuse {key}"
    yield "run-schema-99", "run", ["schema_version"], 99, "refuse schema_version"
    yield "run-command-topo", "run", ["command"], "topo", "refuse command"
    # Partial results are read: a run failed before any phase (nothing measured: exit 3), one with only solo,
    # a sweep with collectives not reached (null).
    yield "run-partial-solo-only", "run", ["phases"], {"solo": run["phases"]["solo"]}, "read"
    yield "bw-partial-null-peak", "bandwidth", ["summary", "peak_busbw_gbps", "alltoall"], None, "read"
    # Derived figures may be null (no dp phase): legal.
    for key in ("scaling_efficiency", "exposed_comm_ms", "overlap_pct", "busbw_gbps"):
        yield f"run-null-{key}", "run", [key], None, "read"
    # Everything else odd but harmless: the readers may refuse or read, never crash or hang.
    for key in ("argv", "started_at", "environment", "host"):
        yield f"run-extra-{key}", "run", [f"unexpected_{key}"], {"nested": [1, 2, RAW_BIG]}, "any"


def main():
    run = json.load(open(sys.argv[1]))
    bandwidth = json.load(open(sys.argv[2]))
    out = sys.argv[3]
    os.makedirs(out, exist_ok=True)
    rows = []
    for name, kind, path, value, expect in mutants(run, bandwidth):
        if expect.startswith("refuse ") and value is not DELETE and expect != "refuse command" \
                and expect != "refuse schema_version":
            expect = "refuse " + field_named(path, value)
        doc = copy.deepcopy(run if kind == "run" else bandwidth)
        set_path(doc, path, value)
        text = json.dumps(doc, indent=1).replace(f'"{RAW_BIG}"', "1e400")
        with open(os.path.join(out, name + ".json"), "w") as f:
            f.write(text)
        rows.append(f"{name}\t{kind}\t{expect}")
    # Finding 11's real partial file: a failed run in which nothing was measured.
    failed = copy.deepcopy(run)
    failed["status"], failed["error"], failed["phases"] = "failed", "stopped by SIGTERM during solo phase, step 1", {}
    json.dump(failed, open(os.path.join(out, "run-failed-nothing.json"), "w"))
    rows.append("run-failed-nothing\trun\tnothing")
    # Finding 13: 100 MB, sparse (no disk written), refused before it is read.
    with open(os.path.join(out, "run-oversize.json"), "w") as f:
        f.truncate(100 << 20)
    rows.append("run-oversize\trun\trefuse MiB")
    # Not JSON at all, and truncated.
    open(os.path.join(out, "run-truncated.json"), "w").write(json.dumps(run)[:200])
    rows.append("run-truncated\trun\trefuse not JSON")
    open(os.path.join(out, "run-empty.json"), "w").close()
    rows.append("run-empty\trun\trefuse not JSON")
    with open(os.path.join(out, "expect.tsv"), "w") as f:
        f.write("\n".join(rows) + "\n")
    print(f"{len(rows)} files in {out}")


if __name__ == "__main__":
    main()

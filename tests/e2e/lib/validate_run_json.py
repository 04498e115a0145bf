"""Validates a `scalebench run --json` file against the keys docs/RESULTS.md documents (schema_version 3).

usage: validate_run_json.py FILE NRANKS [--check]
Exits non-zero naming the first missing or mistyped key.
"""
import json
import sys


def need(doc, path, kind):
    node = doc
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            sys.exit(f"missing key: {path}")
        node = node[part]
    if kind is not None and not isinstance(node, kind):
        sys.exit(f"{path}: expected {kind}, got {type(node).__name__} ({node!r})")
    return node


path, nranks = sys.argv[1], int(sys.argv[2])
doc = json.load(open(path))
number = (int, float)
assert need(doc, "schema_version", int) == 3, "schema_version"
assert need(doc, "status", str) == "ok", doc.get("error")
for key in ("context.argv", "context.devices", "config.phases", "buckets_bytes"):
    need(doc, key, list)
for key in ("context.versions", "context.environment", "context.topology", "workload", "phases"):
    need(doc, key, dict)
for key in ("context.versions.scalebench", "context.reproducer", "workload.name", "workload.unit", "config.precision"):
    need(doc, key, str)
for key in ("context.versions.cuda_runtime", "context.versions.cublas", "context.versions.cudnn",
            "context.versions.nccl", "context.versions.mpi", "context.versions.cuda_driver"):
    need(doc, key, None)  # null on the CPU device
need(doc, "workload.parameters", int)
assert need(doc, "nranks", int) == nranks
for phase in ("solo", "dp"):
    ranks = need(doc, f"phases.{phase}.ranks", list)
    assert len(ranks) == nranks, f"{phase}: {len(ranks)} ranks"
    for rank in ranks:
        assert rank["step_ms"] and all(t > 0 for t in rank["step_ms"]), rank
    need(doc, f"phases.{phase}.step_ms_p50", number)
need(doc, "phases.solo.units_per_s_per_gpu", number)
need(doc, "phases.dp.units_per_s_total", number)
need(doc, "phases.comm.busbw_gbps", number)
for key in ("scaling_efficiency", "exposed_comm_ms", "overlap_pct", "busbw_gbps"):
    need(doc, key, number)
assert 0 <= doc["overlap_pct"] <= 100
assert doc["weights_identical_at_start"] is True and doc["weights_identical_after_dp"] is True
bucket_count = len(doc["buckets_bytes"])
for rank in doc["phases"]["dp"]["ranks"]:
    assert all(len(step) == bucket_count for step in rank["bucket_ms"]), "one duration per bucket per step"
if "--check" in sys.argv:
    assert need(doc, "check.passed", bool), doc["check"]
    assert doc["check"]["relative_error"] <= doc["check"]["tolerance"]

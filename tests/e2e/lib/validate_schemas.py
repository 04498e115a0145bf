#!/usr/bin/env python3
"""Validates every scalebench JSON file under DIR against docs/schema/*.schema.json with the jsonschema package
(Debian's python3-jsonschema or PyPI's jsonschema), so every JSON the end-to-end tests write is checked.

usage: validate_schemas.py DIR
A file is scalebench's when it parses to an object with "tool": "scalebench"; others (inputs the tests craft,
traces) are left alone. A suite workload file's runs and maxbatch result are validated with their own schemas.
Prints one line per invalid file (path, JSON path, reason) and exits 1 on any; without jsonschema it says so and
exits 0, or 1 when SB_REQUIRE_SCHEMA_VALIDATION=1 (CI)."""
import json
import os
import pathlib
import sys

SCHEMAS = pathlib.Path(__file__).resolve().parents[3] / "docs" / "schema"
SCHEMA_OF_COMMAND = {"run": "run", "bandwidth": "bandwidth", "topo": "topo", "list": "list",
                     "maxbatch": "maxbatch", "suite": "suite"}

try:
    import jsonschema
except ImportError:
    print("validate_schemas: jsonschema is not installed (apt-get install python3-jsonschema, or "
          "pip install jsonschema): the result files were not validated")
    sys.exit(1 if os.environ.get("SB_REQUIRE_SCHEMA_VALIDATION") == "1" else 0)


def validator(name, ref=None):
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    if ref:
        schema = {"$defs": schema["$defs"], "$ref": ref}
    return jsonschema.Draft202012Validator(schema)


def problems(doc):
    """(schema name, error) pairs for one scalebench document."""
    name = SCHEMA_OF_COMMAND.get(doc.get("command"))
    if name is None:
        return []  # a command without a published schema yet (plan)
    found = [(name, e) for e in validator(name).iter_errors(doc)]
    if doc.get("kind") == "suite_workload":
        for key, run in (doc.get("runs") or {}).items():
            if run is not None:
                found += [(f"run (runs.{key})", e) for e in validator("run").iter_errors(run)]
        if doc.get("maxbatch") is not None:
            found += [("maxbatch result", e) for e in validator("maxbatch", "#/$defs/result").iter_errors(doc["maxbatch"])]
    return found


# A folder holding this file holds inputs made invalid on purpose (the fault suite's malformed corpus): skipped.
MALFORMED_MARK = "MALFORMED_ON_PURPOSE"


def main(folder):
    bad = checked = 0
    for path in sorted(pathlib.Path(folder).rglob("*.json")):
        if any((parent / MALFORMED_MARK).exists() for parent in path.parents):
            continue
        if not path.is_file() or path.is_symlink():
            continue  # a FIFO, device or link a test made to check that scalebench refuses it: reading could block
        try:
            doc = json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError, OSError):
            continue  # not JSON: an input a test made broken on purpose, or a partial file under test
        if not isinstance(doc, dict) or doc.get("tool") != "scalebench":
            continue
        checked += 1
        for name, error in problems(doc)[:3]:
            where = "/".join(str(p) for p in error.absolute_path) or "(top)"
            print(f"schema: {path.name}: {name}: {where}: {error.message[:300]}")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

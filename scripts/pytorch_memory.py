#!/usr/bin/env python3
"""PyTorch's training memory per workload, for `scalebench plan --framework pytorch`, and its validation.
  fit       --workload W [--batches B1,B2] [--compile]   peak bytes PyTorch allocates over two training steps of
            scripts/pytorch_reference.py's model at each batch (bf16 autocast), and the least-squares line
            fixed + per-unit x batch through them: one JSON line, an entry of src/plan/data/pytorch_memory.json
  document  FITS.jsonl...                                the plan data file made of those lines (stdout)
  cap       --workload W --limit-bytes N --start B [--compile]   the largest batch that trains two steps with
            PyTorch's allocator capped at N bytes (torch.cuda.set_per_process_memory_fraction), searched from B
  validate  --scalebench BIN --pytorch-memory FILE [--workloads W,..] [--caps-gib 24,48]   for each workload and
            card size G: plan's predicted largest batch against scalebench maxbatch --memory G and against PyTorch
            capped at G minus plan's reserve (the card's context); JSON lines on --out, a table last
fit and cap need a CUDA GPU (exit 3 without one); usage errors exit 2 with one line. Run them with
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (`scripts/gpu_check.sh planmem` does): the fit and the cap see
the same allocator."""
import argparse
import datetime
import gc
import json
import math
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA_FILE = os.path.join(HERE, "..", "src", "plan", "data", "pytorch_memory.json")
STEPS_PER_ATTEMPT = 2  # the second step runs with the optimizer state the first one created


class UsageParser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2, like scalebench's UsageError
        print(f"pytorch_memory.py: {message} (run with --help)", file=sys.stderr)
        sys.exit(2)


def log(message):
    print(message, file=sys.stderr, flush=True)


def positive_ints(text):
    try:
        values = [int(v) for v in text.split(",") if v]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma list of integers")
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"'{text}' needs positive integers")
    return values


def parse_arguments(argv):
    p = UsageParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="mode", required=True, parser_class=UsageParser)
    fit = sub.add_parser("fit", help="measure one workload's memory line")
    fit.add_argument("--workload", required=True)
    fit.add_argument("--batches", type=positive_ints, default=None,
                     help="two or more batches (default: half the reference batch and the reference batch)")
    fit.add_argument("--compile", action="store_true", help="torch.compile the model (default mode)")
    document = sub.add_parser("document", help="the plan data file from fit lines")
    document.add_argument("fits", nargs="+")
    cap = sub.add_parser("cap", help="the largest batch under an allocator cap")
    cap.add_argument("--workload", required=True)
    cap.add_argument("--limit-bytes", type=int, required=True)
    cap.add_argument("--start", type=int, required=True, help="the first batch tried (plan's prediction)")
    cap.add_argument("--compile", action="store_true")
    cap.add_argument("--max-attempts", type=int, default=16)
    validate = sub.add_parser("validate", help="predicted against measured largest batches")
    validate.add_argument("--scalebench", required=True, help="the scalebench binary")
    validate.add_argument("--pytorch-memory", required=True, help="the fitted lines (document's output)")
    validate.add_argument("--workloads", default="transformer_big,bert_base,conv_seq2seq,deeplabv3")
    validate.add_argument("--caps-gib", type=positive_ints, default=[24, 48])
    validate.add_argument("--gpu", default="H200", help="the database GPU of this machine (plan --gpu)")
    validate.add_argument("--out", default=None, help="JSON lines of every comparison")
    validate.add_argument("--budget-s", type=float, default=330,
                          help="start no comparison after this many seconds (the rest show as skipped)")
    a = p.parse_args(argv)
    if a.mode == "fit" and a.batches is not None and len(set(a.batches)) < 2:
        p.error("--batches needs two or more different batches")
    if a.mode == "cap" and (a.limit_bytes < 1 or a.start < 1 or a.max_attempts < 1):
        p.error("--limit-bytes, --start and --max-attempts must be positive")
    if a.mode in ("fit", "cap"):
        import pytorch_reference as ref
        if a.workload not in ref.WORKLOADS:
            p.error(f"--workload {a.workload} is not one of {', '.join(sorted(ref.WORKLOADS))}")
    return a


# ---- pure parts (tested on the CPU: tests/e2e/pytorch_memory.sh)

def fit_line(points):
    """Least squares bytes = fixed + per_unit x batch through [(batch, bytes)]; the same formula as
    src/plan/pytorch_memory.cpp's fit_line (plan checks every stored line against its points)."""
    n = len(points)
    sx = sum(b for b, _ in points)
    sy = sum(y for _, y in points)
    sxx = sum(b * b for b, _ in points)
    sxy = sum(b * y for b, y in points)
    spread = n * sxx - sx * sx
    if n < 2 or spread <= 0:
        raise ValueError("a memory line needs points at two or more batches")
    per_unit = (n * sxy - sx * sy) / spread
    return (sy - per_unit * sx) / n, per_unit


def largest_that_trains(trains, start, max_attempts):
    """The largest batch b with trains(b) and not trains(b + 1), searched from `start`: galloping away from it
    (strides of start/64, doubling) until the answer is bracketed, then bisecting. Returns (batch or 0, attempts)."""
    attempts, trained, failed, batch = [], 0, None, max(1, start)
    stride = max(1, batch // 64)  # a prediction within a few percent brackets the answer in two or three tries
    while len(attempts) < max_attempts:
        ok = trains(batch)
        attempts.append(dict(batch=batch, trained=ok))
        if ok:
            trained = batch
        else:
            failed = batch
        if failed is not None and (failed == trained + 1 or failed == 1):
            return trained, attempts
        if failed is None:
            batch, stride = trained + stride, stride * 2
        elif trained == 0:
            batch, stride = max(1, failed - stride), stride * 2
        else:
            batch = (trained + failed) // 2
    return (trained if failed == trained + 1 else 0), attempts


def document(fit_lines, about):
    measurements = sorted(fit_lines, key=lambda f: (f["workload"], f["mode"] != "eager"))
    seen = set()
    for f in measurements:
        key = (f["workload"], f["mode"])
        if key in seen:
            raise ValueError(f"{key[0]} {key[1]} is measured twice")
        seen.add(key)
    return dict(schema_version=1, about=about, measurements=measurements)


def lines_table(measurements):
    """The fitted lines, one text row each."""
    return "\n".join(f"{m['workload']:16} {m['mode']:9} fixed {m['fixed_bytes'] / 2**30:7.2f} GiB, "
                     f"{m['bytes_per_unit'] / 2**20:8.2f} MiB per batch unit (batches "
                     f"{', '.join(str(p['batch']) for p in m['points'])}; {m['gpu']}, torch {m['torch']})"
                     for m in measurements)


def comparison_table(rows):
    """Markdown rows: workload, framework, card, predicted, measured, error."""
    lines = ["| workload | framework | card (GiB) | predicted | measured | error |", "|---|---|---|---|---|---|"]
    for r in rows:
        predicted, measured = r.get("predicted"), r.get("measured")
        error = (f"{100 * (predicted - measured) / measured:+.1f}%" if predicted is not None and measured
                 else "n/a")
        lines.append(f"| {r['workload']} | {r['framework']} | {r['card_gib']:g} | "
                     f"{predicted if predicted is not None else 'n/a'} | "
                     f"{measured if measured is not None else r.get('error', 'n/a')} | {error} |")
    return "\n".join(lines)


# ---- GPU parts

def load_torch():
    try:
        import torch
    except ImportError:
        log("pytorch_memory.py: torch is not installed")
        sys.exit(3)
    if not torch.cuda.is_available():
        log("pytorch_memory.py: needs a CUDA GPU (torch.cuda.is_available() is False)")
        sys.exit(3)
    return torch


class Trainer:
    """scripts/pytorch_reference.py's model and optimizer for one workload, built once; attempt(b) trains two
    steps at batch b and returns (trained, peak allocated bytes, peak reserved bytes, error)."""

    def __init__(self, torch, workload, compile_model):
        import pytorch_reference as ref
        self.torch, self.ref, self.compile_model = torch, ref, compile_model
        self.a = ref.parse_arguments(["--workload", workload, "--precision", "bf16"])
        self.device = torch.device("cuda")
        self.w = ref.describe(self.a, torch)
        torch.manual_seed(self.a.seed)
        self.model = ref.build_model(torch, self.a, self.w, self.device)
        self.optimizer = ref.make_optimizer(torch, self.a, self.model, True)
        self.model.train()

    def attempt(self, batch):
        torch, ref, a = self.torch, self.ref, self.a
        a.batch = batch
        data = None
        if self.compile_model:
            torch._dynamo.reset()  # each batch compiled as a fixed-shape program, as a user's run would be
        forward = ref.compile_for(torch, a.workload, self.model) if self.compile_model else self.model
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        try:
            data, _ = ref.synthesize(torch, a, self.w, a.seed, self.device)
            step = ref.make_step(torch, a, forward, self.optimizer, data, self.device)
            for _ in range(STEPS_PER_ATTEMPT):
                loss = step()
            torch.cuda.synchronize()
            ok, error = math.isfinite(float(loss)), ""
        except (torch.cuda.OutOfMemoryError, RuntimeError) as e:
            if not ref.is_out_of_memory(torch, e):
                raise
            ok, error = False, str(e).splitlines()[0]
        peaks = torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()
        del data
        ref.zero_grad(self.optimizer)
        gc.collect()
        torch.cuda.empty_cache()
        return ok, peaks[0], peaks[1], error


def run_fit(a):
    torch = load_torch()
    trainer = Trainer(torch, a.workload, a.compile)
    reference = trainer.ref.WORKLOADS[a.workload]["batch"]
    batches = sorted(set(a.batches or [max(1, reference // 2), reference]))
    points = []
    for batch in batches:
        started = time.time()
        ok, allocated, reserved, error = trainer.attempt(batch)
        log(f"# {a.workload} {'compiled' if a.compile else 'eager'} batch {batch}: "
            f"{'peak ' + format(allocated / 2**30, '.2f') + ' GiB allocated' if ok else error} "
            f"({time.time() - started:.1f} s)")
        if not ok:
            log(f"pytorch_memory.py: batch {batch} did not train: {error}")
            sys.exit(3)
        points.append(dict(batch=batch, peak_allocated_bytes=allocated, peak_reserved_bytes=reserved))
    fixed, per_unit = fit_line([(p["batch"], p["peak_allocated_bytes"]) for p in points])
    return dict(workload=a.workload, mode="compiled" if a.compile else "eager", precision="bf16",
                fixed_bytes=fixed, bytes_per_unit=per_unit, points=points, gpu=torch.cuda.get_device_name(),
                torch=torch.__version__, allocator=os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "default"),
                date=datetime.date.today().isoformat(),
                command="scripts/pytorch_memory.py fit --workload " + a.workload + " --batches " +
                        ",".join(str(b) for b in batches) + (" --compile" if a.compile else ""))


def run_cap(a):
    torch = load_torch()
    total = torch.cuda.get_device_properties(0).total_memory
    if a.limit_bytes > total:
        log(f"pytorch_memory.py: --limit-bytes {a.limit_bytes} is above the GPU's {total} bytes")
        sys.exit(2)
    torch.cuda.set_per_process_memory_fraction(a.limit_bytes / total)
    trainer = Trainer(torch, a.workload, a.compile)

    def trains(batch):
        ok, allocated, _, error = trainer.attempt(batch)
        log(f"# {a.workload} batch {batch}: {'trained, peak ' + format(allocated / 2**30, '.2f') + ' GiB' if ok else error}")
        return ok

    largest, attempts = largest_that_trains(trains, a.start, a.max_attempts)
    return dict(workload=a.workload, mode="compiled" if a.compile else "eager", limit_bytes=a.limit_bytes,
                max_batch=largest or None, attempts=attempts, gpu=torch.cuda.get_device_name(),
                torch=torch.__version__, allocator=os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "default"))


def json_of(command, timeout):
    """The JSON a command prints on stdout, or (None, its last error line)."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["exit " + str(done.returncode)])[-1]
        return None, last
    try:
        return json.loads(done.stdout), ""  # scalebench writes an indented document
    except ValueError:
        return json.loads(done.stdout.strip().splitlines()[-1]), ""  # pytorch_memory.py one line after its log


def run_validate(a):
    rows = []
    out = open(a.out, "a") if a.out else None
    began = time.time()
    # Card size first: if the budget runs out, every workload has its first card size.
    for gib in a.caps_gib:
        for workload in [w for w in a.workloads.split(",") if w]:
            if time.time() - began > a.budget_s:
                rows += [dict(workload=workload, framework=f, card_gib=gib, error="skipped: --budget-s spent")
                         for f in ("scalebench", "pytorch")]
                continue
            plan = [a.scalebench, "plan", "-w", workload, "--gpu", a.gpu, "--memory", str(gib), "--json", "-"]
            # One plan answers both: --framework pytorch prints scalebench's largest batch beside PyTorch's.
            predicted, plan_error = json_of(plan + ["--framework", "pytorch", "--pytorch-memory", a.pytorch_memory], 120)
            pytorch_error = "plan: " + plan_error if predicted is None else ""
            if predicted is None:
                predicted, plan_error = json_of(plan, 120)
            for framework in ("scalebench", "pytorch"):
                row = dict(workload=workload, framework=framework, card_gib=gib, predicted=None, measured=None)
                started = time.time()
                if predicted is None or (framework == "pytorch" and pytorch_error):
                    row["error"] = pytorch_error if framework == "pytorch" and pytorch_error else "plan: " + plan_error
                    rows.append(row)
                    continue
                memory = predicted["predictions"][0]["memory"]
                if framework == "scalebench":
                    row["predicted"] = next(f["max_batch"] for f in memory["max_batch"] if f["precision"] == "bf16")
                    measured, error = json_of([a.scalebench, "maxbatch", "-w", workload, "--memory", str(gib),
                                               "--verify-steps", "1", "--json", "-"], 150)
                    if measured is not None:
                        row["measured"] = measured_max_batch(measured)
                else:
                    row["predicted"] = next(f["max_batch"] for f in memory["pytorch_max_batch"] if f["mode"] == "eager")
                    limit = int(gib * 2**30) - int(memory["reserve_bytes"])
                    measured, error = json_of([sys.executable, os.path.join(HERE, "pytorch_memory.py"), "cap",
                                               "--workload", workload, "--limit-bytes", str(limit),
                                               "--start", str(max(1, row["predicted"]))], 150)
                    if measured is not None:
                        row["measured"] = measured["max_batch"]
                        row["limit_bytes"] = limit
                if measured is None:
                    row["error"] = error
                row["seconds"] = round(time.time() - started, 1)
                log(f"# {workload} {framework} {gib} GiB: predicted {row['predicted']}, measured "
                    f"{row['measured'] if row['measured'] is not None else row.get('error')} ({row['seconds']} s)")
                rows.append(row)
                if out:
                    out.write(json.dumps(row) + "\n")
                    out.flush()
    return rows


def measured_max_batch(maxbatch_json):
    """scalebench maxbatch's verified largest batch (src/report/max_batch_json.cpp: one result per workload)."""
    return maxbatch_json["results"][0]["verified"]


def main(argv):
    sys.path.insert(0, HERE)
    a = parse_arguments(argv)
    if a.mode == "document":
        lines = []
        for path in a.fits:
            with open(path) as f:
                lines += [json.loads(line) for line in f if line.strip()]
        with open(DATA_FILE) as f:
            about = json.load(f)["about"]
        try:
            print(json.dumps(document(lines, about), indent=2))
        except ValueError as e:
            log(f"pytorch_memory.py: {e}")
            return 2
        return 0
    if a.mode == "validate":
        rows = run_validate(a)
        with open(a.pytorch_memory) as f:
            print(lines_table(json.load(f)["measurements"]))
        print(comparison_table(rows))
        return 0
    result = run_fit(a) if a.mode == "fit" else run_cap(a)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

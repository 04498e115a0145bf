"""Recomputes `scalebench run --json`'s efficiency_decomposition (docs/RESULTS.md) from the per-rank, per-step
timelines the same file holds (phases.solo/dp.ranks[]: forward_done_ms, nodes_done_ms, step_done_ms, bucket_start_ms,
bucket_end_ms), for a CPU-device run (the all-reduces on the compute timeline), and checks the reported terms, the
residual and the console's warning against it.

usage: check_decomposition.py RUN.json CONSOLE.txt [--straggler-step K --straggler-ms MS]
  --straggler-step K: timed dp step K had rank 1 arriving MS late: rank 0's skew in it is at least 0.8 MS and
  rank 1's under 0.2 MS.
"""
import argparse
import json, statistics, sys

parser = argparse.ArgumentParser()
parser.add_argument("run")
parser.add_argument("console")
parser.add_argument("--straggler-step", type=int)
parser.add_argument("--straggler-ms", type=float)
args = parser.parse_args()
doc = json.load(open(args.run))
console = open(args.console).read()
d = doc["efficiency_decomposition"]
assert d["measured"] is True, d
E = doc["scaling_efficiency"]
close = lambda a, b: abs(a - b) <= 1e-9 + 1e-6 * abs(b)
assert close(d["loss"], 1 - E), (d["loss"], E)
assert close(d["dilation"] + d["tail"] + d["skew"] + d["residual"], d["loss"]), d
assert d["adds_up"] == (abs(d["residual"]) <= d["tolerance"]), d
assert d["tolerance"] == 0.005
if not d["adds_up"]:
    assert "do NOT add up to 1 - E: residual" in console, console
else:
    assert "do NOT add up" not in console
# Recomputed from the timelines (docs/RESULTS.md): CPU device, so waits count wherever they fall.
solo = doc["phases"]["solo"]["ranks"]
dp = doc["phases"]["dp"]["ranks"]
med = statistics.median
def at_median_step(step_ms, values):
    # The value in the median step, interpolated between the two middle steps as the median interpolates.
    order = sorted(range(len(step_ms)), key=lambda k: step_ms[k])
    position = (len(order) - 1) / 2
    below = int(position)
    above = min(below + 1, len(order) - 1)
    return values[order[below]] + (values[order[above]] - values[order[below]]) * (position - below)
def overlap(start, length, a, b):
    return max(0.0, min(start + length, b) - max(start, a))
steps = min(len(r["step_ms"]) for r in dp)
terms = []
for r, (s, p) in enumerate(zip(solo, dp)):
    assert len(s["forward_done_ms"]) == len(s["step_ms"]) == len(s["nodes_done_ms"]) == len(s["step_done_ms"])
    bw = med([n - f for f, n in zip(s["forward_done_ms"], s["nodes_done_ms"])])
    after = med([e - n for n, e in zip(s["nodes_done_ms"], s["step_done_ms"])])
    mine = []
    for k in range(steps):
        fd, nd, sd = p["forward_done_ms"][k], p["nodes_done_ms"][k], p["step_done_ms"][k]
        skew_in = skew_after = 0.0
        for b, start in enumerate(p["bucket_start_ms"][k]):
            shortest = min(q["bucket_end_ms"][k][b] - q["bucket_start_ms"][k][b] for q in dp)
            wait = max(0.0, p["bucket_end_ms"][k][b] - start - shortest)
            skew_in += overlap(start, wait, fd, nd)
            skew_after += overlap(start, wait, nd, max(nd, sd))
        mine.append(((nd - fd) - bw - skew_in, (sd - nd) - after - skew_after, skew_in + skew_after))
    terms.append(mine)
    got = d["ranks"][r]
    values = p["step_ms"][:steps]
    for i, name in enumerate(("dilation_ms", "tail_ms", "skew_ms")):
        assert abs(at_median_step(values, [t[i] for t in mine]) - got[name]) < 1e-6, (r, name, got)
slowest = [max(range(len(dp)), key=lambda r: (dp[r]["step_ms"][k], -r)) for k in range(steps)]
slowest_ms = [dp[slowest[k]]["step_ms"][k] for k in range(steps)]
dp_step = med(slowest_ms)
assert abs(dp_step - d["dp_step_ms"]) < 1e-6
assert abs(dp_step - doc["phases"]["dp"]["step_ms_p50"]) < 1e-6
for i, name in enumerate(("dilation", "tail", "skew")):
    ms = at_median_step(slowest_ms, [terms[slowest[k]][k][i] for k in range(steps)])
    assert abs(ms - d[name + "_ms"]) < 1e-6, (name, ms, d)
    assert abs(ms / dp_step - d[name]) < 1e-9, (name, d)
print(f"{args.run}: 1-E {100*d['loss']:.2f} = dilation {100*d['dilation']:.2f} + tail {100*d['tail']:.2f} "
      f"+ skew {100*d['skew']:.2f} + residual {100*d['residual']:.2f} points")
if args.straggler_step is not None:
    k = args.straggler_step
    assert terms[0][k][2] >= 0.8 * args.straggler_ms, ("rank 0 waited", terms[0][k])
    assert terms[1][k][2] < 0.2 * args.straggler_ms, ("rank 1 waited", terms[1][k])
    assert slowest[k] == 0, slowest

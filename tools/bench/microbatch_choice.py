#!/usr/bin/env python3
"""The micro-batch count remat chooses against the fastest one measured
(issue 35, acceptance 4; docs/benchmarks.md, "Choosing the micro-batches").

For a model and batch: the unsplit step's minimum feasible budget M1 and
the split step's, M16 (the step split into the most micro-batches that
divide the batch, at most 16: the least memory any split needs); POINTS
budgets evenly spaced from M1 down to M16. At each budget:

- remat's choice: `remat compile --budget B --microbatches auto`
  (docs/planner.md, "Micro-batches": K from 1 up, the least modeled step
  time);
- every K in 1..16 that divides the batch: `--microbatches K --budget B`,
  where it fits;
- each of those plans run ROUNDS times, interleaved (one run of each plan
  per round, 3 steps, the last 2 timed), and the median step time.

The table: budget, the K remat chose and its median, the fastest K and its
median, their ratio (the target: at most 1.10). Run it on an idle machine.

usage: microbatch_choice.py [--remat build/tools/remat/remat]
           [--model gpt2|FILE] [--arg ARG]... [--preset P]
           [--set NAME=VALUE]... [--points 5] [--rounds 3]
           [--json OUT.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_measure  # noqa: E402
from cpu_measure import ROOT  # noqa: E402

MARKER = "minimum feasible budget: "


def minimum(remat, source, k):
    """The minimum feasible budget of the step split into k micro-batches."""
    r = subprocess.run([remat, "compile"] + source +
                       ["--budget", "1", "--microbatches", str(k),
                        "--emit=plan", "-o", os.devnull],
                       capture_output=True, text=True)
    if MARKER not in r.stderr:
        raise SystemExit(f"no minimum for {k} micro-batches:\n{r.stderr}")
    return int(r.stderr.split(MARKER)[1].split()[0])


def compile_at(remat, source, work, tag, budget, k=None):
    """(plan, report) at `budget`, with --microbatches k if given; None
    where it does not fit."""
    args = source + ["--budget", str(budget)]
    if k is not None:
        args += ["--microbatches", str(k)]
    plan = os.path.join(work, tag + ".plan")
    report = os.path.join(work, tag + ".json")
    r = subprocess.run([remat, "compile"] + args +
                       ["--emit=plan", "-o", plan, "--report", report],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None
    with open(report) as f:
        return plan, json.load(f)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--remat",
                   default=os.path.join(ROOT, "build/tools/remat/remat"))
    p.add_argument("--model", default="gpt2",
                   help="a model of models/ by name, or a model file (an "
                        ".onnx export: give its batch with --arg "
                        "--input-shape --arg x=B,...)")
    p.add_argument("--arg", action="append", default=[],
                   help="a further argument of every compile (repeat)")
    p.add_argument("--preset")
    p.add_argument("--set", action="append", default=[])
    p.add_argument("--points", type=int, default=5)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--json")
    args = p.parse_args()
    source = [args.model if os.path.exists(args.model) else
              os.path.join(ROOT, "models", args.model + ".json")]
    source += args.arg
    if args.preset:
        source += ["--preset", args.preset]
    for value in args.set:
        source += ["--set", value]
    rows = []
    with tempfile.TemporaryDirectory() as work:
        plan, _ = cpu_measure.compile_plan(args.remat, source[0],
                                           source[1:], work, "store-all")
        with open(plan) as f:
            batch = json.load(f)["batch"]
        ks = [k for k in range(1, 17) if batch % k == 0]
        # (Where the accumulators outweigh the activations a slice saves,
        # the split needs more than the unsplit step: the range runs the
        # other way.)
        unsplit, split = (minimum(args.remat, source, 1),
                          minimum(args.remat, source, ks[-1]))
        high, low = max(unsplit, split), min(unsplit, split)
        print(f"{' '.join(source[1:])}: batch {batch}; minimum "
              f"feasible budget unsplit {unsplit} B, split into {ks[-1]} "
              f"{split} B", flush=True)
        for i in range(args.points):
            budget = high - (high - low) * i // max(args.points - 1, 1)
            chosen = compile_at(args.remat, source, work, f"c{i}", budget,
                                "auto")
            if chosen is None:
                print(f"budget {budget}: remat finds no plan")
                continue
            k_chosen = chosen[1].get("microbatches", 1)
            plans = {}
            for k in ks:
                got = compile_at(args.remat, source, work, f"b{i}k{k}",
                                 budget, k)
                if got is not None:
                    plans[k] = got
            times = {k: [] for k in plans}
            for _ in range(args.rounds):
                for k, (plan, _) in plans.items():
                    log = cpu_measure.run_plan(args.remat, plan, 3, work,
                                               f"r{i}k{k}")
                    times[k] += [e["ms"] for e in log[1:]]
            med = {k: statistics.median(v) for k, v in times.items()}
            fastest = min(med, key=med.get)
            row = {"budget": budget, "chosen": k_chosen,
                   "chosen_ms": med.get(k_chosen),
                   "chosen_overhead": chosen[1]["recompute_overhead"],
                   "fastest": fastest, "fastest_ms": med[fastest],
                   "ms": med,
                   "overhead": {k: r["recompute_overhead"]
                                for k, (_, r) in plans.items()}}
            row["ratio"] = row["chosen_ms"] / med[fastest]
            rows.append(row)
            print(f"budget {budget}: chose {k_chosen} ({row['chosen_ms']:.0f}"
                  f" ms), fastest {fastest} ({med[fastest]:.0f} ms), ratio "
                  f"{row['ratio']:.3f}; " + ", ".join(
                      f"k={k} {m:.0f} ms ({row['overhead'][k] * 100:.1f}%)"
                      for k, m in sorted(med.items())), flush=True)
    print()
    print("| budget (B) | remat's k | its median | fastest k | its median "
          "| ratio | every k: median (modeled recompute overhead) |")
    print("|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        every = ", ".join(f"{k}: {m:.0f} ms ({r['overhead'][k] * 100:.1f}%)"
                          for k, m in sorted(r["ms"].items()))
        print(f"| {r['budget']:,} | {r['chosen']} | {r['chosen_ms']:.0f} ms "
              f"| {r['fastest']} | {r['fastest_ms']:.0f} ms | "
              f"{r['ratio']:.3f} | {every} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

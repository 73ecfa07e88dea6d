#!/usr/bin/env python3
"""Measured memory under a budget (CPU): GPT-2 (4 layers, d_model 256,
seq 256, vocab 4096, batch 8, dropout 0.1) at store-all and at half the
store-all activation memory. For each: planned peak, arena, the process's
measured peak RSS growth (remat run's rss_growth_bytes), their ratio, the
step time and the modeled recompute overhead; and whether the losses of the
two runs are bitwise equal.

usage: budget_memory.py [--remat build/tools/remat/remat] [--steps 3]
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_measure  # noqa: E402
from cpu_measure import ROOT  # noqa: E402

CONFIG = ["--set", "n_layer=4", "--set", "d_model=256", "--set", "n_head=4",
          "--set", "seq=256", "--set", "vocab=4096", "--set", "batch=8"]


def run(remat, budget, steps, work, tag):
    args = CONFIG + (["--budget", str(budget)] if budget else [])
    plan, rep = cpu_measure.compile_plan(
        remat, os.path.join(ROOT, "models/gpt2.json"), args, work, tag)
    return rep, cpu_measure.run_plan(remat, plan, steps, work, tag)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--remat", default=os.path.join(ROOT, "build/tools/remat/remat"))
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        full, full_log = run(args.remat, None, args.steps, work, "full")
        half_budget = cpu_measure.activation_half_budget(full)
        half, half_log = run(args.remat, half_budget, args.steps, work, "half")
    print("| run | budget | planned peak | arena | RSS growth | growth / arena "
          "| step ms (last) | modeled overhead |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, rep, log in (("store-all", full, full_log),
                           ("half activations", half, half_log)):
        growth = max(e["rss_growth_bytes"] for e in log)
        budget = rep["budget_bytes"] if rep["budget_bytes"] else "-"
        print(f"| {name} | {budget} | {rep['planned_peak_bytes']} | "
              f"{rep['arena_bytes']} | {growth} | "
              f"{growth / rep['arena_bytes']:.3f} | {log[-1]['ms']:.0f} | "
              f"{100 * rep['recompute_overhead']:.1f}% |")
    same = [e["loss"] for e in full_log] == [e["loss"] for e in half_log]
    print(f"\nlosses bitwise equal across the two budgets: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())

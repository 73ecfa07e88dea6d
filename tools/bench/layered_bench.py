#!/usr/bin/env python3
"""The random layered training graphs' table of docs/benchmarks.md.

  layered_bench.py REMAT DIR [--exact-seconds S] [--exact-max-nodes N]

DIR holds graphs written by `tools/gen_layered_graph.py --suite DIR`. Per
graph: the lower bound, the smallest budget at which each solver finds a
schedule (`remat plan --graph G --solver X --budget-frac F`, bisected over F
to 0.1% of the store-all peak; per-block and sqrt ignore budgets, so their
peak), the exact MILP with a long limit as referee on graphs of up to
--exact-max-nodes nodes, the minimum of `--budget-frac min` and its gap, then
auto's overhead and seconds at 0.9, 0.7, 0.5 and the minimum, and whether
auto plans at every budget of a grid from 2% above the least minimum any
method found up to store-all. Prints a markdown table; minutes to run.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import time


def plan(remat, graph, frac, solver="auto", limit=None, extra=()):
    argv = [remat, "plan", "--graph", graph, "--budget-frac", str(frac),
            "--solver", solver] + list(extra)
    if limit is not None:
        argv += ["--time-limit", str(limit)]
    start = time.time()
    r = subprocess.run(argv, capture_output=True, text=True)
    seconds = time.time() - start
    if r.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)}: exit {r.returncode}\n{r.stderr}")
    report = json.loads(r.stdout)
    report["wall"] = seconds
    report["ok"] = r.returncode == 0
    return report


def smallest(remat, graph, solver, low, limit=None):
    """The smallest fraction in [low, 1] at which `solver` plans (bisection
    to 0.001; the found schedule's own peak moves the upper end)."""
    hi, lo = 1.0, low - 1e-9
    first = plan(remat, graph, low, solver, limit)
    if first["ok"]:
        return first["planned_peak_bytes"] / first["store_all_peak_bytes"]
    while hi - lo > 0.001:
        mid = (hi + lo) / 2
        r = plan(remat, graph, mid, solver, limit)
        if r["ok"]:
            hi = min(mid, r["planned_peak_bytes"] / r["store_all_peak_bytes"])
        else:
            lo = mid
    return hi


def main():
    p = argparse.ArgumentParser()
    p.add_argument("remat")
    p.add_argument("dir")
    p.add_argument("--exact-seconds", type=float, default=120)
    p.add_argument("--exact-max-nodes", type=int, default=40)
    a = p.parse_args()
    graphs = sorted(glob.glob(os.path.join(a.dir, "*.json")),
                    key=lambda g: len(json.load(open(g))["nodes"]))
    print("| graph | nodes | lower bound | heuristic | dp | per-block | sqrt "
          "| exact (referee) | min (gap) | auto 0.9 | auto 0.7 | auto 0.5 "
          "| auto min | auto down to 1.02x best | max auto s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:"
          "|---|---:|")
    for g in graphs:
        base = plan(a.remat, g, 1.0, "store-all")
        n = base["nodes"]
        store = base["store_all_peak_bytes"]
        low = base["lower_bound_bytes"] / store
        mins = {}
        for solver in ("heuristic", "dp"):
            mins[solver] = smallest(a.remat, g, solver, low)
        for solver in ("per-block", "sqrt"):
            r = plan(a.remat, g, 1.0, solver)
            mins[solver] = r["planned_peak_bytes"] / store if r["ok"] else None
        if n <= a.exact_max_nodes:
            mins["exact"] = smallest(a.remat, g, "exact", low, a.exact_seconds)
        else:
            mins["exact"] = None
        m = plan(a.remat, g, "min")
        mins["min"] = m["min_feasible_bytes"] / store
        best = min(v for v in mins.values() if v is not None)
        cells = []
        worst = 0.0
        for frac in (0.9, 0.7, 0.5, "min"):
            if frac != "min" and frac < low:
                cells.append("below bound")
                continue
            r = plan(a.remat, g, frac)
            worst = max(worst, r["wall"])
            cells.append(f"{100 * r['recompute_overhead']:.1f}%"
                         if r["ok"] else "none")
        # Every budget from 1.02x the best minimum to store-all.
        grid_ok = True
        steps = 8
        for i in range(steps + 1):
            frac = best * 1.02 + (1 - best * 1.02) * i / steps
            r = plan(a.remat, g, frac)
            worst = max(worst, r["wall"])
            grid_ok &= r["ok"]
        fmt = lambda v: "-" if v is None else f"{v:.3f}"
        print(f"| {os.path.basename(g)} | {n} | {low:.3f} | "
              f"{fmt(mins['heuristic'])} | {fmt(mins['dp'])} | "
              f"{fmt(mins['per-block'])} | {fmt(mins['sqrt'])} | "
              f"{fmt(mins['exact'])} | {mins['min']:.3f} "
              f"({m['min_feasible_gap']}) | " + " | ".join(cells) +
              f" | {'yes' if grid_ok else 'NO'} | {worst:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

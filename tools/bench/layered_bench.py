#!/usr/bin/env python3
"""The random layered training graphs' table of docs/benchmarks.md.

  layered_bench.py REMAT DIR [--exact-seconds S] [--exact-max-nodes N]
                   [--only NAME,...] [--json OUT]

DIR holds graphs written by `tests/tools/gen_layered_graph.py --suite DIR`.
Per graph: the lower bound, the smallest budget at which each solver finds a
schedule (`remat plan --graph G --solver X --budget-frac F`, bisected over F
to 0.1% of the store-all peak; per-block and sqrt ignore budgets, so their
peak), the minimum of `--budget-frac min` (auto's own search, its default
10 s MILP runs on graphs of up to 40 nodes) and its gap, checked: remat plan
must succeed at that budget with a peak within it. As referee on graphs of
up to --exact-max-nodes nodes, the same search with the MILP at
--exact-seconds per run (`--budget-frac min --time-limit S`: the MILP looks
1% below the fast solvers' minimum, repeatedly, and tries to prove 1% below
the final minimum infeasible). Then auto's overhead at 0.9, 0.7, 0.5 and
the minimum, and whether auto plans at every budget of a grid from 2% above
the least minimum any method found up to store-all; the slowest auto run at
a given budget (wall clock) and the minimum search's time. Prints a
markdown table; minutes to hours to run (the referee).
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
    # Solvers that recompute nothing here (the DP on one segment): done.
    if not plan(remat, graph, 0.999, solver, limit)["ok"]:
        return 1.0
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
    p.add_argument("--exact-seconds", type=float, default=600)
    p.add_argument("--exact-max-nodes", type=int, default=40)
    p.add_argument("--only", help="comma-separated graph names (no .json)")
    p.add_argument("--json", help="also append each row as a JSON line")
    a = p.parse_args()
    graphs = sorted(glob.glob(os.path.join(a.dir, "*.json")),
                    key=lambda g: len(json.load(open(g))["nodes"]))
    if a.only:
        names = a.only.split(",")
        graphs = [g for g in graphs
                  if os.path.basename(g)[:-len(".json")] in names]
    print("| graph | nodes | lower bound | heuristic | dp | per-block | sqrt "
          "| exact referee (gap) | min (gap) | auto 0.9 | auto 0.7 "
          "| auto 0.5 | auto min | auto down to 1.02x best "
          "| max auto s per budget | min search s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:"
          "|---|---:|---:|")
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
        # auto's own minimum search, then the plan at it must succeed.
        m = plan(a.remat, g, "min")
        mins["min"] = m["min_feasible_bytes"] / store
        search_s = m["wall"]
        if not m["ok"] or m["planned_peak_bytes"] > m["min_feasible_bytes"]:
            raise SystemExit(f"{g}: --budget-frac min does not plan at "
                             f"{m['min_feasible_bytes']}: {m}")
        referee = None
        if n <= a.exact_max_nodes:
            # Only the search's answer: store-all, cheap, does not plan
            # there (auto would spend the long limit once more).
            referee = plan(a.remat, g, "min", "store-all", a.exact_seconds)
            mins["exact"] = referee["min_feasible_bytes"] / store
        else:
            mins["exact"] = None
        best = min(v for v in mins.values() if v is not None)
        cells = []
        worst = 0.0
        for frac in (0.9, 0.7, 0.5, "min"):
            if frac != "min" and frac < low:
                cells.append("below bound")
                continue
            if frac == "min":
                r = m
            else:
                r = plan(a.remat, g, frac)
                worst = max(worst, r["wall"])
            cells.append(f"{100 * r['recompute_overhead']:.1f}%"
                         if r["ok"] else "none")
        # Every budget from 1.02x the best minimum to store-all.
        grid_ok = True
        failed = []
        steps = 8
        for i in range(steps + 1):
            frac = best * 1.02 + (1 - best * 1.02) * i / steps
            r = plan(a.remat, g, frac)
            worst = max(worst, r["wall"])
            if not r["ok"]:
                grid_ok = False
                failed.append(round(frac, 4))
        fmt = lambda v: "-" if v is None else f"{v:.3f}"
        ref = "-" if referee is None else \
            f"{mins['exact']:.3f} ({referee['min_feasible_gap']})"
        print(f"| {os.path.basename(g)[:-5]} | {n} | {low:.3f} | "
              f"{fmt(mins['heuristic'])} | {fmt(mins['dp'])} | "
              f"{fmt(mins['per-block'])} | {fmt(mins['sqrt'])} | "
              f"{ref} | {mins['min']:.3f} "
              f"({m['min_feasible_gap']}) | " + " | ".join(cells) +
              f" | {'yes' if grid_ok else 'NO ' + str(failed)} | "
              f"{worst:.1f} | {search_s:.1f} |", flush=True)
        if a.json:
            with open(a.json, "a") as f:
                f.write(json.dumps({
                    "graph": os.path.basename(g), "nodes": n,
                    "lower_bound": low, "mins": mins,
                    "min_gap": m["min_feasible_gap"],
                    "min_solver": m["min_feasible_solver"],
                    "referee_gap": None if referee is None
                    else referee["min_feasible_gap"],
                    "referee_proven_infeasible": None if referee is None
                    else referee["proven_infeasible_bytes"] / store,
                    "auto": cells, "grid_ok": grid_ok, "grid_failed": failed,
                    "max_auto_s": worst, "min_search_s": search_s}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

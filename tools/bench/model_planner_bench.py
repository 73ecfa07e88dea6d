#!/usr/bin/env python3
"""Planner benchmark on remat's own models: mlp_deep and gpt2 at 12, 24 and
48 layers, each solver at budgets of 75% and 50% of the store-all
activation memory (persistent bytes always included) and at the minimum
feasible budget: modeled recompute overhead and solve time.

usage: model_planner_bench.py [--remat build/tools/remat/remat]
                              [--solvers auto,heuristic,per-block,sqrt]
                              [--json OUT]
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def plan(remat, args):
    start = time.time()
    r = subprocess.run([remat, "plan"] + args, capture_output=True, text=True)
    wall = time.time() - start
    if r.returncode != 0:
        return None, r.stderr.strip().splitlines()[-1] if r.stderr else "failed", wall
    return json.loads(r.stdout), None, wall


def store_all(remat, model_args, work):
    report = os.path.join(work, "r.json")
    subprocess.run([remat, "compile"] + model_args + ["--emit=plan", "-o",
                    os.path.join(work, "p.plan"), "--report", report],
                   check=True, capture_output=True)
    with open(report) as f:
        return json.load(f)


def minimum(remat, model_args):
    r = subprocess.run([remat, "plan"] + model_args + ["--budget", "1"],
                       capture_output=True, text=True)
    marker = "minimum feasible budget: "
    if marker not in r.stderr:
        return None
    return int(r.stderr.split(marker)[1].split()[0])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--remat", default=os.path.join(ROOT, "build/tools/remat/remat"))
    parser.add_argument("--solvers", default="auto,heuristic,per-block,sqrt")
    parser.add_argument("--layers", default="12,24,48")
    parser.add_argument("--json")
    args = parser.parse_args()
    import tempfile
    rows = []
    configs = []
    for layers in args.layers.split(","):
        configs.append(("mlp_deep", [os.path.join(ROOT, "models/mlp_deep.json"),
                                     "--set", f"n_layer={layers}"]))
        configs.append(("gpt2", [os.path.join(ROOT, "models/gpt2.json"),
                                 "--set", f"n_layer={layers}"]))
    with tempfile.TemporaryDirectory() as work:
        for name, model_args in configs:
            layers = model_args[-1].split("=")[1]
            rep = store_all(args.remat, model_args, work)
            b = rep["breakdown"]
            acts = b["activations"] + b["grads"]
            persistent = rep["planned_peak_bytes"] - acts
            arena = rep["arena_bytes"]
            mini = minimum(args.remat, model_args)
            budgets = [("75%", persistent + acts * 3 // 4),
                       ("50%", persistent + acts // 2)]
            if mini:
                budgets.append(("min", mini))
            for label, budget in budgets:
                for solver in args.solvers.split(","):
                    out, err, wall = plan(args.remat, model_args + [
                        "--budget", str(budget), "--solver", solver])
                    row = {"model": name, "layers": int(layers),
                           "store_all_arena": arena, "budget_label": label,
                           "budget": budget, "solver": solver,
                           "wall_seconds": wall}
                    if out:
                        row.update(overhead=out["recompute_overhead"],
                                   solve_seconds=out["solve_seconds"],
                                   arena=out["arena_bytes"],
                                   chosen=out["solver"])
                    else:
                        row.update(error=err)
                    rows.append(row)
                    print(f"{name} L{layers} {label} {solver}: "
                          f"{'%.2f%%' % (100 * row['overhead']) if out else 'infeasible'}",
                          file=sys.stderr)
    print("| model | layers | store-all arena | budget | solver | overhead | "
          "arena / budget | solve s |")
    print("|---|---:|---:|---|---|---:|---:|---:|")
    for r in rows:
        gib = r["store_all_arena"] / 2**30
        budget = f"{r['budget_label']} ({r['budget'] / 2**30:.2f} GiB)"
        if "error" in r:
            print(f"| {r['model']} | {r['layers']} | {gib:.2f} GiB | {budget} | "
                  f"{r['solver']} | infeasible | - | - |")
            continue
        print(f"| {r['model']} | {r['layers']} | {gib:.2f} GiB | {budget} | "
              f"{r['chosen']} | {100 * r['overhead']:.2f}% | "
              f"{r['arena'] / r['budget']:.3f} | {r['solve_seconds']:.3f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

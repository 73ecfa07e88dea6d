#!/usr/bin/env python3
"""The summary table of docs/planner-bench-checkmate.md, from the JSON rows
of three `remat-planner-bench` runs, and its checks.

  checkmate_summary.py FULL.json AUTO1.json REORDER1.json [--remat REMAT]

FULL: `remat-planner-bench --time-limit 20 --quiet --json FULL.json` (every
solver); AUTO1: `--solvers auto --time-limit 1`; REORDER1: the same with
`--reorder`. Prints the summary table, then per graph and budget where a
solver proved its cost optimal (proven gap <= 0.01%), auto's cost at 20 s
and at 1 s against that optimum. With --remat, also runs `remat plan --graph
G --budget-frac min` per graph and checks that it plans at the minimum
feasible budget it reports (peak within it). Exit 1 when a check fails:
auto more than 1% above a proven optimum, or no plan at the minimum.
"""
import argparse
import json
import os
import subprocess
import sys

OPTIMAL_GAP = 1e-4


def load(path):
    with open(path) as f:
        return json.load(f)


def key(row):
    return (row["graph"], row["fraction"])


def short(graph):
    return graph.split("_bs")[0].replace("fcn_8_vgg", "fcn8") \
        .replace("vgg_unet", "unet")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("full")
    p.add_argument("auto1")
    p.add_argument("reorder1")
    p.add_argument("--remat")
    p.add_argument("--graphs", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "models",
        "checkmate-graphs"))
    a = p.parse_args()
    full, auto1, reorder1 = load(a.full), load(a.auto1), load(a.reorder1)
    by = {}
    for row in full:
        solver = row["solver"]
        if solver.startswith("auto"):
            solver = "auto"
        by.setdefault(key(row), {})[solver] = row
    one = {key(r): r for r in auto1}
    reo = {key(r): r for r in reorder1}

    def pct(row):
        return "-" if row is None or not row["ok"] else \
            f"{100 * row['overhead']:.2f}"

    print("| graph | budget | auto 20 s % (via) | exact % (gap) | "
          "heuristic % | dp % | per-block % | sqrt % | auto 20 s s | "
          "auto 1 s % (s) | auto+reorder 1 s % (s, order) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    failures = []
    checks = []
    for k, rows in by.items():
        graph, fraction = k
        label = fraction if fraction != "min" else \
            f"min ({rows['auto']['minimumBytes'] / rows['auto']['storeAllPeakBytes']:.2f})"
        auto = rows.get("auto")
        via = auto["solver"][len("auto("):-1] if auto and auto["ok"] else ""
        exact = rows.get("exact")
        egap = exact and exact["ok"] and exact["provenGap"] is not None
        cells = [
            f"{pct(auto)} ({via})" if auto and auto["ok"] else "-",
            f"{pct(exact)} ({100 * exact['provenGap']:.2f}%)" if egap
            else pct(exact),
            pct(rows.get("heuristic")), pct(rows.get("dp")),
            pct(rows.get("per-block")), pct(rows.get("sqrt")),
            f"{auto['solveSeconds']:.2f}" if auto else "-",
        ]
        o = one.get(k)
        cells.append(f"{pct(o)} ({o['solveSeconds']:.2f})"
                     if o and o["ok"] else "-")
        r = reo.get(k)
        cells.append(f"{pct(r)} ({r['solveSeconds']:.2f}, {r['order']})"
                     if r and r["ok"] else "-")
        print(f"| {short(graph)} | {label} | " + " | ".join(cells) + " |")
        # The proven optimum, if any solver proved one.
        optimum = None
        for row in list(rows.values()) + [o] if o else rows.values():
            if row and row["ok"] and row["provenGap"] is not None and \
                    row["provenGap"] <= OPTIMAL_GAP:
                optimum = row["cost"] if optimum is None \
                    else min(optimum, row["cost"])
        if optimum is not None:
            for name, row in (("auto 20 s", auto), ("auto 1 s", o)):
                if row is None:
                    continue
                excess = (row["cost"] / optimum - 1) if row["ok"] else None
                ok = excess is not None and excess <= 0.01
                checks.append(f"{short(graph)} {fraction} {name}: " + (
                    f"cost {row['cost']:.6g} vs optimum {optimum:.6g} "
                    f"(+{100 * excess:.2f}%)" if excess is not None
                    else "no schedule") + ("" if ok else "  FAIL"))
                if not ok:
                    failures.append(checks[-1])
    print()
    print("Proven optima (gap <= 0.01%) and auto against them:")
    print()
    for line in checks:
        print(f"- {line}")
    if a.remat:
        print()
        print("| graph | nodes | lower bound | min_feasible (solver, gap) "
              "| plans there | search s |")
        print("|---|---:|---:|---|---|---:|")
        for name in sorted(os.listdir(a.graphs)):
            if not name.endswith(".json"):
                continue
            path = os.path.join(a.graphs, name)
            res = subprocess.run([a.remat, "plan", "--graph", path,
                                  "--budget-frac", "min"],
                                 capture_output=True, text=True)
            if res.returncode not in (0, 1):
                failures.append(f"{name}: exit {res.returncode}")
                continue
            rep = json.loads(res.stdout)
            m = rep["min_feasible_bytes"]
            store = rep["store_all_peak_bytes"]
            planned = res.returncode == 0 and rep["planned_peak_bytes"] <= m
            if not planned:
                failures.append(f"{name}: no plan at its minimum {m}")
            print(f"| {short(name[:-5])} | {rep['nodes']} | "
                  f"{rep['lower_bound_bytes'] / store:.3f} | "
                  f"{m / store:.3f} ({rep['min_feasible_solver']}, "
                  f"{rep['min_feasible_gap']}) | "
                  f"{'yes' if planned else 'NO'} | "
                  f"{rep['min_search_seconds']:.1f} |", flush=True)
    for f in failures:
        print(f"FAIL: {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""`remat plan --graph G --budget-frac min` plans at the minimum it reports
(issue 37, point 14): on random layered graphs (tests/tools/gen_layered_graph.py)
of the given sizes and seeds, every run exits 0 with a plan whose budget
is the reported `min_feasible_bytes` and whose peak is within it.

Usage: min_feasible_graphs.py REMAT [--sizes 20,28,...] [--seeds 1-5]
                               [--time-limit S]
(--time-limit: remat plan's, the exact MILP's limit per run; default its
own, 10 s in the minimum search.)
Prints a row per graph; exit 0 when all plan, 1 otherwise.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
GENERATOR = os.path.join(ROOT, "tests", "tools", "gen_layered_graph.py")


def seeds(text):
    if "-" in text:
        first, last = text.split("-")
        return list(range(int(first), int(last) + 1))
    return [int(s) for s in text.split(",")]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("remat")
    parser.add_argument("--sizes", default="20,28,74,216,738,3286,5000")
    parser.add_argument("--seeds", type=seeds, default=seeds("1-5"))
    parser.add_argument("--time-limit", type=float)
    args = parser.parse_args()
    failures = []
    print("| nodes | seed | min_feasible_bytes | planned peak | solver | "
          "search s | total s |")
    print("|---:|---:|---:|---:|---|---:|---:|")
    with tempfile.TemporaryDirectory() as work:
        for size in [int(s) for s in args.sizes.split(",")]:
            for seed in args.seeds:
                graph = os.path.join(work, f"g{size}-{seed}.json")
                subprocess.run([sys.executable, GENERATOR, "--nodes",
                                str(size), "--seed", str(seed), "-o", graph],
                               check=True, capture_output=True)
                start = time.time()
                cmd = [args.remat, "plan", "--graph", graph,
                       "--budget-frac", "min"]
                if args.time_limit is not None:
                    cmd += ["--time-limit", str(args.time_limit)]
                r = subprocess.run(cmd, capture_output=True, text=True)
                seconds = time.time() - start
                try:
                    report = json.loads(r.stdout)
                except json.JSONDecodeError:
                    report = {}
                minimum = report.get("min_feasible_bytes")
                peak = report.get("planned_peak_bytes")
                ok = (r.returncode == 0 and minimum is not None and
                      report.get("budget_bytes") == minimum and
                      peak is not None and peak <= minimum)
                print(f"| {report.get('nodes', size)} | {seed} | {minimum} | "
                      f"{peak} | {report.get('solver')} | "
                      f"{report.get('min_search_seconds', 0):.1f} | "
                      f"{seconds:.1f} |", flush=True)
                if not ok:
                    failures.append(f"{size} nodes, seed {seed}: exit "
                                    f"{r.returncode}, minimum {minimum}, "
                                    f"peak {peak}: {report.get('error', r.stderr.strip())}")
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

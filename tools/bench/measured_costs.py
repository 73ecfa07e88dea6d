#!/usr/bin/env python3
"""Measured costs against the roofline (issue 13): the GPT-2 of
budget_memory.py (4 layers, d_model 256, seq 256, vocab 4096, batch 8) on
the CPU at half and a quarter of its store-all activation memory (a budget
below the minimum feasible one is reported as such) and at the minimum
feasible budget, planned with the default roofline profile and with a
measured one (`remat profile`).
For each plan: the modeled recompute overhead, the measured step-time
overhead against store-all (median step of each run, median of `--runs`
runs; the runs go in rounds over every plan, so that a change of load
hits all alike), their relative difference, and the step time.

usage: measured_costs.py [--remat build/tools/remat/remat] [--runs 3]
                         [--steps 4]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(ROOT, "models/gpt2.json")
CONFIG = ["--set", "n_layer=4", "--set", "d_model=256", "--set", "n_head=4",
          "--set", "seq=256", "--set", "vocab=4096", "--set", "batch=8"]


def compile_plan(remat, extra, work, tag):
    """The plan and its report, or (None, error text) when no schedule fits."""
    plan = os.path.join(work, tag + ".plan")
    report = os.path.join(work, tag + ".json")
    r = subprocess.run([remat, "compile", MODEL] + CONFIG + extra +
                       ["--emit=plan", "-o", plan, "--report", report],
                       capture_output=True, text=True)
    if r.returncode != 0:
        if "no schedule fits" in r.stderr:
            return None, r.stderr.strip().splitlines()[-1]
        raise SystemExit(f"remat compile failed:\n{r.stderr}")
    with open(report) as f:
        return plan, json.load(f)


def step_seconds(remat, plan, steps, runs, work):
    """Median over runs of each run's median step time (the first step of a
    run, which pages the arena in, is left out)."""
    medians = []
    for r in range(runs):
        log = os.path.join(work, "run.jsonl")
        subprocess.run([remat, "run", plan, "--steps", str(steps), "--log", log],
                       check=True, capture_output=True)
        with open(log) as f:
            ms = [json.loads(line)["ms"] for line in f][1:]
        medians.append(statistics.median(ms) / 1000)
    return statistics.median(medians)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--remat", default=os.path.join(ROOT, "build/tools/remat/remat"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=4,
                        help="steps per run (the first left out)")
    parser.add_argument("--profile-steps", type=int, default=5,
                        help="timed steps of remat profile")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        profile = os.path.join(work, "measured.json")
        subprocess.run([args.remat, "profile", MODEL] + CONFIG +
                       ["--steps", str(args.profile_steps), "-o", profile],
                       check=True, capture_output=True)
        full_plan, full = compile_plan(args.remat, [], work, "full")
        b = full["breakdown"]
        acts = b["activations"] + b["grads"]
        fixed = full["planned_peak_bytes"] - acts
        # The minimum feasible budget (the same for both profiles: it is
        # a matter of memory, not cost).
        _, probe = compile_plan(args.remat, ["--budget", str(full[
            "planned_peak_bytes"]), "--min-feasible"], work, "probe")
        minimum = probe["min_feasible_bytes"]
        # Every plan first, then the runs in rounds (store-all, then each
        # plan, once per round), so that a change of the machine's load
        # during the bench hits every plan alike.
        rows = []  # (label, budget, profile name, plan or None, report)
        for fraction in (0.5, 0.25, None):
            budget = (fixed + int(acts * fraction) if fraction is not None
                      else minimum)
            label = ("%.2f" % fraction if fraction is not None else
                     "min (%.2f)" % ((minimum - fixed) / acts))
            for name, extra in (("roofline (cpu)", []),
                                ("measured", ["--device-profile", profile])):
                tag = "p%d" % len(rows)
                plan, rep = compile_plan(args.remat,
                                         ["--budget", str(budget)] + extra,
                                         work, tag)
                rows.append((label, budget, name, plan, rep))
        runs = {None: []}
        runs.update({k: [] for k, row in enumerate(rows) if row[3]})
        for _ in range(args.runs):
            for k in runs:
                plan = full_plan if k is None else rows[k][3]
                runs[k].append(step_seconds(args.remat, plan, args.steps, 1,
                                            work))
        base = statistics.median(runs[None])
        print("store-all: step %.1f ms (median of %d runs), activations %d B"
              % (1000 * base, args.runs, acts))
        print()
        print("| activations | budget | profile | modeled overhead | "
              "measured overhead | relative difference | step ms |")
        print("|---:|---:|---|---:|---:|---:|---:|")
        for k, (label, budget, name, plan, rep) in enumerate(rows):
            if plan is None:
                print("| %s | %d | %s | infeasible: below the minimum "
                      "feasible budget %d | | | |" % (label, budget, name,
                                                      minimum))
                continue
            t = statistics.median(runs[k])
            modeled = rep["recompute_overhead"]
            measured = t / base - 1
            diff = (abs(modeled - measured) / measured
                    if measured > 0 else float("nan"))
            print("| %s | %d | %s | %.1f%% | %.1f%% | %.0f%% | %.1f |" % (
                label, budget, name, 100 * modeled, 100 * measured,
                100 * diff, 1000 * t))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Measured costs against the roofline (issue 13): the GPT-2 of
budget_memory.py (4 layers, d_model 256, seq 256, vocab 4096, batch 8) on
the CPU at half and a quarter of its store-all activation memory (a budget
below the minimum feasible one is reported as such) and at the minimum
feasible budget, planned with the default roofline profile, with a
measured one (`remat profile` of the store-all step), and with
`--device-profile measure` (which also times its candidate plans in situ
and keeps the fastest: docs/planner.md "Measured costs").
For each plan: the modeled recompute overhead, the measured step-time
overhead against store-all (median step of each run, median of `--runs`
runs; the runs go in rounds over every plan, so that a change of load
hits all alike), their relative difference, and the step time. Each run
is a `remat profile PLAN`, which also times every plan step: the last two
columns split the step, from the same runs, into the recomputations'
measured time (as a share of the store-all step) and the change of the
other ops' time against store-all (which a recomputation model does not
see: cache state, layout, load).

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


def timed_run(remat, plan, steps, work):
    """One `remat profile PLAN` run: its median step (the warm-up step, which
    pages the arena in, left out) and, from the same steps, the summed
    medians of the plan's recomputations and of its other ops."""
    out = os.path.join(work, "timed.json")
    subprocess.run([remat, "profile", plan, "--steps", str(steps), "-o", out],
                   check=True, capture_output=True)
    with open(out) as f:
        d = json.load(f)
    rec = sum(c["seconds"] for c in d["calls"] if c["recompute"])
    rest = sum(c["seconds"] for c in d["calls"] if not c["recompute"])
    return d["source"]["step_seconds"], rec, rest


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--remat", default=os.path.join(ROOT, "build/tools/remat/remat"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=4,
                        help="timed steps per run (after one warm-up step)")
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
                                ("measured", ["--device-profile", profile]),
                                ("measure", ["--device-profile", "measure"])):
                tag = "p%d" % len(rows)
                plan, rep = compile_plan(args.remat,
                                         ["--budget", str(budget)] + extra,
                                         work, tag)
                if plan and "chosen" in rep["device_profile"]:
                    # --device-profile measure timed its candidates.
                    dp = rep["device_profile"]
                    name = "measure: %s (%s)" % (dp["chosen"], ", ".join(
                        "%s %.0f ms" % (c["costs"],
                                        1000 * c["measured_step_seconds"])
                        for c in dp["candidates"]))
                rows.append((label, budget, name, plan, rep))
        runs = {None: []}
        runs.update({k: [] for k, row in enumerate(rows) if row[3]})
        for r in range(args.runs):
            for k in runs:
                plan = full_plan if k is None else rows[k][3]
                runs[k].append(timed_run(args.remat, plan, args.steps, work))
            print("round %d/%d done" % (r + 1, args.runs), file=sys.stderr)
        med = {k: [statistics.median(x[i] for x in v) for i in range(3)]
               for k, v in runs.items()}
        base = med[None][0]
        print("store-all: step %.1f ms (median of %d runs), activations %d B"
              % (1000 * base, args.runs, acts))
        print()
        print("| activations | budget | profile | modeled overhead | "
              "measured overhead | relative difference | step ms | "
              "recomputations in situ | other ops against store-all |")
        print("|---:|---:|---|---:|---:|---:|---:|---:|---:|")
        for k, (label, budget, name, plan, rep) in enumerate(rows):
            if plan is None:
                print("| %s | %d | %s | infeasible: below the minimum "
                      "feasible budget %d | | | |" % (label, budget, name,
                                                      minimum))
                continue
            t, rec, rest = med[k]
            modeled = rep["recompute_overhead"]
            measured = t / base - 1
            diff = (abs(modeled - measured) / measured
                    if measured > 0 else float("nan"))
            print("| %s | %d | %s | %.1f%% | %.1f%% | %.0f%% | %.1f | %.1f%% "
                  "| %+.1f%% |" % (
                      label, budget, name, 100 * modeled, 100 * measured,
                      100 * diff, 1000 * t, 100 * rec / base,
                      100 * (rest / med[None][2] - 1)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The budget as a contract, measured (issue 13): for each model, 8 budgets
from the minimum feasible (remat plan --sweep) to store-all; at each,
`remat train` on the CPU. Checks, per run:

  - the plan's arena + workspace (report step_bytes) is within the budget;
  - `remat run` says "(within)" for the backend it ran on;
  - the measured peak RSS growth (rss_growth_bytes, from just before the
    arena is allocated) is within the budget plus the stated runtime
    allowance (report runtime_allowance_bytes, docs/cli.md "What the
    budget covers").

Prints a markdown table (docs/benchmarks.md); exits 1 when a check fails.

usage: budget_contract.py [--remat build/tools/remat/remat] [--steps 3]
                          [--tiny] [--points 8] [--models gpt2,seed_mlp,...]
  --tiny  the models' tiny presets (the ctest e2e-budget-contract)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The models of models/ and the configuration each is measured in: the
# default (benchmark) and the tiny preset (ctest). GPT-2's default is the
# 124M model (8 GB of arena), too large to run 8 times here: its `small`
# preset stands in.
MODELS = {
    "gpt2": (["--preset", "small"], ["--preset", "tiny"]),
    "seed_mlp": ([], ["--preset", "tiny"]),
    "mlp_deep": ([], ["--preset", "tiny"]),
    "classifier": ([], ["--preset", "tiny"]),
}


def sweep_budgets(remat, model, config, points, work):
    out = os.path.join(work, model + "-sweep.json")
    subprocess.run([remat, "plan", os.path.join(ROOT, "models", model + ".json")]
                   + config + ["--sweep", "--points", str(points),
                               "--json", out],
                   check=True, capture_output=True, text=True)
    with open(out) as f:
        sweep = json.load(f)
    return [row["budget_bytes"] for row in sweep["sweep"]]


def train(remat, model, config, budget, steps, work, tag):
    plan = os.path.join(work, tag + ".plan")
    report = os.path.join(work, tag + ".json")
    log = os.path.join(work, tag + ".jsonl")
    r = subprocess.run([remat, "train", os.path.join(ROOT, "models", model + ".json")]
                       + config + ["--budget", str(budget), "--steps", str(steps),
                                   "--plan", plan, "--report", report,
                                   "--log", log],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None, None, r.stderr
    with open(report) as f:
        rep = json.load(f)
    with open(log) as f:
        entries = [json.loads(line) for line in f]
    return rep, entries, r.stderr


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--remat", default=os.path.join(ROOT, "build/tools/remat/remat"))
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--points", type=int, default=8)
    parser.add_argument("--tiny", action="store_true")
    parser.add_argument("--models", default=",".join(MODELS))
    args = parser.parse_args()
    failures = []
    print("| model | budget | arena | workspace | arena + workspace | "
          "RSS growth | allowance | growth - (arena + workspace) | "
          "within budget + allowance | overhead |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    with tempfile.TemporaryDirectory() as work:
        for model in args.models.split(","):
            config = MODELS[model][1 if args.tiny else 0]
            name = model + ("" if not config else " " + config[-1])
            for i, budget in enumerate(sweep_budgets(args.remat, model, config,
                                                     args.points, work)):
                tag = "%s-%d" % (model, i)
                rep, log, stderr = train(args.remat, model, config, budget,
                                         args.steps, work, tag)
                if rep is None:
                    failures.append("%s at %d: remat train failed: %s"
                                    % (name, budget, stderr.strip()))
                    print("| %s | %d | failed | | | | | | NO | |" % (name, budget))
                    continue
                growth = max(e["rss_growth_bytes"] for e in log)
                allowance = rep["runtime_allowance_bytes"]
                step = rep["step_bytes"]
                ok = (step <= budget and "(within)" in stderr
                      and growth <= budget + allowance)
                if step != rep["arena_bytes"] + rep["workspace_bytes"]:
                    ok = False
                if not ok:
                    failures.append(
                        "%s at %d: arena + workspace %d, RSS growth %d, "
                        "allowance %d, run said: %s" % (
                            name, budget, step, growth, allowance,
                            [l for l in stderr.splitlines() if "budget" in l]))
                print("| %s | %d | %d | %d | %d | %d | %d | %d | %s | %.1f%% |" % (
                    name, budget, rep["arena_bytes"], rep["workspace_bytes"],
                    step, growth, allowance, growth - step,
                    "yes" if ok else "NO", 100 * rep["recompute_overhead"]))
                sys.stdout.flush()
    for f in failures:
        print("FAIL: " + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

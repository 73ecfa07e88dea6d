#!/usr/bin/env python3
"""The planner on torchvision's models (issue #12, acceptance 4).

For each of resnet18, resnet50, mobilenet_v2, vgg16 and squeezenet1_0
(exported by tools/export_onnx.py: random weights, training mode, 3 x side x
side images, `classes` outputs), prints

  - `remat plan MODEL.onnx --sweep`: budget -> recompute overhead, from the
    minimum feasible budget to store-all, the knee marked;
  - at half the store-all activation memory (persistent bytes, i.e.
    parameters, gradients' persistent part, inputs and running statistics,
    always included: budget = persistent + activations / 2, as
    model_planner_bench.py), `remat plan --budget B --solver S` for `auto`
    and the `per-block` baseline (keep each block's output, recompute its
    interior in the backward; blocks from the ONNX node scopes, e.g.
    /layer1/layer1.0/...): modeled recompute overhead, arena and solve time;
  - per-block ignores the budget, so also its own schedule (arena,
    overhead) and `auto` at per-block's arena (plus the workspace).

usage: torchvision_plan_bench.py [--remat build/tools/remat/remat]
           [--models resnet18,...] [--side 224] [--batch 32] [--points 6]
Needs PyTorch and torchvision (python3-torchvision). Planning only: nothing
is executed, so vgg16 at batch 32 needs no memory beyond its weights.
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
sys.path.insert(0, os.path.join(ROOT, "tools"))

MODELS = ["resnet18", "resnet50", "mobilenet_v2", "vgg16", "squeezenet1_0"]


def run(cmd):
    start = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r, time.time() - start


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--remat",
                   default=os.path.join(ROOT, "build/tools/remat/remat"))
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--side", type=int, default=224)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--classes", type=int, default=1000)
    p.add_argument("--points", type=int, default=6)
    args = p.parse_args()
    import export_onnx

    summary = []
    with tempfile.TemporaryDirectory(prefix="remat-tv-bench-") as work:
        for name in args.models.split(","):
            onnx = os.path.join(work, name + ".onnx")
            export_onnx.export(name, onnx, args.batch, 16, args.classes,
                               args.side)
            report = os.path.join(work, "report.json")
            r, _ = run([args.remat, "compile", onnx, "--emit=plan", "-o",
                        os.path.join(work, "p.plan"), "--report", report])
            if r.returncode != 0:
                raise SystemExit(f"{name}: remat compile failed:\n{r.stderr}")
            with open(report) as f:
                rep = json.load(f)
            b = rep["breakdown"]
            acts = b["activations"] + b["grads"]
            persistent = rep["planned_peak_bytes"] - acts
            budget = persistent + acts // 2
            r, sweep_s = run([args.remat, "plan", onnx, "--sweep",
                              "--points", str(args.points)])
            if r.returncode != 0:
                raise SystemExit(f"{name}: remat plan --sweep failed:\n"
                                 f"{r.stderr}")
            print(f"### {name} ({args.batch} x 3 x {args.side} x "
                  f"{args.side})\n")
            print(f"`remat plan {name}.onnx --sweep --points {args.points}` "
                  f"({sweep_s:.1f} s):\n")
            print(r.stdout.strip() + "\n", flush=True)
            row = {"model": name, "store_all": rep["arena_bytes"],
                   "persistent": persistent, "activations": acts,
                   "budget": budget}
            for solver in ("auto", "per-block"):
                r, wall = run([args.remat, "plan", onnx, "--budget",
                               str(budget), "--solver", solver])
                if r.returncode != 0:
                    last = (r.stderr.strip().splitlines() or ["failed"])[-1]
                    row[solver] = {"error": last}
                    continue
                out = json.loads(r.stdout)
                row[solver] = {"overhead": out["recompute_overhead"],
                               "arena": out["arena_bytes"],
                               "chosen": out["solver"],
                               "solve_s": out["solve_seconds"]}
            # per-block ignores the budget: its own schedule (at the
            # store-all budget), and auto at per-block's arena.
            # A roomy budget gets store-all, so ask for per-block's own peak
            # (the infeasible-budget error names it), widened until it fits.
            err = row["per-block"].get("error", "")
            marker = "per-block's schedule peaks at "
            r = None
            floor = "minimum feasible budget: "
            if marker in err:
                peak = int(err.split(marker)[1].split()[0])
                for slack in (1.0, 1.02, 1.05, 1.1):
                    r, _ = run([args.remat, "plan", onnx, "--budget",
                                str(int(peak * slack) +
                                    rep["workspace_bytes"]),
                                "--solver", "per-block"])
                    if r.returncode == 0:
                        break
            elif floor in err:
                # The half budget is below every schedule's minimum: try
                # per-block from that minimum up towards store-all.
                least = int(err.split(floor)[1].split()[0])
                row["min_feasible"] = least
                for slack in (1.0, 1.1, 1.2, 1.35, 1.5, 1.75):
                    target = int(least * slack)
                    if target > rep["planned_peak_bytes"]:
                        break
                    r, _ = run([args.remat, "plan", onnx, "--budget",
                                str(target), "--solver", "per-block"])
                    if r.returncode == 0:
                        break
            if r is not None and r.returncode == 0:
                out = json.loads(r.stdout)
                own = {"overhead": out["recompute_overhead"],
                       "arena": out["arena_bytes"]}
                row["per-block own"] = own
                r, _ = run([args.remat, "plan", onnx, "--budget",
                            str(own["arena"] + rep["workspace_bytes"]),
                            "--solver", "auto"])
                if r.returncode == 0:
                    out = json.loads(r.stdout)
                    row["auto at per-block"] = {
                        "overhead": out["recompute_overhead"],
                        "arena": out["arena_bytes"], "chosen": out["solver"]}
            summary.append(row)
            print(json.dumps(row), file=sys.stderr)

    print(f"### Half the activation memory: auto against per-block\n")
    print("budget = persistent + activations / 2 (store-all's); overhead = "
          "modeled recompute time over the step's compute time.\n")
    print("| model | store-all arena | persistent | activations | budget | "
          "auto | auto arena | per-block | per-block arena |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    mib = 2 ** 20
    for row in summary:
        cells = []
        for solver in ("auto", "per-block"):
            s = row[solver]
            if "error" in s and "min_feasible" in row:
                cells += [f"below the minimum feasible budget "
                          f"({row['min_feasible'] / mib:.0f} MiB)", "-"]
            elif "error" in s:
                cells += ["does not fit", "-"]
            else:
                chosen = f" ({s['chosen']})" if solver == "auto" else ""
                cells += [f"{100 * s['overhead']:.2f}%{chosen}",
                          f"{s['arena'] / mib:.0f} MiB"]
        print(f"| {row['model']} | {row['store_all'] / mib:.0f} MiB | "
              f"{row['persistent'] / mib:.0f} MiB | "
              f"{row['activations'] / mib:.0f} MiB | "
              f"{row['budget'] / mib:.0f} MiB | " + " | ".join(cells) + " |")
    print("\n### per-block's own schedule, and auto at its arena\n")
    print("| model | per-block arena | per-block overhead | auto at that "
          "budget | auto arena |")
    print("|---|---:|---:|---:|---:|")
    for row in summary:
        own = row.get("per-block own")
        at = row.get("auto at per-block")
        if not own and "error" not in row["per-block"]:
            print(f"| {row['model']} | (fits the half budget, above) "
                  f"| - | - | - |")
            continue
        if not own and "min_feasible" in row:
            print(f"| {row['model']} | does not fit below store-all (tried "
                  f"from the minimum feasible budget up to 1.75x it or "
                  f"store-all) | - | - | - |")
            continue
        if not own:
            print(f"| {row['model']} | failed | - | - | - |")
            continue
        auto = (f"{100 * at['overhead']:.2f}% ({at['chosen']})",
                f"{at['arena'] / mib:.0f} MiB") if at else ("does not fit",
                                                            "-")
        print(f"| {row['model']} | {own['arena'] / mib:.0f} MiB | "
              f"{100 * own['overhead']:.2f}% | {auto[0]} | {auto[1]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Memory of --precision bf16 against float32 (issue #36, acceptance 3).

For GPT-2 at 124M width (models/gpt2.json, default sizes: 12 layers, d 768,
seq 1024, batch 8, dropout 0) and torchvision's resnet50 at batch 32
(3 x 224 x 224, exported by tools/export_onnx.py): the store-all plans in
float32 and bf16, their activation and temporary bytes (the report's
activations + grads + workspace: everything but params, optimizer state and
inputs, which bf16 keeps float32) and the ratio; then both compiled at the
budget float32's persistent bytes plus half its activation and temporary
bytes, with the recomputation overhead each needs. With --run N, each
store-all plan also runs N steps (`remat run`) on a smaller batch
(--run-size small: GPT-2 seq 256, resnet50 batch 8; full: the sizes
above) for the measured RSS growth against arena + workspace and the step
time.

usage: bf16_memory.py [--build build] [--models gpt2,resnet50] [--run N]
           [--run-size small|full] [--work DIR]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE)))
import cpu_measure  # noqa: E402
from cpu_measure import ROOT  # noqa: E402


def act_temp(report):
    b = report["breakdown"]
    return b["activations"] + b["grads"] + b["workspace"]


def model_args(name, work, run):
    """(model path, extra compile args) of `name`, at the run size when
    `run`."""
    if name == "gpt2":
        sets = ["dropout=0"] + (["seq=256"] if run else [])
        args = [a for s in sets for a in ("--set", s)]
        return os.path.join(ROOT, "models", "gpt2.json"), args
    import export_onnx
    batch = 8 if run else 32
    path = os.path.join(work, f"resnet50-{batch}.onnx")
    if not os.path.exists(path):
        export_onnx.export("resnet50", path, batch=batch, classes=1000,
                           side=224)
    return path, []


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", default="gpt2,resnet50")
    ap.add_argument("--run", type=int, default=0)
    ap.add_argument("--run-size", choices=["small", "full"], default="small")
    ap.add_argument("--work")
    args = ap.parse_args()
    remat = os.path.join(args.build, "tools", "remat", "remat")
    work = args.work or tempfile.mkdtemp(prefix="remat-bf16-memory.")
    os.makedirs(work, exist_ok=True)
    print("| model | precision | activations + temporaries (store-all) | "
          "ratio | persistent | at fp32's half budget: overhead |")
    print("|---|---|---:|---:|---:|---:|")
    runs = []
    for name in args.models.split(","):
        model, extra = model_args(name, work, False)
        reports = {}
        for p in ("fp32", "bf16"):
            _, reports[p] = cpu_measure.compile_plan(
                remat, model, extra + ["--precision", p], work,
                f"{name}-{p}-all")
        f32 = reports["fp32"]
        budget = f32["planned_peak_bytes"] - act_temp(f32) + act_temp(f32) // 2
        for p in ("fp32", "bf16"):
            r = reports[p]
            try:
                _, half = cpu_measure.compile_plan(
                    remat, model, extra + ["--precision", p, "--budget",
                                           str(budget)], work,
                    f"{name}-{p}-half")
                overhead = f"{100 * half['recompute_overhead']:.2f}%"
            except SystemExit as e:
                overhead = "does not fit: " + str(e).splitlines()[-1][:80]
            persistent = r["planned_peak_bytes"] - act_temp(r)
            print(f"| {name} | {p} | {act_temp(r):,} B | "
                  f"{act_temp(r) / act_temp(f32):.3f} | {persistent:,} B | "
                  f"{overhead} (budget {budget:,} B) |")
        if args.run:
            model, extra = model_args(name, work, args.run_size == "small")
            for p in ("fp32", "bf16"):
                plan, r = cpu_measure.compile_plan(
                    remat, model, extra + ["--precision", p], work,
                    f"{name}-{p}-run")
                log = cpu_measure.run_plan(remat, plan, args.run, work,
                                           f"{name}-{p}-run")
                growth = max(e["rss_growth_bytes"] for e in log)
                planned = r["arena_bytes"] + r["workspace_bytes"]
                ms = statistics.median(e["ms"] for e in log[1:] or log)
                runs.append((name, p, planned, growth, ms))
    if runs:
        print(f"\n| model ({args.run_size} run size) | precision | "
              "arena + workspace | "
              "RSS growth | ratio | median step |")
        print("|---|---|---:|---:|---:|---:|")
        for name, p, planned, growth, ms in runs:
            print(f"| {name} | {p} | {planned:,} B | {growth:,} B | "
                  f"{growth / planned:.3f} | {ms:,.0f} ms |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""How much of the gradient all-reduce the backward pass hides (issue 14,
docs/distributed.md): a model on 2 MPI ranks, run once with the sums
overlapped (the default: each starts right after the gradient's last write
and is waited for before the optimizer reads it) and once with
`--sync-gradients` (each waited for at once). Per run, the median over the
timed steps of each rank's step time and of the time it waited for sums;
the sync run's wait is the all-reduce time itself, so

    hidden share = 1 - overlapped wait / sync wait.

Each rank runs single-threaded BLAS (OPENBLAS_NUM_THREADS=1), so 2 ranks
use the 2 cores of this machine.

usage: overlap.py [--remat build/tools/remat/remat] [--model gpt2]
                  [--preset small] [--steps 20] [--ranks 2]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def run(argv):
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {r.returncode}\n{r.stderr}")
    return r


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--remat", default=os.path.join(ROOT, "build/tools/remat/remat"))
    p.add_argument("--model", default="gpt2")
    p.add_argument("--preset", default="small")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--ranks", type=int, default=2)
    args = p.parse_args()
    model = os.path.join(ROOT, "models", args.model + ".json")
    with tempfile.TemporaryDirectory() as work:
        plan = os.path.join(work, "p.plan")
        report = os.path.join(work, "p.json")
        run([args.remat, "compile", model, "--preset", args.preset,
             "--ranks", str(args.ranks), "--emit=plan", "-o", plan,
             "--report", report])
        with open(report) as f:
            grads = json.load(f)["breakdown"].get("grads", 0)
        rows = {}
        for mode, extra in (("overlapped", []), ("sync", ["--sync-gradients"])):
            log = os.path.join(work, mode + ".jsonl")
            run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np",
                 str(args.ranks), "-x", "OPENBLAS_NUM_THREADS=1", args.remat,
                 "run", plan, "--steps", str(args.steps), "--log", log] +
                extra)
            with open(log) as f:
                lines = [json.loads(line) for line in f][1:]  # warm-up out
            step = statistics.median(
                statistics.mean(l["rank_ms"]) for l in lines)
            wait = statistics.median(
                statistics.mean(l["rank_comm_wait_ms"]) for l in lines)
            rows[mode] = (step, wait)
        print(f"{args.model} --preset {args.preset}, {args.ranks} ranks, "
              f"{args.steps} steps (first left out), medians")
        print()
        print("| mode | step ms | waited for sums ms | share of the "
              "all-reduce hidden |")
        print("|---|---:|---:|---:|")
        sync_wait = rows["sync"][1]
        for mode, (step, wait) in rows.items():
            hidden = 1 - wait / sync_wait if sync_wait > 0 else float("nan")
            print(f"| {mode} | {step:.1f} | {wait:.2f} | "
                  f"{'%.0f%%' % (100 * hidden) if mode == 'overlapped' else '0% (by definition)'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

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

Plans are compiled at each `--update-lag` of `--lags` (0: each update
right after its gradient, where its sum has nothing to hide behind).

usage: overlap.py [--remat build/tools/remat/remat] [--model gpt2]
                  [--preset small] [--steps 20] [--ranks 2] [--lags 0,4,8]
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
    p.add_argument("--lags", default="0,4,8",
                   help="--update-lag values to compile with (comma list)")
    args = p.parse_args()
    model = os.path.join(ROOT, "models", args.model + ".json")
    lags = [int(x) for x in args.lags.split(",")]
    with tempfile.TemporaryDirectory() as work:
        plans = {}
        for lag in lags:
            plan = os.path.join(work, "p%d.plan" % lag)
            report = os.path.join(work, "p%d.json" % lag)
            run([args.remat, "compile", model, "--preset", args.preset,
                 "--ranks", str(args.ranks), "--update-lag", str(lag),
                 "--emit=plan", "-o", plan, "--report", report])
            with open(report) as f:
                plans[lag] = (plan, json.load(f))

        def measure(plan, extra):
            log = os.path.join(work, "run.jsonl")
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
            return step, wait

        # The sync run's wait is the all-reduce itself (the same sums in
        # every plan); one per lag, and the overlapped runs between them.
        rows = []
        sync_waits = []
        for lag in lags:
            plan, rep = plans[lag]
            sync = measure(plan, ["--sync-gradients"])
            sync_waits.append(sync[1])
            rows.append((lag, rep, measure(plan, []), sync))
        sync_wait = statistics.median(sync_waits)
        print(f"{args.model} --preset {args.preset}, {args.ranks} ranks, "
              f"{args.steps} steps (first left out), medians; all-reduce "
              f"time (sync wait, median over the plans) {sync_wait:.2f} ms")
        print()
        print("| --update-lag | lag kept | arena bytes | step ms | sync step "
              "ms | waited for sums ms | share of the all-reduce hidden |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        for lag, rep, (step, wait), (sstep, _) in rows:
            hidden = 1 - wait / sync_wait if sync_wait > 0 else float("nan")
            print(f"| {lag} | {rep.get('update_lag', 0)} | "
                  f"{rep['arena_bytes']:,} | {step:.1f} | {sstep:.1f} | "
                  f"{wait:.2f} | {100 * hidden:.0f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

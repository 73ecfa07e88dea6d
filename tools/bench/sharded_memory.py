#!/usr/bin/env python3
"""Per-rank memory of data-parallel runs with sharded optimizer state
(`--shard-optimizer`, ZeRO-1; issue #14, docs/distributed.md). Two tables
for docs/benchmarks.md:

  runs   a model trained on 1 rank with global batch B, on 2 ranks
         unsharded and on 2 ranks sharded (mpirun -np 2), each under a
         per-rank budget of --budget-frac times its own store-all step:
         per rank the planned optimizer bytes (sharded: half), planned
         peak, arena, and each rank's measured RSS growth (the log's
         rank_rss_growth_bytes, rss_growth_bytes on one rank), checked to
         be within the budget plus the runtime allowance (the report's
         runtime_allowance_bytes), as tests/e2e/budget_contract.py does.
  batch  `remat plan MODEL --ranks N [--shard-optimizer] --max-batch
         --budget B` for N in --ranks-list: the largest global batch and
         the per-rank breakdown at the plan of that batch (params, grads,
         optimizer, activations: bytes live at the planned peak). Without
         --shard-optimizer this is the memory model of PyTorch DDP (every
         rank holds everything).

Exits 1 when a run fails or a check fails.

usage: sharded_memory.py [--remat build/tools/remat/remat] [--table runs|batch|both]
         [--run-config "--preset small"] [--steps 5] [--budget-frac 0.8]
         [--batch-config "--preset l48 --set d_model=1600 --set n_head=25"]
         [--budget 80GiB] [--ranks-list 1,2,4,8]
"""
import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
GPT2 = os.path.join(ROOT, "models", "gpt2.json")
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np"]


def mib(n):
    return "%.2f MiB" % (n / 2**20)


def gib(n):
    return "%.2f GiB" % (n / 2**30)


def must(argv, what):
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("FAIL: %s: exit %d\n%s" % (what, r.returncode,
                                                     r.stderr))
    return r


def compile_plan(remat, config, ranks, shard, budget, work, tag):
    plan = os.path.join(work, tag + ".plan")
    report = os.path.join(work, tag + ".json")
    argv = ([remat, "compile", GPT2] + config +
            ["--ranks", str(ranks), "--emit=plan", "-o", plan,
             "--report", report])
    if shard:
        argv.append("--shard-optimizer")
    if budget:
        argv += ["--budget", str(budget)]
    must(argv, "compile " + tag)
    with open(report) as f:
        return plan, json.load(f)


def runs_table(args, work):
    config = shlex.split(args.run_config)
    failures = []
    print("Model: gpt2 %s (AdamW), global batch from its config; each plan "
          "under %.2f x its own store-all step per rank; %d steps.\n"
          % (args.run_config, args.budget_frac, args.steps))
    print("| ranks | optimizer state | optimizer / rank (planned) | "
          "planned peak / rank | arena / rank | budget / rank | "
          "allowance | RSS growth per rank (measured) | within budget + "
          "allowance | recompute overhead |")
    print("|---:|---|---:|---:|---:|---:|---:|---|---|---:|")
    figures = {}
    for ranks, shard in ((1, False), (2, False), (2, True)):
        tag = "r%d%s" % (ranks, "s" if shard else "")
        _, full = compile_plan(args.remat, config, ranks, shard, None, work,
                               tag + "-storeall")
        budget = int(args.budget_frac * full["step_bytes"])
        plan, rep = compile_plan(args.remat, config, ranks, shard, budget,
                                 work, tag)
        log = os.path.join(work, tag + ".jsonl")
        launch = MPIRUN + [str(ranks)] if ranks > 1 else []
        must(launch + [args.remat, "run", plan, "--steps", str(args.steps),
                       "--log", log], "run " + tag)
        with open(log) as f:
            entries = [json.loads(line) for line in f]
        if ranks > 1:
            growth = [max(e["rank_rss_growth_bytes"][r] for e in entries)
                      for r in range(ranks)]
        else:
            growth = [max(e["rss_growth_bytes"] for e in entries)]
        allowance = rep["runtime_allowance_bytes"]
        ok = (rep["step_bytes"] <= budget and
              all(g <= budget + allowance for g in growth))
        if not ok:
            failures.append("%s: step %d, budget %d, allowance %d, RSS "
                            "growth %s" % (tag, rep["step_bytes"], budget,
                                           allowance, growth))
        optimizer = rep["breakdown"]["optimizer"]
        figures[(ranks, shard)] = optimizer
        print("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %.1f%% |" % (
            ranks, "sharded 1/%d" % ranks if shard else "whole",
            mib(optimizer), mib(rep["planned_peak_bytes"]),
            mib(rep["arena_bytes"]), mib(budget), mib(allowance),
            ", ".join("rank %d: %s" % (r, mib(g))
                      for r, g in enumerate(growth)),
            "yes" if ok else "NO", 100 * rep["recompute_overhead"]))
        sys.stdout.flush()
    one, half = figures[(1, False)], figures[(2, True)]
    print("\nsharded optimizer bytes per rank / one rank's: %.4f" %
          (half / one))
    if not one / 2 <= half <= one / 2 + 4096:
        failures.append("sharded optimizer bytes %d are not half of %d"
                        % (half, one))
    return failures


def batch_table(args, work):
    config = shlex.split(args.batch_config)
    print("\nModel: gpt2 %s; budget %s per rank; `remat plan --max-batch` "
          "(search over the per-rank batch, the global batch N times it), "
          "then the per-rank breakdown at that batch (bytes live at the "
          "planned peak).\n" % (args.batch_config, args.budget))
    print("| ranks | optimizer state | largest global batch | per rank | "
          "params | grads | optimizer | activations | planned peak | "
          "recompute overhead |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for ranks in [int(n) for n in args.ranks_list.split(",")]:
        for shard in (False, True):
            if shard and ranks == 1:
                continue  # the same plan as unsharded
            flags = ["--ranks", str(ranks)] + (["--shard-optimizer"]
                                               if shard else [])
            out = os.path.join(work, "max-%d-%d.json" % (ranks, shard))
            must([args.remat, "plan", GPT2] + config + flags +
                 ["--max-batch", "--budget", args.budget, "--json", out],
                 "plan --max-batch --ranks %d" % ranks)
            with open(out) as f:
                found = json.load(f)
            global_batch = found["max_batch"]
            rep_path = os.path.join(work, "rep-%d-%d.json" % (ranks, shard))
            must([args.remat, "plan", GPT2] + config + flags +
                 ["--set", "batch=%d" % global_batch, "--budget",
                  args.budget, "--json", rep_path],
                 "plan --ranks %d at batch %d" % (ranks, global_batch))
            with open(rep_path) as f:
                rep = json.load(f)
            b = rep["breakdown"]
            print("| %d | %s | %d | %d | %s | %s | %s | %s | %s | %.1f%% |"
                  % (ranks, "sharded 1/%d" % ranks if shard else
                     "whole (DDP)", global_batch, global_batch // ranks,
                     gib(b["params"]), gib(b["grads"]), gib(b["optimizer"]),
                     gib(b["activations"]), gib(rep["planned_peak_bytes"]),
                     100 * rep["recompute_overhead"]))
            sys.stdout.flush()
    return []


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--remat", default=os.path.join(
        ROOT, "build/tools/remat/remat"))
    parser.add_argument("--table", default="both",
                        choices=["runs", "batch", "both"])
    parser.add_argument("--run-config", default="--preset small")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--budget-frac", type=float, default=0.8)
    parser.add_argument("--batch-config", default="--preset l48 --set "
                        "d_model=1600 --set n_head=25")
    parser.add_argument("--budget", default="80GiB")
    parser.add_argument("--ranks-list", default="1,2,4,8")
    args = parser.parse_args()
    failures = []
    with tempfile.TemporaryDirectory(prefix="remat-zero-") as work:
        if args.table in ("runs", "both"):
            if not shutil.which("mpirun"):
                raise SystemExit("no mpirun (openmpi-bin)")
            failures += runs_table(args, work)
        if args.table in ("batch", "both"):
            failures += batch_table(args, work)
    for f in failures:
        print("FAIL: " + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The forum's model on the CPU: remat's planned and measured memory against
PyTorch eager, with and without torch.utils.checkpoint, in one run.

Model: three linear layers 1024->1024->1024->1 with bias, loss = sum of the
output, one SGD step. Each variant runs in a fresh process; its memory is the
peak RSS growth (VmHWM minus VmRSS before the step's tensors exist), reported
in activation buffers of batch x 1024 x 4 bytes.

With a budget of 1.5 buffers (--split-budget) the unsplit step cannot fit
(it needs about 3), and remat splits the batch into micro-batches by itself:
that variant reports its micro-batches, planned peak, arena plus workspace,
measured RSS growth and absolute peak RSS.

usage: forum_memory.py [--remat build/tools/remat/remat] [--batch 100000]
                       [--split-budget 1.5] [--json OUT.json]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_measure  # noqa: E402
from cpu_measure import ROOT, torch_version  # noqa: E402

TORCH_CHILD = cpu_measure.TORCH_RSS + r"""
import sys, time, torch
mode, batch = sys.argv[1], int(sys.argv[2])
torch.manual_seed(0)
torch.ones(64, 64) @ torch.ones(64, 64)  # load kernels, start threads
base = rss('VmRSS:')
model = torch.nn.Sequential(torch.nn.Linear(1024, 1024),
                            torch.nn.Linear(1024, 1024),
                            torch.nn.Linear(1024, 1))
opt = torch.optim.SGD(model.parameters(), lr=1e-6)
x = torch.randn(batch, 1024)
start = time.time()
if mode == 'checkpoint':
    from torch.utils.checkpoint import checkpoint
    out = checkpoint(model, x, use_reentrant=False)
else:
    out = model(x)
loss = out.sum()
loss.backward()
opt.step()
ms = (time.time() - start) * 1000
print(rss('VmHWM:') - base, ms)
"""


def torch_variant(mode, batch):
    result = subprocess.run(["/usr/bin/python3", "-c", TORCH_CHILD, mode,
                             str(batch)], capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"torch {mode} failed:\n{result.stderr}")
    growth, ms = result.stdout.split()
    return int(growth), float(ms)


def remat_variant(remat, batch, work, args=(), tag="forum"):
    plan, rep = cpu_measure.compile_plan(
        remat, os.path.join(ROOT, "models/seed_mlp.json"),
        ["--set", f"batch={batch}"] + list(args), work, tag)
    return rep, cpu_measure.run_plan(remat, plan, 1, work, tag)[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--remat", default=os.path.join(ROOT, "build/tools/remat/remat"))
    parser.add_argument("--batch", type=int, default=100000)
    parser.add_argument("--split-budget", type=float, default=1.5,
                        help="the split step's budget in buffers (default "
                             "1.5: 614,400,000 bytes at batch 100,000); 0 "
                             "leaves it out")
    parser.add_argument("--json")
    args = parser.parse_args()
    buffer = args.batch * 1024 * 4
    rows = []
    with tempfile.TemporaryDirectory() as work:
        rep, entry = remat_variant(args.remat, args.batch, work)
        if args.split_budget > 0:
            # No --microbatches: the compile splits the batch by itself
            # when the budget misses the unsplit step.
            budget = int(args.split_budget * buffer)
            srep, sentry = remat_variant(args.remat, args.batch, work,
                                         ["--budget", str(budget)], "split")
    rows.append(("remat (planned peak)", rep["planned_peak_bytes"], None))
    rows.append(("remat (arena)", rep["arena_bytes"], None))
    rows.append(("remat (measured RSS growth)", entry["rss_growth_bytes"], entry["ms"]))
    if args.split_budget > 0:
        k = srep.get("microbatches", 1)
        name = f"remat split, --budget {budget} ({k} micro-batches)"
        rows.append((f"{name} (planned peak)", srep["planned_peak_bytes"], None))
        rows.append((f"{name} (arena + workspace)",
                     srep["arena_bytes"] + srep["breakdown"]["workspace"], None))
        rows.append((f"{name} (measured RSS growth)",
                     sentry["rss_growth_bytes"], sentry["ms"]))
        rows.append((f"{name} (absolute peak RSS)", sentry["peak_rss_bytes"],
                     None))
    try:
        import torch  # noqa: F401
        have_torch = True
    except ImportError:
        have_torch = False
    results = {"batch": args.batch, "buffer_bytes": buffer, "remat_report": rep,
               "remat_log": entry}
    if args.split_budget > 0:
        results["split_report"], results["split_log"] = srep, sentry
    if have_torch:
        for mode in ("eager", "checkpoint"):
            growth, ms = torch_variant(mode, args.batch)
            rows.append((f"PyTorch {torch_version()} {mode} (RSS growth)", growth, ms))
            results[f"torch_{mode}"] = {"rss_growth_bytes": growth, "ms": ms}
    print(f"forum model, batch {args.batch}: one buffer = {buffer / 2**20:.1f} MiB")
    print()
    print("| variant | bytes | buffers | step ms |")
    print("|---|---:|---:|---:|")
    for name, b, ms in rows:
        print(f"| {name} | {b} | {b / buffer:.2f} | {'' if ms is None else f'{ms:.0f}'} |")
    if have_torch:
        eager = results["torch_eager"]["rss_growth_bytes"]
        print()
        print(f"remat measured / PyTorch eager: {entry['rss_growth_bytes'] / eager:.3f}")
        print(f"remat measured / arena: {entry['rss_growth_bytes'] / rep['arena_bytes']:.3f}")
    else:
        print("\n(PyTorch not installed: no peer measured)")
    if args.split_budget > 0:
        held = srep["arena_bytes"] + srep["breakdown"]["workspace"]
        print(f"remat split measured / (arena + workspace): "
              f"{sentry['rss_growth_bytes'] / held:.3f}")
        if have_torch:
            print(f"remat split measured / PyTorch eager: "
                  f"{sentry['rss_growth_bytes'] / eager:.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

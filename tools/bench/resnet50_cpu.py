#!/usr/bin/env python3
"""resnet50 training on the CPU: remat at three budgets against PyTorch
eager and torch.utils.checkpoint (issue #12, acceptance 3).

torchvision 0.14's resnet50 (random weights, dropout none) exported by
tools/export_onnx.py, batch 32, 3 x 224 x 224, 1000 classes; one fixed batch
(seeded normal images, uniform labels) fed to every step; SGD (lr 0.01,
momentum 0, weight decay 0) and the mean cross-entropy on both sides.

remat: the plan without a budget (store-all), at half its activation memory
(persistent bytes + half the activations and gradients, as
budget_memory.py) and at the minimum feasible budget (the half plan's
`--min-feasible` search), each run with `remat run --data`; per plan: the
budget, planned peak, arena, measured RSS growth (the log's
rss_growth_bytes, its maximum over the steps), the median step time after
the warm-up, and the losses, which must be bitwise equal across the plans.

PyTorch 1.13: eager, and torch.utils.checkpoint (non-reentrant) per stage
(each of layer1..layer4) and per block (each Bottleneck), in fresh
processes from the same initial weights and batch: peak RSS growth (see
cpu_measure.py) and the median step time after the warm-up. PyTorch's
threads and OpenBLAS's (remat's GEMMs) are both set to --threads (default:
the machine's cores). Rounds interleave the variants: each round runs every
variant once, in turn, one process at a time.

Also on request (--variants): all-bf16, the store-all plan compiled with
`--precision bf16`, and autocast, PyTorch eager under
torch.autocast("cpu", torch.bfloat16) (issue #36, acceptance 4); the
table then gives their step-time ratios.

usage: resnet50_cpu.py [--remat build/tools/remat/remat] [--batch 32]
           [--side 224] [--steps 3] [--warmup 1] [--rounds 1]
           [--threads N] [--variants all,half,min,eager,ckpt-stage,...]
           [--work DIR] [--json OUT.json] [--profile | --profile-only]
PyTorch's steps keep getting faster for about six steps (oneDNN's
primitives, the allocator's mmap threshold) while remat's are flat from the
first: compare steady states with `--warmup 3 --steps 6` (docs/benchmarks.md).
Run it with nothing else running (it needs about 6 GiB at batch 32):
`nice -n -15 python3 tools/bench/resnet50_cpu.py` raises its priority where
permitted. Needs PyTorch and torchvision.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cpu_measure  # noqa: E402
from cpu_measure import ROOT  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "tools"))

MODEL = "resnet50"
REMAT_VARIANTS = ["all", "half", "min", "all-bf16"]
TORCH_VARIANTS = ["eager", "ckpt-stage", "ckpt-block", "autocast"]
LR = 0.01

# Both children's model, batch and optimizer (work, classes set before).
TORCH_SETUP = r"""model = torchvision.models.resnet50(weights=None, num_classes=classes)
model.load_state_dict(torch.load(work + '/init.pt'))
model.train()
x = torch.from_numpy(np.load(work + '/x.npy'))
labels = torch.from_numpy(np.load(work + '/labels.npy'))
opt = torch.optim.SGD(model.parameters(), lr=%r)
""" % LR

TORCH_CHILD = cpu_measure.TORCH_RSS + r"""
import json, sys, time
import numpy as np
import torch
import torch.nn.functional as F
import torchvision
from torch.utils.checkpoint import checkpoint
mode, work, steps, threads, classes = (sys.argv[1], sys.argv[2],
                                       int(sys.argv[3]), int(sys.argv[4]),
                                       int(sys.argv[5]))
torch.set_num_threads(threads)
F.conv2d(torch.ones(1, 3, 8, 8), torch.ones(4, 3, 3, 3))  # load kernels
base = rss('VmRSS:')
%(setup)sstages = [model.layer1, model.layer2, model.layer3, model.layer4]

def forward(m, x):
    x = m.maxpool(m.relu(m.bn1(m.conv1(x))))
    for stage in stages:
        if mode == 'ckpt-stage':
            x = checkpoint(stage, x, use_reentrant=False)
        elif mode == 'ckpt-block':
            for block in stage:
                x = checkpoint(block, x, use_reentrant=False)
        else:
            x = stage(x)
    return m.fc(torch.flatten(m.avgpool(x), 1))

ms, losses = [], []
for _ in range(steps):
    start = time.perf_counter()
    opt.zero_grad()
    with torch.autocast('cpu', dtype=torch.bfloat16,
                        enabled=mode == 'autocast'):
        loss = F.cross_entropy(forward(model, x), labels)
    loss.backward()
    opt.step()
    ms.append((time.perf_counter() - start) * 1000)
    losses.append(loss.item())
print(json.dumps({'rss_growth_bytes': rss('VmHWM:') - base, 'ms': ms,
                  'losses': losses}))
""" % {"setup": TORCH_SETUP}


def torch_run(mode, work, steps, threads, classes):
    r = subprocess.run([sys.executable, "-c", TORCH_CHILD, mode, work,
                        str(steps), str(threads), str(classes)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"torch {mode} failed:\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


TORCH_PROFILE_CHILD = r"""
import json, sys
import numpy as np
import torch
import torch.nn.functional as F
import torchvision
work, threads, classes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)
%(setup)sdef step():
    opt.zero_grad()
    F.cross_entropy(model(x), labels).backward()
    opt.step()
step()  # warm-up
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
    step()
print(json.dumps({e.key: e.self_cpu_time_total / 1e6
                  for e in prof.key_averages()}))
""" % {"setup": TORCH_SETUP}


def profile(args, work, plans):
    """Where the store-all step's time goes: `remat profile` of the plan
    (each op call's median over the timed steps, summed over the plan's
    calls, by op kind) and torch.profiler's self CPU time by aten op of
    one eager step (after one warm-up), in one table each."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(args.threads))
    out = os.path.join(work, "profile.json")
    r = subprocess.run([args.remat, "profile", plans["all"][0], "-o", out,
                        "--warmup", "1", "--steps", "1"],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit(f"remat profile failed:\n{r.stderr}")
    with open(out) as f:
        prof = json.load(f)
    with open(plans["all"][0]) as f:
        plan = json.load(f)
    # Calls by (kind, operand shapes -> result shapes); attributes apart.
    by_call = {}
    for key, seconds in prof["ops"].items():
        kind, rest = key.split(" ", 1)
        shapes = rest[rest.rindex("} ") + 2:] if "} " in rest else rest
        by_call.setdefault((kind, shapes), []).append(seconds)
    shape = lambda b: "[" + ",".join(  # noqa: E731
        str(d) for d in plan["buffers"][b]["shape"]) + "]"
    remat_kinds = {}
    for st in plan["steps"]:
        call = (st["op"], ",".join(shape(b) for b in st["inputs"]) + " -> " +
                ",".join(shape(b) for b in st["outputs"]))
        seconds = statistics.mean(by_call.get(call, [0.0]))
        remat_kinds[st["op"]] = remat_kinds.get(st["op"], 0.0) + seconds
    r = subprocess.run([sys.executable, "-c", TORCH_PROFILE_CHILD, work,
                        str(args.threads), str(args.classes)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"torch profile failed:\n{r.stderr}")
    torch_ops = json.loads(r.stdout.strip().splitlines()[-1])
    lines = [f"remat profile (store-all, step "
             f"{prof['source']['step_seconds']:.2f} s; seconds by op kind):",
             "", "| op | s | share |", "|---|---:|---:|"]
    total = sum(remat_kinds.values())
    for kind, sec in sorted(remat_kinds.items(), key=lambda kv: -kv[1])[:12]:
        lines.append(f"| {kind} | {sec:.2f} | {100 * sec / total:.1f}% |")
    total = sum(torch_ops.values())
    lines += ["", f"torch.profiler (eager, self CPU time, total "
                  f"{total:.2f} s):", "", "| aten op | s | share |",
              "|---|---:|---:|"]
    for op, sec in sorted(torch_ops.items(), key=lambda kv: -kv[1])[:12]:
        lines.append(f"| {op} | {sec:.2f} | {100 * sec / total:.1f}% |")
    return "\n".join(lines)


def prepare(args, work):
    """Exports the model and its initial weights, writes the batch, and
    compiles the three plans; returns {variant: (plan, report)}."""
    import warnings
    import numpy as np
    import torch
    import export_onnx
    warnings.filterwarnings("ignore")  # the exporter's, one per BatchNorm
    onnx = os.path.join(work, MODEL + ".onnx")
    model = export_onnx.export(MODEL, onnx, args.batch, 16, args.classes,
                               args.side)
    torch.save(model.state_dict(), os.path.join(work, "init.pt"))
    rng = np.random.default_rng(0)
    np.save(os.path.join(work, "x.npy"), rng.standard_normal(
        (args.batch, 3, args.side, args.side), dtype=np.float32))
    np.save(os.path.join(work, "labels.npy"),
            rng.integers(0, args.classes, args.batch, dtype=np.int64))
    plans = {}
    plans["all"] = cpu_measure.compile_plan(args.remat, onnx, [], work,
                                            "all")
    plans["all-bf16"] = cpu_measure.compile_plan(
        args.remat, onnx, ["--precision", "bf16"], work, "all-bf16")
    # The minimum feasible budget: remat plan's search, at a budget that
    # fits (store-all's whole step).
    r = subprocess.run([args.remat, "plan", onnx, "--budget",
                        str(plans["all"][1]["step_bytes"]),
                        "--min-feasible"], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"remat plan --min-feasible failed:\n{r.stderr}")
    least = json.loads(r.stdout)["min_feasible_bytes"]
    half = cpu_measure.activation_half_budget(plans["all"][1])
    if half < least:
        raise SystemExit(f"half the activations ({half} B) is below the "
                         f"minimum feasible budget ({least} B)")
    plans["half"] = cpu_measure.compile_plan(
        args.remat, onnx, ["--budget", str(half)], work, "half")
    plans["min"] = cpu_measure.compile_plan(
        args.remat, onnx, ["--budget", str(least)], work, "min")
    return plans


def measure(args, work, plans):
    """Runs every variant --rounds times, interleaved; returns
    {variant: [run, ...]}, a run being {rss_growth_bytes, ms, losses}."""
    steps = args.warmup + args.steps
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(args.threads))
    data = ["--data", "x=" + os.path.join(work, "x.npy"),
            "--data", "labels=" + os.path.join(work, "labels.npy")]
    runs = {v: [] for v in args.variants}
    bench = os.path.join(os.path.dirname(os.path.dirname(args.remat)), "bench",
                         "remat-gemm-bench")
    runs["gemm_peaks"] = cpu_measure.gemm_peaks(
        bench, dict(env, OMP_NUM_THREADS=str(args.threads)))
    runs["flops"] = cpu_measure.plan_gemm_flops(plans["all"][0])
    for rnd in range(args.rounds):
        for v in args.variants:
            start = time.time()
            if v in REMAT_VARIANTS:
                log = cpu_measure.run_plan(args.remat, plans[v][0], steps,
                                           work, f"{v}-{rnd}", data, env)
                run = {"rss_growth_bytes": max(e["rss_growth_bytes"]
                                               for e in log),
                       "ms": [e["ms"] for e in log],
                       "losses": [e["loss"] for e in log]}
            else:
                run = torch_run(v, work, steps, args.threads, args.classes)
            runs[v].append(run)
            print(f"round {rnd + 1} {v}: {time.time() - start:.0f} s, "
                  f"{json.dumps(run)}", file=sys.stderr, flush=True)
    return runs


def table(args, plans, runs):
    mib = 2 ** 20

    def step_ms(v):
        return statistics.median(
            [m for r in runs[v] for m in r["ms"][args.warmup:]])

    def growth(v):
        return max(r["rss_growth_bytes"] for r in runs[v])

    eager_ms = step_ms("eager") if "eager" in runs else None
    eager_rss = growth("eager") if "eager" in runs else None
    names = {"all": "remat store-all", "half": "remat half activations",
             "min": "remat minimum feasible",
             "eager": f"PyTorch {cpu_measure.torch_version()} eager",
             "ckpt-stage": "PyTorch + checkpoint per stage (layer1..4)",
             "ckpt-block": "PyTorch + checkpoint per block (16 Bottlenecks)",
             "all-bf16": "remat store-all, --precision bf16",
             "autocast": "PyTorch autocast bf16"}
    # arena + workspace: the step's allocation, which the budget covers
    # (the workspace holds oneDNN's convolution scratchpads).
    lines = ["| run | budget | planned peak | arena | workspace | RSS growth | "
             "growth / arena | growth / (arena + workspace) | RSS / eager's | "
             "step (median) | step / eager's | modeled overhead |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for v in args.variants:
        g, ms = growth(v), step_ms(v)
        rel_rss = f"{g / eager_rss:.3f}" if eager_rss else "-"
        rel_ms = f"{ms / eager_ms:.3f}" if eager_ms else "-"
        if v in REMAT_VARIANTS:
            rep = plans[v][1]
            budget = (f"{rep['budget_bytes']:,}" if rep["budget_bytes"]
                      else "-")
            step = rep["step_bytes"]
            lines.append(
                f"| {names[v]} | {budget} | {rep['planned_peak_bytes']:,} | "
                f"{rep['arena_bytes']:,} | {rep['workspace_bytes']:,} | "
                f"{g:,} | {g / rep['arena_bytes']:.3f} | {g / step:.3f} | "
                f"{rel_rss} | {ms:.0f} ms | {rel_ms} | "
                f"{100 * rep['recompute_overhead']:.2f}% |")
        else:
            lines.append(f"| {names[v]} | - | - | - | - | {g:,} | - | - | "
                         f"{rel_rss} | {ms:.0f} ms | {rel_ms} | - |")
    lines.append("")
    # The float32 plans' losses; bf16's are its own.
    remat = [v for v in args.variants if v in REMAT_VARIANTS and
             v != "all-bf16"]
    same = True
    if remat:
        first = runs[remat[0]][0]["losses"]
        same = all(r["losses"] == first for v in remat for r in runs[v])
        lines.append(f"remat's losses bitwise equal across "
                     f"{', '.join(remat)} and every round: {same} "
                     f"({first})")
    for v in args.variants:
        if v not in remat:
            lines.append(f"{names[v]} losses: {runs[v][0]['losses']}")
    # Issue #36's speed ratios, where both sides ran, and each step's FLOP
    # rate against the GEMM peak of its precision measured in this run.
    for a, b in (("all-bf16", "all"), ("all-bf16", "autocast"),
                 ("all", "eager")):
        if a in runs and b in runs:
            lines.append(f"step {names[a]} / {names[b]}: "
                         f"{step_ms(a) / step_ms(b):.3f}")
    peaks = runs.get("gemm_peaks", {})
    flops = runs["flops"]
    peak32 = max([peaks[k] for k in ("onednn", "blas") if k in peaks],
                 default=None)
    lines.append(f"step {flops / 1e12:.3f} TFLOP (3x the forward's "
                 f"convolutions and GEMMs); GEMM peak (remat-gemm-bench, "
                 f"best): " + (", ".join(f"{k} {v:.0f} GFLOP/s"
                                         for k, v in peaks.items())
                               or "not built"))
    for v in args.variants:
        rate = flops / step_ms(v) / 1e6
        top = peaks.get("bf16") if v in ("all-bf16", "autocast") else peak32
        lines.append(f"{names[v]}: {rate:.0f} GFLOP/s" +
                     (f", {rate / top:.2f} of the GEMM peak" if top else ""))
    lines.append(f"(RSS growth: MiB = bytes / {mib}; steps: "
                 f"{args.warmup} warm-up + {args.steps} timed per run, "
                 f"{args.rounds} round(s); threads {args.threads})")
    return "\n".join(lines), same


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--remat",
                   default=os.path.join(ROOT, "build/tools/remat/remat"),
                   help="the remat binary (default: build/'s, the README's build)")
    p.add_argument("--batch", type=int, default=32, help="images a step")
    p.add_argument("--side", type=int, default=224, help="image side")
    p.add_argument("--classes", type=int, default=1000, help="classes of the model")
    p.add_argument("--steps", type=int, default=3, help="timed steps a run")
    p.add_argument("--warmup", type=int, default=1, help="untimed steps first, each run")
    p.add_argument("--rounds", type=int, default=1, help="runs of every variant, interleaved")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="threads of PyTorch and OpenBLAS (default: the cores)")
    p.add_argument("--variants",
                   default=",".join(["all", "eager", "ckpt-stage", "half",
                                     "ckpt-block", "min"]),
                   help="comma-separated: all, half, min, all-bf16 (remat), "
                        "eager, ckpt-stage, ckpt-block, autocast (PyTorch); "
                        "default: all, eager, ckpt-stage, half, ckpt-block, "
                        "min")
    p.add_argument("--work", help="keep the files here (default: a "
                                  "temporary directory)")
    p.add_argument("--json", help="also write the measurements here")
    p.add_argument("--profile", action="store_true",
                   help="also profile the store-all step on both sides "
                        "(remat profile, torch.profiler) by op")
    p.add_argument("--profile-only", action="store_true",
                   help="only the profiles (no measured table); with "
                        "--work, reuses its plans")
    args = p.parse_args()
    args.variants = args.variants.split(",")
    for v in args.variants:
        if v not in REMAT_VARIANTS + TORCH_VARIANTS:
            raise SystemExit(f"unknown variant '{v}'")
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short",
                             "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="remat-r50-") as tmp:
        work = args.work or tmp
        os.makedirs(work, exist_ok=True)
        start = time.time()
        plans = None
        if args.profile_only and args.work and os.path.exists(
                os.path.join(work, "all.plan")):
            plans = {"all": (os.path.join(work, "all.plan"), None)}
        if plans is None:
            plans = prepare(args, work)
        print(f"prepared in {time.time() - start:.0f} s", file=sys.stderr)
        if args.profile_only:
            print(profile(args, work, plans))
            return 0
        runs = measure(args, work, plans)
        profiled = profile(args, work, plans) if args.profile else None
    text, same = table(args, plans, runs)
    load_after = os.getloadavg()
    print(f"{MODEL}, batch {args.batch}, 3 x {args.side} x {args.side}; "
          f"commit {commit}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
          f"load average before {load_before[0]:.1f}, after "
          f"{load_after[0]:.1f}; nice {os.nice(0)}\n")
    print(text)
    if profiled:
        print("\n" + profiled)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"reports": {v: rep for v, (_, rep) in plans.items()},
                       "runs": runs, "commit": commit,
                       "load": [load_before, load_after]}, f, indent=1)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())

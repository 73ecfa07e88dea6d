"""Shared helpers of the CPU benches that measure remat against PyTorch
(forum_memory.py, budget_memory.py, resnet50_cpu.py): compiling a plan with
its memory report, running it with a step log, and the peak-RSS measurement
the PyTorch side takes in a fresh process.

Memory is compared as peak RSS growth on both sides: remat's log gives
`rss_growth_bytes` (VmHWM minus VmRSS just before the arena is allocated);
a PyTorch child reads VmRSS after importing torch and running one small op
(kernels loaded, threads started), before the model, data and optimizer
exist, and VmHWM at the end (`TORCH_RSS`).
"""
import json
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

# Python source for a PyTorch child: rss('VmRSS:') / rss('VmHWM:') in bytes.
TORCH_RSS = r"""
def rss(field):
    for line in open('/proc/self/status'):
        if line.startswith(field):
            return int(line.split()[1]) * 1024
"""


def compile_plan(remat, model, args, work, tag):
    """`remat compile MODEL ARGS --emit=plan`: returns (plan path, report)."""
    plan = os.path.join(work, tag + ".plan")
    report = os.path.join(work, tag + ".json")
    r = subprocess.run([remat, "compile", model] + list(args) +
                       ["--emit=plan", "-o", plan, "--report", report],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"remat compile ({tag}) failed:\n{r.stderr}")
    with open(report) as f:
        return plan, json.load(f)


def run_plan(remat, plan, steps, work, tag, args=(), env=None):
    """`remat run PLAN --steps N --log LOG ARGS`: returns the log's entries
    (one dict a step: loss, ms, rss_growth_bytes, ...)."""
    log = os.path.join(work, tag + ".jsonl")
    r = subprocess.run([remat, "run", plan, "--steps", str(steps), "--log",
                        log] + list(args), capture_output=True, text=True,
                       env=env)
    if r.returncode != 0:
        raise SystemExit(f"remat run ({tag}) failed:\n{r.stderr}")
    with open(log) as f:
        return [json.loads(line) for line in f]


def activation_half_budget(report):
    """Persistent bytes plus half the store-all activations and gradients:
    the "half activations" budget of budget_memory.py and
    torchvision_plan_bench.py, from a store-all report."""
    b = report["breakdown"]
    acts = b["activations"] + b["grads"]
    return report["planned_peak_bytes"] - acts + acts // 2


def torch_version():
    import torch
    return torch.__version__.split("+")[0]

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


def gemm_peaks(bench, env=None, repeat=5):
    """remat-gemm-bench's best GFLOP/s on its default GEMM (2048 x 768 x
    3072): {"onednn", "blas", "bf16"} as measured (a path the CPU or build
    lacks is left out); {} when the bench is not built (configure with
    -DREMAT_BUILD_BENCH=ON)."""
    import re
    if not os.path.exists(bench):
        return {}
    out = subprocess.run([bench, "--repeat", str(repeat)], capture_output=True,
                         text=True, env=env, check=True).stdout
    peaks = {}
    for name, key in (("oneDNN", "onednn"), ("OpenBLAS", "blas"),
                      ("oneDNN-bf16", "bf16")):
        m = re.search("^" + name + r"\s+best\s+[\d.]+ ms\s+([\d.]+) GFLOP/s",
                      out, re.M)
        if m:
            peaks[key] = float(m.group(1))
    return peaks


def plan_gemm_flops(plan_path):
    """A training step's FLOPs from a plan: 3 times its forward convolutions'
    and matmuls' multiply-adds x 2 (the backward's two products each as
    large)."""
    with open(plan_path) as f:
        plan = json.load(f)

    def shape(b):
        return plan["buffers"][b]["shape"]

    def numel(s):
        n = 1
        for d in s:
            n *= d
        return n
    flops = 0
    for st in plan["steps"]:
        if st.get("phase") != "forward" or st.get("recompute"):
            continue
        if st["op"] == "conv2d":
            w = shape(st["inputs"][1])
            flops += 2 * numel(shape(st["outputs"][0])) * w[1] * w[2] * w[3]
        elif st["op"] == "matmul":
            a = shape(st["inputs"][0])
            k = a[-2] if st.get("attrs", {}).get("transpose_a") else a[-1]
            flops += 2 * numel(shape(st["outputs"][0])) * k
    return 3 * flops

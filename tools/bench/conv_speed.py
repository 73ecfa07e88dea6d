#!/usr/bin/env python3
"""Speed of remat's CPU convolution against PyTorch eager, in one run.

One training step of y = conv2d(x, w) with x and w both trained (so the
step runs conv2d, conv2d_grad_input and conv2d_grad_weight), loss =
mse(y, target), plain SGD: remat (`remat run`, the median step time of
steps 2..N from its log) and PyTorch 1.13 eager in float32 doing the same
(forward, backward, SGD update), on the same machine, one after the other.
Default: a ResNet stage conv, N=8, 64->64 channels, 56x56, 3x3, pad 1.
PyTorch's thread count is printed; set OPENBLAS_NUM_THREADS to match it.

usage: conv_speed.py [--remat build/tools/remat/remat] [--batch 8]
                     [--channels 64] [--side 56] [--kernel 3] [--stride 1]
                     [--steps 6]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def model_json(n, c, side, k, stride):
    pad = k // 2
    out = (side + 2 * pad - k) // stride + 1
    conv = {"strides": [stride, stride], "pads": [pad] * 4,
            "dilations": [1, 1]}
    return {
        "format": "remat-model", "version": 1, "name": "conv_speed",
        "inputs": [{"name": "target", "shape": [n, c, out, out],
                    "data": {"kind": "randn"}}],
        "params": [
            {"name": "x", "shape": [n, c, side, side],
             "init": {"kind": "normal", "std": 1.0}},
            {"name": "w", "shape": [c, c, k, k],
             "init": {"kind": "normal", "std": 0.05}}],
        "ops": [{"name": "y", "op": "conv2d", "inputs": ["x", "w"],
                 "attrs": conv},
                {"name": "loss", "op": "mse", "inputs": ["y", "target"]}],
        "loss": "loss",
        "optimizer": {"kind": "sgd", "lr": 1e-6, "momentum": 0.0},
    }


def remat_ms(remat, model, steps, work):
    path = os.path.join(work, "conv.json")
    with open(path, "w") as f:
        json.dump(model, f)
    plan = os.path.join(work, "conv.plan")
    log = os.path.join(work, "log.jsonl")
    subprocess.run([remat, "compile", path, "--emit=plan", "-o", plan],
                   check=True)
    subprocess.run([remat, "run", plan, "--steps", str(steps), "--log", log],
                   check=True, stdout=subprocess.DEVNULL)
    with open(log) as f:
        times = [json.loads(line)["ms"] for line in f]
    return statistics.median(times[1:])


def torch_ms(n, c, side, k, stride, steps):
    import torch
    import torch.nn.functional as F
    torch.manual_seed(0)
    x = torch.randn(n, c, side, side, requires_grad=True)
    w = (torch.randn(c, c, k, k) * 0.05).requires_grad_()
    out = (side + 2 * (k // 2) - k) // stride + 1
    target = torch.randn(n, c, out, out)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        y = F.conv2d(x, w, stride=stride, padding=k // 2)
        loss = F.mse_loss(y, target)
        loss.backward()
        with torch.no_grad():
            for p in (x, w):
                p -= 1e-6 * p.grad
                p.grad = None
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times[1:]), torch.get_num_threads()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--remat",
                   default=os.path.join(ROOT, "build/tools/remat/remat"))
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--channels", type=int, default=64)
    p.add_argument("--side", type=int, default=56)
    p.add_argument("--kernel", type=int, default=3)
    p.add_argument("--stride", type=int, default=1)
    p.add_argument("--steps", type=int, default=6)
    a = p.parse_args()
    model = model_json(a.batch, a.channels, a.side, a.kernel, a.stride)
    with tempfile.TemporaryDirectory(prefix="remat-conv-speed-") as work:
        remat = remat_ms(a.remat, model, a.steps, work)
    torch, threads = torch_ms(a.batch, a.channels, a.side, a.kernel,
                              a.stride, a.steps)
    print(f"conv2d N={a.batch} {a.channels}->{a.channels} "
          f"{a.side}x{a.side} {a.kernel}x{a.kernel} stride {a.stride}: "
          f"step (forward + both gradients + SGD), median of steps 2..{a.steps}")
    blas = os.environ.get("OPENBLAS_NUM_THREADS", "default")
    print(f"  remat cpu      {remat:9.1f} ms  (OpenBLAS threads: {blas})")
    print(f"  pytorch eager  {torch:9.1f} ms  ({threads} threads)")
    print(f"  ratio remat / pytorch: {remat / torch:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

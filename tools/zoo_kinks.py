#!/usr/bin/env python3
"""Where a zoo model's float64 forward step comes near a kink
(docs/onnx.md, "torchvision's models": a kink flip).

  /usr/bin/python3 tools/zoo_kinks.py MODEL [--seed N] [--batch N] [--top K]

Runs one training-mode forward pass of tools/zoo_models.py's MODEL in
float64 on the batch tests/e2e/onnx_zoo.py uses (the same seed rule: the
model's seed offset added to --seed) and lists the K inputs closest to a
kink of ReLU (0), ReLU6 and Hardtanh (0, 6), Hardsigmoid and Hardswish
(-3, 3), each with the module's name, the element's
distance and the distance over the largest magnitude of that input (what
float32's rounding, about 6e-8 of it per operation, must stay well below
for float32 steps to land on the same side).
"""
import argparse
import os
import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo_models  # noqa: E402

KINKS = [(nn.ReLU, (0.0,)), (nn.ReLU6, (0.0, 6.0)), (nn.Hardtanh, None),
         (nn.Hardsigmoid, (-3.0, 3.0)), (nn.Hardswish, (-3.0, 3.0))]


def kinks_of(module):
    for cls, points in KINKS:
        if isinstance(module, cls):
            if points is None:  # Hardtanh: its bounds
                return (module.min_val, module.max_val)
            return points
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch", type=int, default=0)
    p.add_argument("--top", type=int, default=5)
    a = p.parse_args()
    entry = {**zoo_models.ZOO, **zoo_models.PATTERNS}[a.model]
    seed = a.seed + entry.seed
    batch = a.batch or entry.batch
    module = zoo_models.build(a.model, seed).double().train()
    rng = np.random.default_rng(seed + 1)
    if entry.tokens:
        x = torch.from_numpy(rng.integers(0, zoo_models.VOCAB,
                                          size=(batch, *entry.shape)))
    else:
        x = torch.from_numpy(rng.standard_normal(
            (batch, *entry.shape)).astype(np.float32)).double()
    found = []

    def hook(name, points):
        def record(mod, inputs):
            v = inputs[0].detach().clone().numpy().ravel()
            scale = float(np.abs(v).max()) or 1.0
            d = np.min([np.abs(v - k) for k in points], axis=0)
            i = int(np.argmin(d))
            found.append((float(d[i]), float(d[i]) / scale, name, v[i]))
        return record
    for name, m in module.named_modules():
        points = kinks_of(m)
        if points:
            # Before the module runs: an in-place ReLU overwrites its input.
            m.register_forward_pre_hook(hook(name, points))
    with torch.no_grad():
        module(x)
    print(f"{a.model}, seed {seed}, batch {batch}: the {a.top} inputs "
          f"closest to a kink of {len(found)} calls")
    print(f"{'distance':>10} {'/ max |x|':>10} {'value':>12}  module")
    for d, rel, name, v in sorted(found)[:a.top]:
        print(f"{d:10.2e} {rel:10.2e} {v:12.5e}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

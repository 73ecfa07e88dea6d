#!/usr/bin/env python3
"""Exports the ONNX test models from PyTorch (docs/onnx.md).

Each model is a torch.nn.Module with a fixed seed, exported the way
docs/onnx.md tells users to export: training mode, no constant folding,
one float input `x` and one output.

  forum       the forum's MLP: Linear(width, width), ReLU, Linear(width,
              width), ReLU, Linear(width, 1) (width 1024 as on the forum)
  classifier  a small MLP classifier of `side` features: Flatten, Linear,
              ReLU, Linear, Tanh, Linear to `classes` logits
  mixed       the other ops of this slice: MatMul with a raw weight,
              Gemm with alpha/beta (addmm), Transpose, Reshape through a
              Shape/Gather/Unsqueeze/Concat computation, Sub/Div by
              constants, Sigmoid, Softmax, Identity
  norm        batch normalization without convolutions: Linear,
              BatchNorm1d, ReLU6 (Clip), reshape to [N, width/4, 2, 2],
              nearest Upsample x2 (Resize), BatchNorm2d (momentum 0.2),
              Flatten, Linear to `classes` logits

usage: export_onnx.py MODEL OUT.onnx [--batch N] [--width W] [--classes C]
                      [--opset 13..17] [--dynamic-batch] [--seed S]

Needs PyTorch (python3-torch); the onnx Python module is not needed.
"""
import argparse
import sys

import torch
from torch import nn


class Forum(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc1 = nn.Linear(width, width)
        self.fc2 = nn.Linear(width, width)
        self.fc3 = nn.Linear(width, 1)

    def forward(self, x):
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


class Classifier(nn.Module):
    def __init__(self, side, width, classes):
        super().__init__()
        self.fc1 = nn.Linear(side, width)
        self.fc2 = nn.Linear(width, width)
        self.out = nn.Linear(width, classes)

    def forward(self, x):
        h = torch.flatten(x, 1)
        return self.out(torch.tanh(self.fc2(torch.relu(self.fc1(h)))))


class Mixed(nn.Module):
    def __init__(self, features, width, classes):
        super().__init__()
        self.w = nn.Parameter(torch.randn(features, width) / features ** 0.5)
        self.proj = nn.Linear(width, width)
        self.bias = nn.Parameter(torch.randn(width) * 0.1)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        h = torch.matmul(x, self.w)                       # MatMul
        h = torch.addmm(self.bias, h, self.proj.weight.t(),
                        beta=0.5, alpha=2.0)              # Gemm alpha, beta
        h = torch.sigmoid((h - 0.25) / 2.0)               # Sub, Div, Sigmoid
        n = h.shape[0]
        h = h.reshape(n, 2, -1).transpose(1, 2)           # Reshape, Transpose
        h = h.reshape(n, -1)
        h = torch.softmax(self.proj(h), dim=-1) * 4.0     # Gemm, Softmax, Mul
        return self.head(h)


class Norm(nn.Module):
    def __init__(self, side, width, classes):
        super().__init__()
        if width % 4:
            raise SystemExit("export_onnx.py: norm needs a width divisible "
                             "by 4")
        self.fc1 = nn.Linear(side, width)
        self.bn1 = nn.BatchNorm1d(width)
        self.act = nn.ReLU6()
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.bn2 = nn.BatchNorm2d(width // 4, momentum=0.2)
        self.out = nn.Linear(width * 4, classes)

    def forward(self, x):
        h = self.act(self.bn1(self.fc1(x)))               # Gemm, BN, Clip
        h = h.reshape(h.shape[0], -1, 2, 2)               # Reshape
        h = self.bn2(self.up(h))                          # Resize, BN
        return self.out(torch.flatten(h, 1))              # Flatten, Gemm


def build(name, width, classes, side):
    if name == "forum":
        return Forum(width), (width,)
    if name == "classifier":
        return Classifier(side, width, classes), (side,)
    if name == "mixed":
        return Mixed(side, width, classes), (side,)
    if name == "norm":
        return Norm(side, width, classes), (side,)
    raise SystemExit(f"export_onnx.py: unknown model '{name}' "
                     "(forum, classifier, mixed, norm)")


def export(name, path, batch=8, width=16, classes=4, side=4, opset=17,
           dynamic_batch=False, seed=0):
    """Exports model `name` to `path`; returns the torch module (float32)."""
    torch.manual_seed(seed)
    model, sample_shape = build(name, width, classes, side)
    x = torch.randn(batch, *sample_shape)
    dynamic = {"x": {0: "batch"}, "y": {0: "batch"}} if dynamic_batch else None
    torch.onnx.export(model, x, path, input_names=["x"], output_names=["y"],
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, opset_version=opset,
                      dynamic_axes=dynamic)
    return model


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model", choices=["forum", "classifier", "mixed", "norm"])
    p.add_argument("out")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--width", type=int, default=None,
                   help="hidden width (default: 1024 for forum, else 16)")
    p.add_argument("--classes", type=int, default=4)
    p.add_argument("--side", type=int, default=4,
                   help="input features of classifier, mixed and norm")
    p.add_argument("--opset", type=int, default=17)
    p.add_argument("--dynamic-batch", action="store_true",
                   help="leave dim 0 of x dynamic ('batch')")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    width = a.width or (1024 if a.model == "forum" else 16)
    export(a.model, a.out, a.batch, width, a.classes, a.side, a.opset,
           a.dynamic_batch, a.seed)
    print(f"export_onnx.py: wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()

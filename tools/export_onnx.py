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
  transformer a small pre-LN transformer language model from torch.nn:
              token Embedding, learned positions (an Embedding read through
              a `positions` buffer), 2 blocks of LayerNorm,
              nn.MultiheadAttention with a causal float mask (the buffer
              `mask`, -inf above the diagonal), GELU (exact, erf form),
              Dropout; a final LayerNorm and a head tied to the token
              embedding. Input `x`: int64 token ids [batch, side] in
              [0, classes); output: logits [batch, side, classes]. At opset
              17 LayerNorm exports as LayerNormalization, below as
              ReduceMean/Sub/Pow/Sqrt/Div.
  transformer-explicit
              the same with attention written out: one Linear to q, k, v
              split with Tensor.split (Split), each head's softmax(q kᵀ/√d +
              mask) v, heads joined with torch.cat (Concat); an untied head

The transformers' buffers (`mask`, `positions`) are initializers like the
parameters; remat freezes the float mask by itself (it holds -inf;
docs/onnx.md, "Initializers: parameters and buffers").
  cnn         a small CNN on 3 x `side` x `side` images (side >= 12):
              Conv 3x3 stride 2, ReLU, MaxPool 3x3 stride 2 with ceil_mode,
              Conv with 2 groups, ReLU, AveragePool 3x3 stride 2 pad 1
              (count_include_pad off), depthwise Conv with dilation 2,
              GlobalAveragePool, Flatten, Linear to `classes` logits
  norm        batch normalization without convolutions: Linear,
              BatchNorm1d, ReLU6 (Clip), reshape to [N, width/4, 2, 2],
              nearest Upsample x2 (Resize), BatchNorm2d (momentum 0.2),
              Flatten, Linear to `classes` logits
  hard        the piecewise-linear activations: Linear, Hardswish, a
              Hardsigmoid gate (h * hardsigmoid(Linear(h))), Linear,
              LeakyReLU(0.1), Linear to `classes` logits
  shapes      shape arithmetic on the batch: a parameter expanded to it
              (Expand, ConstantOfShape, Equal, Where), torch.zeros of a
              computed shape, a width rounded down with % (Mod), Slice and
              Concat
  pad         Conv, ReLU, constant padding by (1, 2) and (0, 3) with value
              0.5 (Pad), Flatten, Linear on 3 x `side` x `side` images
  padmodes    Conv, ReLU, reflect padding by (1, 2) and (0, 3), replicate
              padding by (2, 1) and (1, 0) (Pad, modes reflect and edge),
              Flatten, Linear
  resnet18, resnet50, mobilenet_v2, vgg16, squeezenet1_0
              torchvision 0.14's models (python3-torchvision) with random
              weights (`weights=None`) and `classes` outputs, on 3 x `side`
              x `side` images. Their dropout rate is --dropout (default 0,
              as parity needs: random masks cannot match across
              frameworks; --dropout -1 keeps torchvision's own rates).
              vgg16's AdaptiveAvgPool2d((7, 7)) exports only where the
              feature map divides into 7 x 7 (side 224, 448, ...); below
              224 it is replaced by an identity, so the classifier's
              first Linear reads 512 x (side/32)^2 features.

usage: export_onnx.py MODEL OUT.onnx [--batch N] [--width W] [--classes C]
                      [--side S] [--opset 13..17] [--dynamic-batch]
                      [--dropout P] [--seed S]

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


class Hard(nn.Module):
    """The piecewise-linear activations of MobileNetV3 and GAN-style nets:
    Hardswish, Hardsigmoid (a squeeze-excitation gate) and LeakyReLU."""

    def __init__(self, side, width, classes):
        super().__init__()
        self.fc1 = nn.Linear(side, width)
        self.gate = nn.Linear(width, width)
        self.fc2 = nn.Linear(width, width)
        self.out = nn.Linear(width, classes)
        self.leaky = nn.LeakyReLU(0.1)
        self.hardsigmoid = nn.Hardsigmoid()

    def forward(self, x):
        h = nn.functional.hardswish(self.fc1(x))
        h = h * self.hardsigmoid(self.gate(h))
        h = self.leaky(self.fc2(h))
        return self.out(h)


class Shapes(nn.Module):
    """What the exporter writes for shape arithmetic on a batch: Expand of
    a parameter to the batch (with its -1 handling: ConstantOfShape,
    Equal, Where), torch.zeros of a computed shape (ConstantOfShape), a
    width rounded down with % (Mod), Slice and Concat of the pieces."""

    def __init__(self, side, width, classes):
        super().__init__()
        self.fc = nn.Linear(side, width)
        self.bias = nn.Parameter(torch.randn(width) * 0.1)
        self.out = nn.Linear(width, classes)

    def forward(self, x):
        h = torch.relu(self.fc(x))
        b = self.bias.expand(x.shape[0], -1)
        z = torch.zeros(x.shape[0], h.shape[1])
        keep = h.shape[1] - h.shape[1] % 3
        h = torch.cat([h[:, :keep], z[:, keep:]], dim=1)
        return self.out(h + b + z)


class Pad(nn.Module):
    """Constant padding of an activation (Pad, mode constant, value 0.5),
    uneven on each side, as densenet's and inception's exports have it."""

    def __init__(self, side, width, classes):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.fc = nn.Linear(4 * (side - 2 + 3) * (side - 2 + 3), classes)

    def forward(self, x):
        h = nn.functional.pad(torch.relu(self.conv(x)), (1, 2, 0, 3),
                              value=0.5)
        return self.fc(torch.flatten(h, 1))


class PadModes(nn.Module):
    """Reflect and replicate padding (Pad, modes reflect and edge), uneven,
    as CycleGAN-style generators and segmentation models pad."""

    def __init__(self, side, width, classes):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        inner = side - 2
        self.fc = nn.Linear(4 * (inner + 3 + 3) * (inner + 3 + 1), classes)

    def forward(self, x):
        h = torch.relu(self.conv(x))
        h = nn.functional.pad(h, (1, 2, 0, 3), mode="reflect")
        h = nn.functional.pad(h, (2, 1, 1, 0), mode="replicate")
        return self.fc(torch.flatten(h, 1))


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


class GroupNorm(nn.Module):
    """nn.InstanceNorm2d with and without its affine part, and nn.GroupNorm
    (InstanceNormalization; GroupNorm as one between reshapes, then Mul and
    Add), their weights drawn at random so that a scale or shift applied
    wrongly shows."""

    def __init__(self, side, width, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.inst = nn.InstanceNorm2d(8, affine=True)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.group = nn.GroupNorm(4, 8)
        self.plain = nn.InstanceNorm2d(8)
        self.out = nn.Linear(8 * side * side, classes)
        for norm in (self.inst, self.group):
            nn.init.normal_(norm.weight, 1.0, 0.3)
            nn.init.normal_(norm.bias, 0.0, 0.3)

    def forward(self, x):
        h = torch.relu(self.inst(self.conv1(x)))
        h = torch.relu(self.group(self.conv2(h)))
        return self.out(torch.flatten(self.plain(h), 1))


class Einsum(nn.Module):
    """torch.einsum in the forms attention and linear layers are written
    with: a batched product with the second operand transposed
    ("bid,bjd->bij"), a product with a weight and a permuted output
    ("bij,jk->kbi"), the first operand transposed ("bji,bjk->bik") and an
    outer product ("bi,bj->bij")."""

    def __init__(self, side, width, classes):
        super().__init__()
        self.w = nn.Parameter(torch.randn(side, width) / side ** 0.5)
        self.v = nn.Parameter(torch.randn(width) * 0.5)
        self.out = nn.Linear(side * width, classes)

    def forward(self, x):
        h = torch.einsum("bjd,bkd->bjk", x, x)                # [B, S, S]
        h = torch.tanh(torch.einsum("bij,jk->kbi", h, self.w))  # [W, B, S]
        h = torch.einsum("jbi,jbk->bik", h, h)                # [B, S, S]
        g = torch.einsum("bi,j->bij", h.mean(2), self.v)      # [B, S, W]
        return self.out(torch.flatten(torch.tanh(g), 1))


class Block(nn.Module):
    """A pre-LN transformer block: x + attn(ln1(x)), then + mlp(ln2(x))."""

    def __init__(self, width, heads, dropout, explicit):
        super().__init__()
        self.heads = heads
        self.explicit = explicit
        self.ln1 = nn.LayerNorm(width)
        if explicit:
            self.qkv = nn.Linear(width, 3 * width)
            self.proj = nn.Linear(width, width)
        else:
            self.attn = nn.MultiheadAttention(width, heads, dropout=dropout,
                                              batch_first=True)
        self.ln2 = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, 4 * width)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(4 * width, width)
        self.drop = nn.Dropout(dropout)

    def attention(self, h, mask):
        if not self.explicit:
            a, _ = self.attn(h, h, h, attn_mask=mask, need_weights=False)
            return a
        width = h.shape[-1]
        dh = width // self.heads
        q, k, v = self.qkv(h).split(width, dim=-1)           # Split
        outs = []
        for i in range(self.heads):
            part = slice(i * dh, (i + 1) * dh)
            s = q[..., part] @ k[..., part].transpose(-2, -1) / dh ** 0.5
            outs.append(torch.softmax(s + mask, dim=-1) @ v[..., part])
        return self.proj(torch.cat(outs, dim=-1))             # Concat

    def forward(self, x, mask):
        x = x + self.drop(self.attention(self.ln1(x), mask))
        return x + self.drop(self.fc2(self.act(self.fc1(self.ln2(x)))))


class Transformer(nn.Module):
    def __init__(self, vocab, seq, width, heads=2, layers=2, dropout=0.0,
                 explicit=False):
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(seq, width)
        self.blocks = nn.ModuleList(
            [Block(width, heads, dropout, explicit) for _ in range(layers)])
        self.lnf = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)
        if not explicit:
            self.head.weight = self.tok.weight                # tied
        self.register_buffer(
            "mask", torch.triu(torch.full((seq, seq), float("-inf")), 1))
        self.register_buffer("positions", torch.arange(seq))

    def forward(self, x):
        h = self.tok(x) + self.pos(self.positions)
        for block in self.blocks:
            h = block(h, self.mask)
        return self.head(self.lnf(h))


class Cnn(nn.Module):
    def __init__(self, width, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 3, stride=2, padding=1)
        self.pool1 = nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True)
        self.conv2 = nn.Conv2d(width, width, 3, padding=1, groups=2)
        self.pool2 = nn.AvgPool2d(3, stride=2, padding=1,
                                  count_include_pad=False)
        self.conv3 = nn.Conv2d(width, width, 3, padding=2, dilation=2,
                               groups=width, bias=False)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(width, classes)

    def forward(self, x):
        h = self.pool1(torch.relu(self.conv1(x)))
        h = self.pool2(torch.relu(self.conv2(h)))
        h = self.gap(self.conv3(h))
        return self.fc(torch.flatten(h, 1))


TORCHVISION = ["resnet18", "resnet50", "mobilenet_v2", "vgg16",
               "squeezenet1_0"]


def torchvision_model(name, classes, side, dropout):
    """torchvision's model `name` with random weights; dropout rate
    `dropout` (a negative rate keeps torchvision's)."""
    try:
        import torchvision
    except ImportError as e:
        raise ImportError(f"{name} needs torchvision "
                          f"(python3-torchvision): {e}") from e
    model = getattr(torchvision.models, name)(weights=None,
                                              num_classes=classes)
    if dropout >= 0:
        for m in model.modules():
            if isinstance(m, nn.Dropout):
                m.p = dropout
    if name == "vgg16" and side % 224:
        # The adaptive pool exports only as a plain AveragePool whose
        # window divides the feature map into 7 x 7.
        cells = (side // 32) ** 2
        if cells < 1:
            raise SystemExit("export_onnx.py: vgg16 needs side >= 32")
        model.avgpool = nn.Identity()
        model.classifier[0] = nn.Linear(512 * cells, 4096)
    return model


def sample_shape(name, width, side):
    """The shape of one sample of model `name`'s input x."""
    if name in ("cnn", "pad", "padmodes", "groupnorm") or name in TORCHVISION:
        return (3, side, side)
    return {"forum": (width,), "einsum": (side, side)}.get(name, (side,))


def build(name, width, classes, side, dropout=0.0):
    if name == "forum":
        return Forum(width), (width,)
    if name == "classifier":
        return Classifier(side, width, classes), (side,)
    if name == "mixed":
        return Mixed(side, width, classes), (side,)
    if name == "cnn":
        return Cnn(width, classes), (3, side, side)
    if name in ("transformer", "transformer-explicit"):
        return (Transformer(classes, side, width, dropout=dropout,
                            explicit=name == "transformer-explicit"),
                (side,))
    if name == "norm":
        return Norm(side, width, classes), (side,)
    if name == "hard":
        return Hard(side, width, classes), (side,)
    if name == "shapes":
        return Shapes(side, width, classes), (side,)
    if name == "pad":
        return Pad(side, width, classes), (3, side, side)
    if name == "padmodes":
        return PadModes(side, width, classes), (3, side, side)
    if name == "groupnorm":
        return GroupNorm(side, width, classes), (3, side, side)
    if name == "einsum":
        return Einsum(side, width, classes), (side, side)
    if name in TORCHVISION:
        return (torchvision_model(name, classes, side, dropout),
                (3, side, side))
    raise SystemExit(f"export_onnx.py: unknown model '{name}' "
                     f"({', '.join(MODELS)})")


MODELS = ["forum", "classifier", "mixed", "cnn", "transformer",
          "transformer-explicit", "norm", "hard", "shapes", "pad",
          "padmodes", "groupnorm", "einsum"] + TORCHVISION


def is_token_model(name):
    """Whether the model's input `x` holds int64 token ids."""
    return name.startswith("transformer")


def as_exported(module):
    """`module` with the normalization constants its ONNX export holds.
    The file stores them as float32 attributes (LeakyReLU's slope too):
    epsilon 1e-5 as
    float32(1e-5), 2.5e-8 relative from it, and batch norm's momentum
    0.1 as 1 - momentum = float32(0.9), so the exported model updates its
    running statistics with 1 - float32(0.9), 2.4e-7 from 0.1. A float64
    reference compared with remat below that uses what the file says."""
    import numpy as np

    def f32(v):
        return float(np.float32(v))
    for m in module.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.eps = f32(m.eps)
            if m.momentum:
                m.momentum = 1.0 - f32(1.0 - m.momentum)
        elif isinstance(m, (nn.LayerNorm, nn.GroupNorm,
                            nn.modules.instancenorm._InstanceNorm)):
            m.eps = f32(m.eps)
        elif isinstance(m, nn.LeakyReLU):
            m.negative_slope = f32(m.negative_slope)
    return module


class ExactHardsigmoid(nn.Module):
    """relu6(x + 3) / 6 through autograd: PyTorch 1.13's CPU hardsigmoid
    backward multiplies by float32(1/6) in float64 too (the gradient at 0
    is 0.1666666716337204), 3e-8 from the exact 1/6, so a float64
    reference compared below that uses this form."""

    def forward(self, x):
        return nn.functional.relu6(x + 3.0) / 6.0


def float64_reference(module):
    """`module` (a float64 copy) with every nn.Hardsigmoid exact
    (ExactHardsigmoid)."""
    for name, m in list(module.named_modules()):
        for child_name, child in list(m.named_children()):
            if isinstance(child, nn.Hardsigmoid):
                setattr(m, child_name, ExactHardsigmoid())
    return module


def export(name, path, batch=8, width=16, classes=4, side=4, opset=17,
           dynamic_batch=False, seed=0, dropout=0.0):
    """Exports model `name` to `path`; returns the torch module (float32)."""
    torch.manual_seed(seed)
    model, sample_shape = build(name, width, classes, side, dropout)
    if is_token_model(name):
        x = torch.randint(0, classes, (batch, *sample_shape))
    else:
        x = torch.randn(batch, *sample_shape)
    dynamic = {"x": {0: "batch"}, "y": {0: "batch"}} if dynamic_batch else None
    torch.onnx.export(model, x, path, input_names=["x"], output_names=["y"],
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, opset_version=opset,
                      dynamic_axes=dynamic)
    return model


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model", choices=MODELS)
    p.add_argument("out")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--width", type=int, default=None,
                   help="hidden width (default: 1024 for forum, else 16)")
    p.add_argument("--classes", type=int, default=4)
    p.add_argument("--side", type=int, default=4,
                   help="input features of classifier, mixed and norm, the "
                        "sequence length of the transformers, the image side "
                        "of cnn and the torchvision models")
    p.add_argument("--opset", type=int, default=17)
    p.add_argument("--dynamic-batch", action="store_true",
                   help="leave dim 0 of x dynamic ('batch')")
    p.add_argument("--dropout", type=float, default=0.0,
                   help="the dropout rate of the transformers and the "
                        "torchvision models (-1: torchvision's own)")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    width = a.width or (1024 if a.model == "forum" else 16)
    export(a.model, a.out, a.batch, width, a.classes, a.side, a.opset,
           a.dynamic_batch, a.seed, a.dropout)
    print(f"export_onnx.py: wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()

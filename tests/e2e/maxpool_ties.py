#!/usr/bin/env python3
"""A tie-aware float64 reference for MaxPool (onnx_parity.py --tie-aware).

A float32 forward and a float64 one can pick different maxima in a MaxPool
window whose two largest entries are closer than float32's accumulated
rounding; the gradients below the pool then differ by whole entries, not by
rounding. The tie-aware reference is the float64 computation in which each
nn.MaxPool2d is replaced by TieAwareMaxPool2d, given remat's float32 input
of that pool (`remat run --dump-values`):

  D    = max_j |x32_j - x64_j| over the pool's whole input (padding left
         out), x64 being the reference's own float64 input: remat's largest
         observed rounding of that input (reported relative to max |x64|);
  tol  = TIE_FACTOR x D (8 x D);
  a window is a near-tie where top1 - top2 <= tol and top1 != 0 or top2
         != 0 (top1, top2: its two largest float64 entries).

At a near-tie the pool outputs x64 at remat's argmax (the first maximum of
the float32 window, as remat's max_pool2d picks it); elsewhere at float64's
own (the first maximum). The output is a gather from the window, so
autograd routes the gradient to the chosen entry.

Why 2 x D would already do: if remat's argmax j differs from float64's i,
then x32_j >= x32_i and x64_i >= x64_j, so top1 - top2 <= x64_i - x64_j <=
|x64_i - x32_i| + |x32_j - x64_j| <= 2 D: every window where the two pick
differently is a near-tie. The factor 8 leaves a margin of 4. Everywhere
else the reference is plain float64 PyTorch. What keeps it honest is that
D is rounding: onnx_parity.py requires remat's pool inputs to be as close
to float64 as the acceptance rule asks of every tensor.

MODEL ("maxpool-ties", onnx_parity.py --model maxpool-ties --tie-aware):
a model and a batch with a near-tie that float32 breaks the other way in
every sample, whatever the summation order: a 1x1 Conv of 4 channels with
weights (1, 1, 1, -1) and bias 0 on 2 x 2 images, MaxPool 2x2, Linear to
the classes. Pixel (0, 0) is (1, 0, 0, 0): 1 in every precision; pixel
(0, 1) is (1, 2^-25, 5, 5): 1 + 2^-25 in float64 but 1 in float32 (no
float32 sum of those terms keeps the 2^-25). Float64 picks (0, 1), float32
the first maximum (0, 0); their gradients of the conv weight differ by 5.

Run as a script: a self-test of the window selection on crafted windows
(exit 0 pass, 1 fail, 77 without PyTorch).
"""
import sys

import numpy as np

TIE_FACTOR = 8.0


def pool_geometry(module):
    """(kernel, stride, padding) pairs of an nn.MaxPool2d and its ceil_mode;
    raises ValueError for dilation (not needed by the models here)."""
    def pair(v):
        return (v, v) if isinstance(v, int) else tuple(v)
    if pair(module.dilation) != (1, 1):
        raise ValueError("tie-aware MaxPool: dilation is not supported")
    stride = module.stride if module.stride is not None else module.kernel_size
    return (pair(module.kernel_size), pair(stride), pair(module.padding),
            bool(module.ceil_mode))


def output_size(size, kernel, stride, pad, ceil_mode):
    """PyTorch's pooling output size along one dimension."""
    span = size + 2 * pad - kernel
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    # The last window must start inside the input or its begin padding.
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def windows(x, kernel, stride, padding, ceil_mode):
    """[N, C, OH, OW, kh*kw] view of torch tensor x's pooling windows
    (row-major within a window), padded with -inf."""
    import torch
    import torch.nn.functional as F
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, padding
    n, c, h, w = x.shape
    oh = output_size(h, kh, sh, ph, ceil_mode)
    ow = output_size(w, kw, sw, pw, ceil_mode)
    extra_h = max(0, (oh - 1) * sh + kh - (h + 2 * ph))
    extra_w = max(0, (ow - 1) * sw + kw - (w + 2 * pw))
    if ph or pw or extra_h or extra_w:
        x = F.pad(x, (pw, pw + extra_w, ph, ph + extra_h),
                  value=-float("inf"))
    u = x.unfold(2, kh, sh).unfold(3, kw, sw)  # [N, C, OH', OW', kh, kw]
    u = u[:, :, :oh, :ow]
    return u.reshape(n, c, oh, ow, kh * kw)


def first_argmax(values):
    """The first maximum's index along the last axis (numpy's argmax)."""
    return np.argmax(values, axis=-1)


def select(w64, w32, factor=TIE_FACTOR):
    """The chosen index per window and the statistics (see the module
    docstring). w64: float64 windows, w32: float32 windows of the same
    shape (numpy arrays)."""
    finite = np.isfinite(w64)
    with np.errstate(invalid="ignore"):  # -inf padding
        diff = np.where(finite, np.abs(w32.astype(np.float64) - w64), 0.0)
    largest = float(np.where(finite, np.abs(w64), 0.0).max())
    bound = float(diff.max())
    tol = factor * bound
    top2 = -np.sort(-w64, axis=-1)[..., :2]
    gap = top2[..., 0] - top2[..., 1]
    live = (top2[..., 0] != 0) | (top2[..., 1] != 0)
    near = live & (gap <= tol)
    own = first_argmax(w64)
    theirs = first_argmax(w32)
    chosen = np.where(near, theirs, own)
    flipped = near & (theirs != own)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel_gap = gap / np.abs(top2[..., 0])
    stats = {
        "windows": int(np.prod(w64.shape[:-1])),
        "D": bound,
        "d": bound / largest if largest > 0 else 0.0,
        "tol": tol,
        "near": int(near.sum()),
        "flipped": int(flipped.sum()),
        # A pick that differs outside the near-ties would contradict the
        # bound above: counted to be checked, never followed.
        "differ_outside": int((~near & (theirs != own)).sum()),
        # The flipped windows' largest gap, relative to their top1 and to D.
        "max_flipped_gap": float(rel_gap[flipped].max()) if flipped.any()
        else None,
        "max_flipped_gap_d": float((gap[flipped] / bound).max())
        if flipped.any() else None,
    }
    return chosen, stats


def make_module(torch_module, remat_input, factor=TIE_FACTOR, sink=None):
    """A float64 replacement of nn.MaxPool2d `torch_module` that follows
    remat's argmax (remat_input: its float32 input, numpy) at near-ties;
    its `stats` hold the last forward's statistics and `input` its float64
    input, and so does the dict `sink` (shared by deep copies)."""
    import torch
    from torch import nn
    geometry = pool_geometry(torch_module)

    class TieAwareMaxPool2d(nn.Module):
        def __init__(self):
            super().__init__()
            self.stats = None
            self.input = None

        def forward(self, x):
            if x.dtype != torch.float64:
                raise TypeError("the tie-aware reference runs in float64")
            if tuple(x.shape) != tuple(remat_input.shape):
                raise ValueError(f"pool input {tuple(x.shape)} but remat's "
                                 f"is {tuple(remat_input.shape)}")
            w = windows(x, *geometry)
            w32 = windows(torch.from_numpy(np.array(
                remat_input, dtype=np.float32)), *geometry)
            chosen, self.stats = select(w.detach().numpy(), w32.numpy(),
                                        factor)
            self.input = x.detach().numpy().copy()
            if sink is not None:
                sink["stats"], sink["input"] = self.stats, self.input
            index = torch.from_numpy(chosen).unsqueeze(-1)
            return torch.gather(w, -1, index).squeeze(-1)

    return TieAwareMaxPool2d()


MODEL = "maxpool-ties"


def export_model(path, batch, classes, opset):
    """Exports the near-tie model (module docstring) to `path` the way
    tools/export_onnx.py exports; returns the module and the batch x."""
    import torch
    from torch import nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(4, 1, 1), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(1, classes))
    with torch.no_grad():
        model[0].weight.copy_(torch.tensor([1.0, 1.0, 1.0, -1.0]).reshape(
            1, 4, 1, 1))
        model[0].bias.zero_()
    x = np.zeros((batch, 4, 2, 2), dtype=np.float32)
    x[:, :, 0, 0] = [1.0, 0.0, 0.0, 0.0]
    x[:, :, 0, 1] = [1.0, 2.0 ** -25, 5.0, 5.0]
    x[:, 0, 1, :] = 0.5
    torch.onnx.export(model, torch.from_numpy(x), path, input_names=["x"],
                      output_names=["y"],
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, opset_version=opset)
    return model, x


def self_test():
    try:
        import torch
        import torch.nn.functional as F
        from torch import nn
    except ImportError as e:
        print(f"SKIP: {e}")
        return 77
    failures = []

    def check(ok, message):
        if not ok:
            failures.append(message)
            print("FAIL:", message)

    # 1. Without near-ties the tie-aware pool is MaxPool: forward and
    # gradient, for vgg's 2x2/2, resnet's 3x3/2 pad 1 and a ceil_mode one.
    rng = np.random.default_rng(7)
    for k, s, p, ceil in ((2, 2, 0, False), (3, 2, 1, False),
                          (3, 2, 0, True)):
        pool = nn.MaxPool2d(k, s, p, ceil_mode=ceil)
        x = rng.standard_normal((2, 3, 9, 11))
        tie = make_module(pool, x.astype(np.float32))
        a = torch.tensor(x, requires_grad=True)
        b = torch.tensor(x, requires_grad=True)
        ya, yb = tie(a), F.max_pool2d(b, k, s, p, ceil_mode=ceil)
        gy = torch.from_numpy(rng.standard_normal(tuple(yb.shape)))
        ya.backward(gy)
        yb.backward(gy)
        check(ya.shape == yb.shape and torch.equal(ya, yb),
              f"k{k} s{s} p{p} ceil {ceil}: forward differs from max_pool2d")
        # Overlapping windows sum into an entry in another order.
        check(torch.equal(a.grad != 0, b.grad != 0) and
              torch.allclose(a.grad, b.grad, rtol=1e-14, atol=0),
              f"k{k} s{s} p{p} ceil {ceil}: gradient differs from max_pool2d")
        check(tie.stats["flipped"] == 0 and tie.stats["near"] == 0,
              f"k{k} s{s} p{p}: unexpected near-ties {tie.stats}")

    # 2. Crafted 2x2 windows of one [1, 1, 4, 4] input:
    #   A: float64 max at index 1 by 1e-9 relatively, float32 rounding
    #      (remat) puts index 0 ahead: a near-tie that flips -> index 0;
    #   B: a clear maximum (index 2) that float32 keeps -> index 2;
    #   C: all zeros (ReLU) -> no near-tie, the first (index 0);
    #   D: a near-tie where remat agrees with float64 (index 3).
    pool = nn.MaxPool2d(2, 2)
    x64 = np.zeros((1, 1, 4, 4))
    x32 = np.zeros((1, 1, 4, 4), dtype=np.float32)

    def put(a, r, c, values):
        a[0, 0, r:r + 2, c:c + 2] = np.array(values).reshape(2, 2)
    put(x64, 0, 0, [1.0, 1.0 + 1e-9, 0.5, 0.25])
    put(x32, 0, 0, [1.0 + 2 ** -23, 1.0, 0.5, 0.25])
    put(x64, 0, 2, [1.0, 0.5, 3.0, 2.0])
    put(x32, 0, 2, [1.0, 0.5, 3.0, 2.0])
    put(x64, 2, 2, [0.1, 2.0, 0.3, 2.0 + 2e-8])
    put(x32, 2, 2, [0.1, 2.0, 0.3, 2.0 + 2 ** -21])
    tie = make_module(pool, x32)
    x = torch.tensor(x64, requires_grad=True)
    y = tie(x)
    y.sum().backward()
    want = np.zeros((1, 1, 2, 2))
    want[0, 0] = [[x64[0, 0, 0, 0], x64[0, 0, 1, 2]],
                  [0.0, x64[0, 0, 3, 3]]]
    check(np.array_equal(y.detach().numpy(), want),
          f"crafted windows: output {y.detach().numpy().ravel()}, want "
          f"{want.ravel()}")
    grad = np.zeros((1, 1, 4, 4))
    grad[0, 0, 0, 0] = grad[0, 0, 1, 2] = grad[0, 0, 2, 0] = 1.0
    grad[0, 0, 3, 3] = 1.0
    check(np.array_equal(x.grad.numpy(), grad),
          f"crafted windows: gradient {x.grad.numpy()[0, 0]}, want "
          f"{grad[0, 0]}")
    st = tie.stats
    check(st["near"] == 2 and st["flipped"] == 1 and
          st["differ_outside"] == 0,
          f"crafted windows: near {st['near']} (want 2: A, D), flipped "
          f"{st['flipped']} (want 1: A), {st}")
    # D is window D's float32 difference (A's is 2^-23 - 1e-9).
    want = 2 ** -21 - 2e-8
    check(abs(st["D"] - want) <= 1e-6 * want and
          abs(st["max_flipped_gap_d"] - 1e-9 / want) <= 1e-6 * 1e-9 / want,
          f"crafted windows: D {st['D']}, want {want}; {st}")
    # 3. Float64's own pick where the gap exceeds the tolerance: the same
    # window A with remat agreeing bitwise elsewhere and a factor that
    # makes the tolerance smaller than the gap.
    tie_small = make_module(pool, x32, factor=1e-6)
    y = tie_small(torch.tensor(x64))
    check(y.detach().numpy()[0, 0, 0, 0] == x64[0, 0, 0, 1]
          and tie_small.stats["near"] == 0
          and tie_small.stats["differ_outside"] == 1,
          f"tiny tolerance: {tie_small.stats}, output "
          f"{y.detach().numpy()[0, 0, 0, 0]}")
    if failures:
        return 1
    print("OK: tie-aware MaxPool equals max_pool2d without near-ties "
          "(3 geometries, forward and gradient) and follows remat's argmax "
          "at crafted near-ties only")
    return 0


if __name__ == "__main__":
    sys.exit(self_test())

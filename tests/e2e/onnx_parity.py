#!/usr/bin/env python3
"""PyTorch parity of one training step of an exported ONNX model.

Exports MODEL with tools/export_onnx.py, compiles the .onnx file with remat
(its weights come from the export), runs one step on a fixed batch (`--data
x=... --data labels=...`) with `remat run --dump-grads`, and runs the same
torch module in float64 and in float32 on the same batch. For the loss and
every parameter gradient (named by its ONNX initializer, i.e. the module's
parameter name), and for the BatchNorm running statistics after the step
(`remat run --save`), the relative error ||remat - torch64|| / ||torch64||
must be at most max(1e-4, 4 x float32 PyTorch's own relative error on that
tensor).

The transformers take int64 token ids in [0, classes) of length `side`
and their labels are [batch, side] (cross-entropy over every position);
their float buffers (the attention mask) are compiled with --frozen.

Exit codes: 0 parity holds, 1 it does not (or remat failed), 77 PyTorch is
not installed or this remat has no ONNX support (ctest: skipped).

usage: onnx_parity.py --remat REMAT --model MODEL (tools/export_onnx.py)
           [--batch N] [--width W] [--classes C] [--side S] [--opset K]
           [--loss L] [--dynamic-batch]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))
from torch_parity import read_safetensors, relative_error  # noqa: E402

SKIP = 77


def torch_step(module, x, labels, loss_kind, dtype):
    """Loss, gradients by parameter name and the running statistics
    (BatchNorm buffers) after one step in `dtype`."""
    import copy
    import torch
    import torch.nn.functional as F
    m = copy.deepcopy(module).to(dtype)
    m.zero_grad()
    inputs = torch.from_numpy(x)
    y = m(inputs if x.dtype == np.int64 else inputs.to(dtype))
    if loss_kind == "cross_entropy":
        loss = F.cross_entropy(y.reshape(-1, y.shape[-1]),
                               torch.from_numpy(labels).reshape(-1))
    else:
        loss = F.mse_loss(y, torch.from_numpy(labels).to(dtype))
    loss.backward()
    grads = {name: p.grad.detach().to(torch.float64).numpy()
             for name, p in m.named_parameters()}
    stats = {name: b.detach().to(torch.float64).numpy()
             for name, b in m.named_buffers()
             if name.endswith(("running_mean", "running_var"))}
    return float(loss.item()), grads, stats


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--remat", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--width", type=int, default=16)
    p.add_argument("--classes", type=int, default=4)
    p.add_argument("--side", type=int, default=4)
    p.add_argument("--opset", type=int, default=17)
    p.add_argument("--loss", choices=["cross_entropy", "mse"])
    p.add_argument("--dynamic-batch", action="store_true",
                   help="export with a dynamic batch dim and compile with "
                        "--input-shape")
    p.add_argument("--workdir")
    args = p.parse_args()
    try:
        import torch
        import export_onnx
    except ImportError as e:
        print(f"SKIP: {e}")
        return SKIP

    work = args.workdir or tempfile.mkdtemp(prefix="remat-onnx-parity-")
    os.makedirs(work, exist_ok=True)
    onnx_path = os.path.join(work, f"{args.model}.onnx")
    try:
        module = export_onnx.export(args.model, onnx_path, args.batch,
                                    args.width, args.classes, args.side,
                                    args.opset, args.dynamic_batch)
    except ImportError as e:  # torchvision's models without torchvision
        print(f"SKIP: {e}")
        return SKIP
    tokens = export_onnx.is_token_model(args.model)
    sample = export_onnx.sample_shape(args.model, args.width, args.side)
    outputs = 1 if args.model == "forum" else args.classes
    loss_kind = args.loss or ("mse" if outputs == 1 else "cross_entropy")
    # Positions of the loss: one per sample, or one per token.
    rows = (args.batch,) + sample if tokens else (args.batch,)

    rng = np.random.default_rng(1234)
    if tokens:
        x = rng.integers(0, args.classes, size=(args.batch,) + sample)
        x = x.astype(np.int64)
    else:
        x = rng.standard_normal((args.batch,) + sample).astype(np.float32)
    if loss_kind == "cross_entropy":
        labels = rng.integers(0, outputs, size=rows).astype(np.int64)
    else:
        labels = rng.standard_normal((args.batch, outputs)).astype(np.float32)
    np.save(os.path.join(work, "x.npy"), x)
    np.save(os.path.join(work, "labels.npy"), labels)

    plan = os.path.join(work, "m.plan")
    compile_cmd = [args.remat, "compile", onnx_path, "--emit=plan", "-o", plan]
    if args.loss:
        compile_cmd += ["--loss", args.loss]
    # torch's float buffers are initializers that torch does not train.
    frozen = [name for name, b in module.named_buffers()
              if b.is_floating_point()]
    if frozen:
        compile_cmd += ["--frozen", ",".join(frozen)]
    if args.dynamic_batch:
        dims = ",".join(str(d) for d in (args.batch,) + sample)
        compile_cmd += ["--input-shape", f"x={dims}"]
    r = subprocess.run(compile_cmd, capture_output=True, text=True)
    if r.returncode != 0 and "no ONNX support" in r.stderr:
        print("SKIP: " + r.stderr.strip())
        return SKIP
    if r.returncode != 0:
        print(f"FAIL: {' '.join(compile_cmd)}\n{r.stderr}")
        return 1
    grads_path = os.path.join(work, "grads.safetensors")
    saved_path = os.path.join(work, "saved.safetensors")
    log = os.path.join(work, "log.jsonl")
    run_cmd = [args.remat, "run", plan, "--steps", "1",
               "--data", "x=" + os.path.join(work, "x.npy"),
               "--data", "labels=" + os.path.join(work, "labels.npy"),
               "--dump-grads", grads_path, "--log", log, "--save", saved_path]
    r = subprocess.run(run_cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL: {' '.join(run_cmd)}\n{r.stderr}")
        return 1
    with open(log) as f:
        remat_loss = json.loads(f.readline())["loss"]
    remat_grads = read_safetensors(grads_path)
    remat_saved = read_safetensors(saved_path)

    loss64, grads64, stats64 = torch_step(module, x, labels, loss_kind,
                                          torch.float64)
    loss32, grads32, stats32 = torch_step(module, x, labels, loss_kind,
                                          torch.float32)
    rows = [("loss", relative_error([remat_loss], [loss64]),
             relative_error([loss32], [loss64]))]
    missing = sorted(set(grads64) - set(remat_grads))
    if missing:
        print(f"FAIL: remat dumped no gradient for {missing} "
              f"(it has {sorted(remat_grads)})")
        return 1
    for name in grads64:
        rows.append((name, relative_error(remat_grads[name], grads64[name]),
                     relative_error(grads32[name], grads64[name])))
    missing = sorted(set(stats64) - set(remat_saved))
    if missing:
        print(f"FAIL: remat --save holds no running statistic {missing}")
        return 1
    for name in stats64:
        rows.append((name + " (after)",
                     relative_error(remat_saved[name], stats64[name]),
                     relative_error(stats32[name], stats64[name])))

    width = max(len(r[0]) for r in rows)
    print(f"{args.model} (opset {args.opset}, batch {args.batch}, "
          f"loss {loss_kind}): relative error against PyTorch float64")
    print(f"{'tensor':<{width}}  {'remat':>10}  {'torch f32':>10}  "
          f"{'tolerance':>10}")
    failed = []
    for name, err, err32 in rows:
        tolerance = max(1e-4, 4 * err32)
        flag = "" if err <= tolerance else "  FAIL"
        print(f"{name:<{width}}  {err:10.3e}  {err32:10.3e}  "
              f"{tolerance:10.3e}{flag}")
        if flag:
            failed.append(name)
    print(f"loss: remat {remat_loss:.8f}, torch {loss64:.8f}; "
          f"max relative error {max(r[1] for r in rows):.3e}")
    if failed:
        print(f"FAIL: {', '.join(failed)} beyond tolerance")
        return 1
    print(f"OK: loss, {len(grads64)} gradients and {len(stats64)} running "
          f"statistics match PyTorch")
    return 0


if __name__ == "__main__":
    sys.exit(main())

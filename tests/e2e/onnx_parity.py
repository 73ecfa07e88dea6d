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

With --tie-aware the script also dumps remat's float32 input of every
MaxPool (`remat run --dump-values`) and compares remat with a second,
tie-aware float64 reference (tests/e2e/maxpool_ties.py): float64 PyTorch
whose MaxPools take remat's argmax in the windows whose two largest float64
entries are within 8 x D (D: the largest |remat - float64| of the pool's
input), and float64's own elsewhere. Its tolerance is 4 x PyTorch
float32's error against float64 that follows PyTorch float32's own argmax
at its near-ties (plain float64 where PyTorch float32 flips no window).
Both comparisons are printed; the exit code is the tie-aware one's, which
also requires remat's pool inputs to be within the acceptance rule of
float64 (so the ties cannot hide a remat error). The model
"maxpool-ties" (tests/e2e/maxpool_ties.py) has a near-tie that float32
breaks the other way in every sample.

With --precision fp64 remat compiles and runs the step in float64
(`remat compile --precision fp64`) and every tensor must be within
max(1e-8, 4 x E x 2^-29) of PyTorch float64 (relative L2), E PyTorch
float32's own error on it scaled to float64's unit roundoff (tests/e2e/
onnx_zoo.py).

With --microbatches K (and --dynamic-batch) remat compiles the step split
into K micro-batches with --microbatch-norm per-slice, and the references
are PyTorch's manual gradient accumulation: K slices, each slice's loss
divided by K, one backward each, batch norm on each slice's statistics
(its running statistics updated once per slice).

Exit codes: 0 parity holds, 1 it does not (or remat failed), 77 PyTorch is
not installed or this remat has no ONNX support (ctest: skipped).

usage: onnx_parity.py --remat REMAT --model MODEL (tools/export_onnx.py)
           [--batch N] [--width W] [--classes C] [--side S] [--opset K]
           [--loss L] [--dynamic-batch] [--tie-aware] [--seed N]
           [--precision fp32|fp64] [--microbatches K]
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))
from torch_parity import read_safetensors, relative_error  # noqa: E402
import workdir  # noqa: E402

SKIP = 77
# remat in float64 against PyTorch float64 (--precision fp64): relative L2
# error per tensor.
FP64_TOLERANCE = 1e-8
FP64_OVER_FP32 = 2.0 ** -29


def fp64_tolerance(spread):
    """The float64 rule's tolerance on a tensor whose PyTorch float32
    error is `spread` (tests/e2e/onnx_zoo.py)."""
    return max(FP64_TOLERANCE, 4 * spread * FP64_OVER_FP32)


def one_ulp(t, generator):
    """`t` with each element moved one unit in the last place up or down, at
    random."""
    import torch
    up = torch.rand(t.shape, generator=generator) < 0.5
    return torch.where(up, torch.nextafter(t, torch.full_like(t, float("inf"))),
                       torch.nextafter(t, torch.full_like(t, -float("inf"))))


def torch_step(module, x, labels, loss_kind, dtype, pool_inputs=None,
               mkldnn=True, perturb=None, slices=1, autocast=False):
    """Loss, gradients by parameter name and the running statistics
    (BatchNorm buffers) after one step in `dtype`. pool_inputs: a dict whose
    keys name submodules; each gets its forward input (float64 numpy).
    mkldnn: PyTorch's oneDNN convolutions (False: its native ones).
    perturb: a seed: every parameter, a floating-point input and the output
    of every leaf module moved by one ulp of `dtype` in random directions
    (onnx_zoo.py's spread). slices: PyTorch's manual gradient
    accumulation: the batch in that many equal slices, each slice's loss
    divided by their number and its backward run in turn (batch norm sees
    each slice and updates its running statistics once per slice); the
    loss is the sum of the divided losses. autocast: the forward under
    torch.autocast("cpu", torch.bfloat16) (dtype float32)."""
    import contextlib
    import copy
    import torch
    import torch.nn.functional as F
    import export_onnx
    m = export_onnx.as_exported(copy.deepcopy(module).to(dtype))
    if dtype == torch.float64:
        m = export_onnx.float64_reference(m)
    m.train()
    m.zero_grad()
    for name in pool_inputs or {}:
        def hook(_, inputs, name=name):
            pool_inputs[name] = inputs[0].detach().to(torch.float64).numpy()
        m.get_submodule(name).register_forward_pre_hook(hook)
    inputs = torch.from_numpy(x)
    if perturb is not None:
        g = torch.Generator().manual_seed(perturb)
        with torch.no_grad():
            for p in m.parameters():
                p.copy_(one_ulp(p, g))
        if x.dtype != np.int64:
            inputs = one_ulp(inputs.to(dtype), g)

        def moved(_, __, out):
            if torch.is_tensor(out) and out.is_floating_point():
                # (The derivative passes through: nextafter has none.)
                return out + (one_ulp(out.detach(), g) - out.detach())
            return out
        for sub in m.modules():
            if not list(sub.children()):
                sub.register_forward_hook(moved)
    inputs = inputs if x.dtype == np.int64 else inputs.to(dtype)
    total = 0.0
    with torch.backends.mkldnn.flags(enabled=mkldnn):
        for part, target in zip(inputs.chunk(slices),
                                torch.from_numpy(labels).chunk(slices)):
            region = torch.autocast("cpu", dtype=torch.bfloat16) \
                if autocast else contextlib.nullcontext()
            with region:
                y = m(part)
                if loss_kind == "cross_entropy":
                    loss = F.cross_entropy(y.reshape(-1, y.shape[-1]),
                                           target.reshape(-1))
                else:
                    loss = F.mse_loss(y, target.to(dtype))
            loss = loss / slices
            loss.backward()
            total += float(loss.item())
    grads = {name: p.grad.detach().to(torch.float64).numpy()
             for name, p in m.named_parameters()}
    stats = {name: b.detach().to(torch.float64).numpy()
             for name, b in m.named_buffers()
             if name.endswith(("running_mean", "running_var"))}
    return total, grads, stats


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
    p.add_argument("--tie-aware", action="store_true",
                   help="also compare with the tie-aware float64 reference "
                        "(tests/e2e/maxpool_ties.py); its verdict is the "
                        "exit code")
    p.add_argument("--min-flips", type=int, default=0,
                   help="--tie-aware: fail unless at least N windows pick "
                        "another entry in remat than in float64 (tests)")
    p.add_argument("--seed", type=int, default=1234,
                   help="seed of the batch (images or tokens, and labels); "
                        "the weights are the export's (default: 1234)")
    p.add_argument("--precision", choices=["fp32", "bf16", "fp64"],
                   default="fp32",
                   help="fp64: remat computes in float64 and must match "
                        "PyTorch float64 (the rule above)")
    p.add_argument("--microbatches", type=int, default=1,
                   help="with --dynamic-batch: compile with --microbatches "
                        "K --microbatch-norm per-slice and compare with "
                        "PyTorch's manual accumulation over K slices")
    p.add_argument("--workdir")
    args = p.parse_args()
    if args.microbatches > 1 and not args.dynamic_batch:
        p.error("--microbatches needs --dynamic-batch")
    try:
        import torch
        import export_onnx
    except ImportError as e:
        print(f"SKIP: {e}")
        return SKIP

    return workdir.run_in(lambda work: run_comparison(args, work),
                          "remat-onnx-parity-", given=args.workdir)


def run_comparison(args, work):
    """Runs the comparison in the folder `work`: 0 parity holds, 1 not."""
    import torch
    import export_onnx
    onnx_path = os.path.join(work, f"{args.model}.onnx")
    crafted = None
    try:
        if args.model == "maxpool-ties":  # tests/e2e/maxpool_ties.py
            import maxpool_ties
            module, crafted = maxpool_ties.export_model(
                onnx_path, args.batch, args.classes, args.opset)
        else:
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

    rng = np.random.default_rng(args.seed)
    if tokens:
        x = rng.integers(0, args.classes, size=(args.batch,) + sample)
        x = x.astype(np.int64)
    else:
        x = rng.standard_normal((args.batch,) + sample).astype(np.float32)
    if crafted is not None:
        x = crafted
    if loss_kind == "cross_entropy":
        labels = rng.integers(0, outputs, size=rows).astype(np.int64)
    else:
        labels = rng.standard_normal((args.batch, outputs)).astype(np.float32)
    np.save(os.path.join(work, "x.npy"), x)
    np.save(os.path.join(work, "labels.npy"), labels)

    plan = os.path.join(work, "m.plan")
    compile_cmd = [args.remat, "compile", onnx_path, "--emit=plan", "-o", plan,
                   "--precision", args.precision]
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
    if args.microbatches > 1:
        compile_cmd += ["--microbatches", str(args.microbatches),
                        "--microbatch-norm", "per-slice"]
    r = subprocess.run(compile_cmd, capture_output=True, text=True)
    if r.returncode != 0 and "no ONNX support" in r.stderr:
        print("SKIP: " + r.stderr.strip())
        return SKIP
    if r.returncode != 0:
        print(f"FAIL: {' '.join(compile_cmd)}\n{r.stderr}")
        return 1
    # --tie-aware: each nn.MaxPool2d (by module name) and the plan buffer
    # of its input, found from the plan's max_pool2d steps (named after the
    # ONNX node, /features/features.23/MaxPool).
    pools, pool_buffers = [], {}
    if args.tie_aware:
        from torch import nn
        with open(plan) as f:
            plan_json = json.load(f)
        buffers = plan_json["buffers"]
        for step in plan_json["steps"]:
            if step["op"] != "max_pool2d" or step.get("recompute"):
                continue
            node = buffers[step["outputs"][0]]["name"]
            parts = node.strip("/").split("/")
            name = parts[-2] if len(parts) >= 2 else ""
            try:
                sub = module.get_submodule(name) if name else None
            except AttributeError:
                sub = None
            if not isinstance(sub, nn.MaxPool2d):
                print(f"FAIL: --tie-aware: MaxPool node '{node}' is not an "
                      f"nn.MaxPool2d of the module ('{name}')")
                return 1
            pools.append(name)
            pool_buffers[name] = buffers[step["inputs"][0]]["name"]
        print(f"tie-aware: {len(pools)} MaxPools: " +
              ", ".join(f"{n} (input {pool_buffers[n]})" for n in pools))
    grads_path = os.path.join(work, "grads.safetensors")
    saved_path = os.path.join(work, "saved.safetensors")
    log = os.path.join(work, "log.jsonl")
    run_cmd = [args.remat, "run", plan, "--steps", "1",
               "--data", "x=" + os.path.join(work, "x.npy"),
               "--data", "labels=" + os.path.join(work, "labels.npy"),
               "--dump-grads", grads_path, "--log", log, "--save", saved_path]
    values_path = os.path.join(work, "pools.safetensors")
    if pools:
        run_cmd += ["--dump-values", values_path, "--dump-names",
                    ",".join(pool_buffers[n] for n in pools)]
    r = subprocess.run(run_cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL: {' '.join(run_cmd)}\n{r.stderr}")
        return 1
    with open(log) as f:
        remat_loss = json.loads(f.readline())["loss"]
    remat_grads = read_safetensors(grads_path)
    remat_saved = read_safetensors(saved_path)
    remat_pools = read_safetensors(values_path) if pools else {}

    if args.precision == "bf16":
        # Judged as torch_parity.py --precision bf16 judges: against
        # torch.autocast, with float64 as the truth.
        from torch_parity import judge_bf16
        loss64, grads64, _ = torch_step(module, x, labels, loss_kind,
                                        torch.float64)
        autocast = torch_step(module, x, labels, loss_kind, torch.float32,
                              autocast=True)
        return judge_bf16(remat_loss, remat_grads, grads64, loss64,
                          autocast[:2], loose_loss=True)
    pools64 = {name: None for name in pools}
    pools32 = {name: None for name in pools}
    loss64, grads64, stats64 = torch_step(module, x, labels, loss_kind,
                                          torch.float64, pools64,
                                          slices=args.microbatches)
    loss32, grads32, stats32 = torch_step(module, x, labels, loss_kind,
                                          torch.float32, pools32,
                                          slices=args.microbatches)
    missing = sorted(set(grads64) - set(remat_grads))
    if missing:
        print(f"FAIL: remat dumped no gradient for {missing} "
              f"(it has {sorted(remat_grads)})")
        return 1
    missing = sorted(set(stats64) - set(remat_saved))
    if missing:
        print(f"FAIL: remat --save holds no running statistic {missing}")
        return 1
    # PyTorch float32's own error against plain float64: the tolerance of
    # both comparisons.
    err32 = {"loss": relative_error([loss32], [loss64])}
    err32.update({name: relative_error(grads32[name], grads64[name])
                  for name in grads64})
    err32.update({name + " (after)": relative_error(stats32[name],
                                                   stats64[name])
                  for name in stats64})
    remat_values = {"loss": [remat_loss]}
    remat_values.update(remat_grads)
    remat_values.update({name + " (after)": remat_saved[name]
                         for name in stats64})

    def references(loss, grads, stats):
        ref = {"loss": [loss]}
        ref.update(grads)
        ref.update({name + " (after)": stats[name] for name in stats})
        return ref

    def compare(title, loss, grads, stats, errors32=err32):
        ref = references(loss, grads, stats)
        rows = [(name, relative_error(remat_values[name], ref[name]),
                 errors32[name]) for name in ref]
        width = max(len(r[0]) for r in rows)
        print(f"{args.model} (opset {args.opset}, batch {args.batch}, "
              f"loss {loss_kind}): relative error against {title}")
        print(f"{'tensor':<{width}}  {'remat':>10}  {'torch f32':>10}  "
              f"{'tolerance':>10}")
        failed = []
        for name, err, e32 in rows:
            tolerance = (fp64_tolerance(e32) if args.precision == "fp64"
                         else max(1e-4, 4 * e32))
            flag = "" if err <= tolerance else "  FAIL"
            print(f"{name:<{width}}  {err:10.3e}  {e32:10.3e}  "
                  f"{tolerance:10.3e}{flag}")
            if flag:
                failed.append(name)
        print(f"loss: remat {remat_loss:.8f}, reference {loss:.8f}; "
              f"max relative error {max(r[1] for r in rows):.3e}")
        return failed

    failed = compare("PyTorch float64", loss64, grads64, stats64)
    if failed:
        print(f"FAIL: {', '.join(failed)} beyond tolerance")
        verdict = 1
    else:
        print(f"OK: loss, {len(grads64)} gradients and {len(stats64)} "
              f"running statistics match PyTorch")
        verdict = 0
    if not args.tie_aware:
        return verdict
    torch32 = references(loss32, grads32, stats32)
    return tie_aware(args, module, x, labels, loss_kind, pools, pool_buffers,
                     remat_pools, pools64, pools32, compare, references,
                     torch32, verdict)


def tie_aware_step(module, pools, inputs, x, labels, loss_kind):
    """One float64 step of `module` whose MaxPools (names `pools`) follow
    the float32 pool inputs `inputs` (by name) at near-ties; returns the
    step's results and each pool's sink (statistics, float64 input)."""
    import copy
    import torch
    import maxpool_ties
    tied = copy.deepcopy(module)
    sinks = {}
    for name in pools:
        parent_name, _, child = name.rpartition(".")
        parent = tied.get_submodule(parent_name) if parent_name else tied
        sinks[name] = {}
        setattr(parent, child, maxpool_ties.make_module(
            module.get_submodule(name), inputs[name], sink=sinks[name]))
    return torch_step(tied, x, labels, loss_kind, torch.float64), sinks


def tie_aware(args, module, x, labels, loss_kind, pools, pool_buffers,
              remat_pools, pools64, pools32, compare, references, torch32,
              strict_verdict):
    """The tie-aware comparison (module docstring, maxpool_ties.py)."""
    import torch
    import maxpool_ties
    (loss_t, grads_t, stats_t), sinks = tie_aware_step(
        module, pools, {n: remat_pools[pool_buffers[n]] for n in pools}, x,
        labels, loss_kind)
    print()
    print(f"tie-aware reference: float64 PyTorch whose MaxPools take remat's "
          f"argmax in the windows whose two largest float64 entries are "
          f"within tol = {maxpool_ties.TIE_FACTOR:g} x D (D: the largest "
          f"|remat - float64| of the pool's input), float64's own elsewhere")
    print(f"{'pool':<12} {'windows':>8} {'D':>9} {'D/max':>9} {'tol':>9} "
          f"{'near':>5} {'flipped':>7} {'gap/top1':>9} {'gap/D':>6} "
          f"{'f32 D':>9} {'f32 flips':>9} {'err remat':>9} {'err f32':>9}")
    invalid = []
    torch32_flips_total = 0
    for name in pools:
        st, own64 = sinks[name]["stats"], sinks[name]["input"]
        remat_in = remat_pools[pool_buffers[name]]
        # PyTorch float32 against plain float64 at the same pool: its D and
        # the windows where it picks another entry.
        geometry = maxpool_ties.pool_geometry(module.get_submodule(name))
        w64 = maxpool_ties.windows(torch.from_numpy(pools64[name]),
                                   *geometry).numpy()
        w32 = maxpool_ties.windows(torch.from_numpy(
            pools32[name].astype(np.float32)), *geometry).numpy()
        _, st32 = maxpool_ties.select(w64, w32)
        torch32_flips = st32["flipped"] + st32["differ_outside"]
        torch32_flips_total += torch32_flips
        err_remat = relative_error(remat_in, own64)
        err_torch = relative_error(pools32[name], pools64[name])

        def opt(v, fmt):
            return "-" if v is None else format(v, fmt)
        print(f"{name:<12} {st['windows']:>8} {st['D']:9.2e} {st['d']:9.2e} "
              f"{st['tol']:9.2e} {st['near']:>5} {st['flipped']:>7} "
              f"{opt(st['max_flipped_gap'], '9.2e'):>9} "
              f"{opt(st['max_flipped_gap_d'], '6.3f'):>6} "
              f"{st32['D']:9.2e} {torch32_flips:>9} {err_remat:9.2e} "
              f"{err_torch:9.2e}")
        if err_remat > max(1e-4, 4 * err_torch):
            invalid.append(f"{name}: remat's input {err_remat:.3e} from "
                           f"float64, PyTorch float32's {err_torch:.3e}")
        if st["differ_outside"]:
            invalid.append(f"{name}: {st['differ_outside']} windows pick "
                           f"another entry outside the near-ties")
    near = sum(sinks[n]["stats"]["near"] for n in pools)
    flipped = sum(sinks[n]["stats"]["flipped"] for n in pools)
    print(f"{near} near-tie windows, {flipped} of them where remat's argmax "
          f"is not float64's (gap/top1, gap/D: the largest gap of those, "
          f"relative to their maximum and to D; f32: PyTorch float32 "
          f"against plain float64; err: relative L2 error of the pool "
          f"input, remat against the tie-aware reference's)")
    # The tolerance: PyTorch float32's own error against float64 that
    # follows PyTorch float32's argmax at its near-ties (plain float64
    # where it picks as float64 everywhere), so that a window PyTorch
    # float32 flips cannot loosen the tolerance.
    if torch32_flips_total:
        (l32, g32, s32), _ = tie_aware_step(
            module, pools, {n: pools32[n].astype(np.float32) for n in pools},
            x, labels, loss_kind)
        ref32 = references(l32, g32, s32)
        errors32 = {name: relative_error(torch32[name], ref32[name])
                    for name in ref32}
        print(f"PyTorch float32 picks another entry than float64 in "
              f"{torch32_flips_total} windows: the tolerance below is "
              f"4 x its error against float64 following its own picks "
              f"there")
    else:
        errors32 = None
        print("PyTorch float32 picks as float64 in every window: the "
              "tolerance below is the strict one")
    failed = compare("the tie-aware float64 reference", loss_t, grads_t,
                     stats_t, *([errors32] if errors32 else []))
    if flipped < args.min_flips:
        print(f"FAIL: {flipped} windows flipped, --min-flips {args.min_flips}")
        return 1
    print(f"strict (plain float64): "
          f"{'OK' if strict_verdict == 0 else 'FAIL'}")
    if invalid:
        print("FAIL: the tie-aware reference does not apply: " +
              "; ".join(invalid))
        return 1
    if failed:
        print(f"FAIL (tie-aware): {', '.join(failed)} beyond tolerance")
        return 1
    print(f"OK (tie-aware): loss, {len(grads_t)} gradients and "
          f"{len(stats_t)} running statistics match the tie-aware "
          f"reference")
    return 0


if __name__ == "__main__":
    sys.exit(main())

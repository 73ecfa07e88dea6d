#!/usr/bin/env python3
"""Whether two `remat run` results are bitwise equal, and if not, by how much.

  budgets_bitwise.py --a NAME=LOG.jsonl,GRADS.safetensors \\
                     --b NAME=LOG.jsonl,GRADS.safetensors \\
                     [--same-workspace LOG.jsonl,GRADS.safetensors] [--out J]

A and B are runs of one model's plans at two budgets
(tests/device/device-check.sh: store-all and half the activations), each
with --log and --dump-grads.
Compares every step's loss and every step-1 gradient bit for bit (float32
bits; NaNs compare by bits too). Prints one line:

  bitwise: yes (6 losses, 148 gradients, 124439808 values)
  bitwise: NO: losses differ at 3 of 6 steps (largest |a-b| 2.4e-07 at
    step 2); 17 of 148 gradients differ, largest |a-b| 3.1e-09 in
    'h.3.mlp.w' [index 1234] (relative to its largest |value|: 4.2e-07)

and, with --same-workspace (A's plan rerun with B's cuBLAS workspace and
attention scratch, REMAT_CUDA_CUBLAS_WORKSPACE_BYTES and
REMAT_CUDA_ATTENTION_SCRATCH_BYTES), why:

  why: A with B's workspace equals B: the workspace (cuBLAS's algorithm for
    its size, attention's batch of slices) makes the difference, not the plan
  why: A with B's workspace equals A: the plans themselves differ (buffer
    layout, recomputation)

Exit status 0 either way (the result is a finding), 2 on unreadable input.
numpy is used where present (the GPT-2 124M gradients are 124M floats),
else the stdlib.
"""
import argparse
import json
import struct
import sys

try:
    import numpy as np
except ImportError:  # pragma: no cover - the stdlib path is the fallback
    np = None


def read_safetensors(path):
    """name -> (shape, float32 bytes) of the F32 tensors of a file."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            raise ValueError(f"{path}: {name} is {info['dtype']}, not F32")
        begin, end = info["data_offsets"]
        out[name] = (info["shape"], data[begin:end])
    return out


def read_losses(path):
    with open(path) as f:
        return [json.loads(line)["loss"] for line in f if line.strip()]


def compare_tensor(a, b):
    """(number of differing elements, largest |a-b|, its index, largest
    |b|) of two float32 byte strings of one length."""
    if a == b:
        return 0, 0.0, -1, 0.0
    if np is not None:
        x = np.frombuffer(a, dtype=np.float32).astype(np.float64)
        y = np.frombuffer(b, dtype=np.float32).astype(np.float64)
        differ = np.frombuffer(a, dtype=np.uint32) != np.frombuffer(
            b, dtype=np.uint32)
        diff = np.where(differ, np.abs(x - y), 0.0)
        diff = np.where(np.isnan(diff), np.inf, diff)
        i = int(np.argmax(diff))
        return (int(differ.sum()), float(diff[i]), i,
                float(np.nanmax(np.abs(y))) if y.size else 0.0)
    from array import array
    x, y = array("f"), array("f")
    x.frombytes(a)
    y.frombytes(b)
    ux, uy = array("I"), array("I")
    ux.frombytes(a)
    uy.frombytes(b)
    count, worst, where, scale = 0, 0.0, -1, 0.0
    for i, (p, q) in enumerate(zip(x, y)):
        scale = max(scale, abs(q)) if q == q else scale
        if ux[i] != uy[i]:
            count += 1
            d = abs(p - q)
            d = float("inf") if d != d else d
            if d > worst or where < 0:
                worst, where = d, i
    return count, worst, where, scale


def load(spec):
    """NAME=LOG,GRADS or LOG,GRADS -> (name, losses, grads)."""
    name, _, files = spec.rpartition("=")
    log, grads = files.split(",")
    return name or log, read_losses(log), read_safetensors(grads)


def compare(a, b):
    """A dict describing how run b differs from run a."""
    (_, la, ga), (_, lb, gb) = a, b
    r = {"losses": len(la), "gradients": len(ga), "values": 0}
    steps = min(len(la), len(lb))
    loss_diffs = [(abs(la[i] - lb[i]), i + 1) for i in range(steps)
                  if struct.pack("<f", la[i]) != struct.pack("<f", lb[i])]
    r["loss_steps_differing"] = len(loss_diffs)
    if len(la) != len(lb):
        r["loss_count_mismatch"] = [len(la), len(lb)]
    if loss_diffs:
        d, step = max(loss_diffs)
        r["largest_loss_difference"] = d
        r["largest_loss_difference_step"] = step
    names = sorted(set(ga) | set(gb))
    differing, worst = 0, None
    for name in names:
        if name not in ga or name not in gb or ga[name][0] != gb[name][0]:
            differing += 1
            r.setdefault("gradient_mismatch", []).append(name)
            continue
        r["values"] += len(ga[name][1]) // 4
        count, d, where, scale = compare_tensor(ga[name][1], gb[name][1])
        if count:
            differing += 1
            if worst is None or d > worst[0]:
                worst = (d, name, where, scale, count)
    r["gradients_differing"] = differing
    if worst:
        d, name, where, scale, count = worst
        r["largest_gradient_difference"] = d
        r["largest_gradient_difference_in"] = name
        r["largest_gradient_difference_index"] = where
        r["largest_gradient_difference_relative"] = (d / scale if scale
                                                     else float("inf"))
    r["bitwise"] = (not loss_diffs and differing == 0 and
                    "loss_count_mismatch" not in r)
    return r


def describe(r):
    if r["bitwise"]:
        return (f"bitwise: yes ({r['losses']} losses, {r['gradients']} "
                f"gradients, {r['values']} values)")
    parts = []
    if r.get("loss_count_mismatch"):
        parts.append("loss counts differ: %d vs %d" %
                     tuple(r["loss_count_mismatch"]))
    if r["loss_steps_differing"]:
        parts.append(f"losses differ at {r['loss_steps_differing']} of "
                     f"{r['losses']} steps (largest |a-b| "
                     f"{r['largest_loss_difference']:.3g} at step "
                     f"{r['largest_loss_difference_step']})")
    else:
        parts.append(f"all {r['losses']} losses equal")
    if r["gradients_differing"]:
        text = (f"{r['gradients_differing']} of {r['gradients']} gradients "
                f"differ")
        if "largest_gradient_difference" in r:
            text += (f", largest |a-b| {r['largest_gradient_difference']:.3g}"
                     f" in '{r['largest_gradient_difference_in']}' [index "
                     f"{r['largest_gradient_difference_index']}] (relative to "
                     f"its largest |value|: "
                     f"{r['largest_gradient_difference_relative']:.3g})")
        if r.get("gradient_mismatch"):
            text += (" (names or shapes differ: " +
                     ", ".join(r["gradient_mismatch"][:5]) + ")")
        parts.append(text)
    else:
        parts.append(f"all {r['gradients']} gradients equal")
    return "bitwise: NO: " + "; ".join(parts)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--a", required=True, help="NAME=LOG.jsonl,GRADS")
    p.add_argument("--b", required=True, help="NAME=LOG.jsonl,GRADS")
    p.add_argument("--same-workspace", help="LOG.jsonl,GRADS: A's plan with "
                   "B's workspace")
    p.add_argument("--out", help="JSON result")
    args = p.parse_args(argv)
    try:
        a, b = load(args.a), load(args.b)
        c = load(args.same_workspace) if args.same_workspace else None
    except (OSError, ValueError, KeyError) as e:
        print(f"budgets_bitwise: cannot read the runs: {e}", file=sys.stderr)
        return 2
    result = compare(a, b)
    result["a"], result["b"] = a[0], b[0]
    print(f"{a[0]} vs {b[0]}: " + describe(result))
    if c is not None and not result["bitwise"]:
        like_b, like_a = compare(c, b)["bitwise"], compare(c, a)["bitwise"]
        if like_b:
            why = ("A with B's workspace equals B: the workspace (cuBLAS's "
                   "algorithm for its size, attention's batch of slices) "
                   "makes the difference, not the plan")
        elif like_a:
            why = ("A with B's workspace equals A: the plans themselves "
                   "differ (buffer layout, recomputation)")
        else:
            why = ("A with B's workspace equals neither: both the workspace "
                   "and the plans change bits")
        result["why"] = why
        print("why: " + why)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

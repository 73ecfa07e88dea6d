#!/usr/bin/env python3
"""The model zoo against PyTorch: one training step per tensor, in float64
and in float32 on every CPU convolution path (docs/onnx.md, "The model
zoo").

For each model of tools/zoo_models.py: export it (training mode, opset 17,
no constant folding), compile the .onnx file with remat, run one step on a
fixed batch from the exported weights, and compare the loss, every
parameter gradient and every running statistic after the step with the
same step of the torch module in float64 (relative L2 error per tensor):

  float64  `remat compile --precision fp64`: every tensor within
           max(1e-8, 4 x S x 2^-29) of PyTorch float64, S the spread below:
           float32's measured error scaled from float32's unit roundoff
           (2^-24) to float64's (2^-53). A gradient that cancels to almost
           nothing (a bias before a batch norm, which removes it) has S of
           1 or more, and float64's own error on it is 1e-7 or more.
  float32  the default plan, run on each CPU convolution path of remat
           (REMAT_CPU_CONV=auto, plain, im2col; one run for a model without
           convolutions): every tensor within max(1e-4, 4 x S), S the
           largest float32 error on that tensor of PyTorch's two
           convolution paths (oneDNN and native) and of PERTURBED oneDNN
           steps with the weights and input moved one ulp up or down at
           random (how far float32 rounding alone can move the tensor):
           the spread rule.

A tensor on which PyTorch float32 itself is off by more than 1e-3 (float32
keeps fewer than 4 of its 7 digits there: batch norm over tiny maps) is
ill-conditioned: float32 cannot judge it, and its verdict is float64's.

A model whose entry lists graph ops (the transformers, and the patterns of
`--models patterns`) must also show them in `remat compile --emit=graph`
that many times: the attention and GELU the importer reads as one op each
(docs/onnx.md, "Patterns read as one op").

Statuses: ok; ill-conditioned (every tensor passes in float64 and every
well-conditioned one in float32, and some tensors are ill-conditioned:
their count and float32's spread are shown, with how many of them remat's
float32 keeps within the spread rule anyway, which decides nothing);
FAIL (a tensor beyond its float64 tolerance, or a well-conditioned one
beyond the spread rule); stopped (remat refuses the model with a message:
STOPPED below names the op or construct).

Exit codes: 0 every model ok, ill-conditioned, or stopped as STOPPED
expects; 1 otherwise (or --expect not met); 77 PyTorch or torchvision
missing, or no ONNX support in this remat.

usage: onnx_zoo.py --remat REMAT [--models A,B|all|patterns] [--shard K/N]
                   [--batch N] [--seed N] [--table FILE.md]
                   [--expect STATUS] [--verbose] [--workdir DIR]
"""
import argparse
import copy
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))
from onnx_parity import SKIP, fp64_tolerance, torch_step  # noqa: E402
from torch_parity import read_safetensors, relative_error  # noqa: E402
import workdir  # noqa: E402

# PyTorch float32's own error beyond which a tensor is ill-conditioned.
ILL_CONDITIONED = 1e-3
CONV_PATHS = ["auto", "plain", "im2col"]
# PyTorch float32 steps with the weights and input moved one ulp at random,
# besides its two convolution paths, in the spread (module docstring).
PERTURBED = 3
# Models remat refuses, each with a piece of the message that names what
# stops it (docs/onnx.md lists them).
STOPPED = {}


def reference_step(module, x, labels, loss_kind, dtype, mkldnn=True,
                   perturb=None):
    """onnx_parity.torch_step's loss, parameter gradients and running
    statistics after the step (named "NAME (after)") in one dict."""
    loss, grads, stats = torch_step(module, x, labels, loss_kind, dtype,
                                    mkldnn=mkldnn, perturb=perturb)
    out = {"loss": np.array([loss])}
    out.update(grads)
    out.update({name + " (after)": v for name, v in stats.items()})
    return out


def remat_step(remat, onnx_path, work, tag, x_path, labels_path, loss,
               precision, env_paths):
    """remat's loss, gradients and running statistics after one step, per
    convolution path: ({path: values}, None) or (None, message)."""
    plan = os.path.join(work, f"{tag}.plan")
    cmd = [remat, "compile", onnx_path, "--emit=plan", "-o", plan,
           "--precision", precision, "--loss", loss]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, (r.stderr.strip() or r.stdout.strip()), cmd
    results = {}
    for path in env_paths:
        grads = os.path.join(work, f"{tag}-{path}.grads.safetensors")
        saved = os.path.join(work, f"{tag}-{path}.saved.safetensors")
        log = os.path.join(work, f"{tag}-{path}.log")
        run = [remat, "run", plan, "--steps", "1", "--data", "x=" + x_path,
               "--data", "labels=" + labels_path, "--dump-grads", grads,
               "--save", saved, "--log", log]
        env = dict(os.environ, REMAT_CPU_CONV=path)
        r = subprocess.run(run, capture_output=True, text=True, env=env)
        if r.returncode != 0:
            return None, r.stderr.strip(), run
        with open(log) as f:
            values = {"loss": np.array([json.loads(f.readline())["loss"]])}
        values.update(read_safetensors(grads))
        state = read_safetensors(saved)
        values.update({name + " (after)": v for name, v in state.items()})
        results[path] = values
    return results, None, None


def onnx_ops(path):
    """The model's ONNX op types (sorted), or [] without the onnx module."""
    try:
        import onnx
    except ImportError:
        return []
    return sorted({n.op_type for n in onnx.load(path).graph.node})


def graph_mismatches(remat, onnx_path, expected):
    """How `remat compile --emit=graph` differs from `expected` ({graph op:
    count}): a list of messages."""
    if not expected:
        return []
    r = subprocess.run([remat, "compile", onnx_path, "--emit=graph", "-o",
                        "-"], capture_output=True, text=True)
    if r.returncode != 0:
        return [f"--emit=graph failed: {r.stderr.strip()}"]
    found = {}
    for line in r.stdout.splitlines():
        m = re.search(r"= graph\.(\w+) ", line)
        if m:
            found[m.group(1)] = found.get(m.group(1), 0) + 1
    return [f"graph: {found.get(op, 0)} {op} op(s), expected {n}"
            for op, n in sorted(expected.items()) if found.get(op, 0) != n]


def check_model(args, name, work):
    """One model's row: a dict with status, counts and worst errors."""
    import torch
    import zoo_models
    entry = {**zoo_models.ZOO, **zoo_models.PATTERNS}[name]
    batch = args.batch or entry.batch
    seed = args.seed + entry.seed
    module = zoo_models.build(name, seed)
    params = sum(p.numel() for p in module.parameters())
    row = {"model": name, "family": entry.family, "note": entry.note,
           "input": "x".join(map(str, entry.shape)), "batch": batch,
           "params": params, "ops": [], "status": "", "detail": ""}
    onnx_path = os.path.join(work, f"{name}.onnx")
    start = time.time()
    try:
        zoo_models.export(name, onnx_path, module, batch)
    except Exception as e:  # the exporter's refusal
        row["status"] = "not exported"
        row["detail"] = f"torch.onnx.export: {str(e).splitlines()[0]}"
        return row
    row["ops"] = onnx_ops(onnx_path)

    rng = np.random.default_rng(seed + 1)
    if entry.tokens:
        x = rng.integers(0, zoo_models.VOCAB,
                         size=(batch, *entry.shape)).astype(np.int64)
    else:
        x = rng.standard_normal((batch, *entry.shape)).astype(np.float32)
    with torch.no_grad():
        y = copy.deepcopy(module)(torch.from_numpy(x))
    if entry.loss == "cross_entropy":
        labels = rng.integers(0, y.shape[-1], size=y.shape[:-1])
        labels = labels.astype(np.int64)
    else:
        labels = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    x_path = os.path.join(work, f"{name}.x.npy")
    labels_path = os.path.join(work, f"{name}.labels.npy")
    np.save(x_path, x)
    np.save(labels_path, labels)

    ref = reference_step(module, x, labels, entry.loss, torch.float64)
    torch32 = [reference_step(module, x, labels, entry.loss, torch.float32, m)
               for m in (True, False)]
    torch32 += [reference_step(module, x, labels, entry.loss, torch.float32,
                               perturb=seed + p) for p in range(PERTURBED)]
    spread = {k: max(relative_error(t[k], ref[k]) for t in torch32)
              for k in ref}

    has_conv = "Conv" in row["ops"] or not row["ops"]
    got64, why, cmd = remat_step(args.remat, onnx_path, work, "fp64", x_path,
                                 labels_path, entry.loss, "fp64", ["auto"])
    if got64 is None:
        row["status"] = "stopped"
        row["detail"] = why.splitlines()[-1] if why else " ".join(cmd)
        return row
    got32, why, cmd = remat_step(args.remat, onnx_path, work, "fp32", x_path,
                                 labels_path, entry.loss, "fp32",
                                 CONV_PATHS if has_conv else ["auto"])
    if got32 is None:
        row["status"] = "FAIL"
        row["detail"] = f"float32: {' '.join(cmd)}: {why}"
        return row

    failed = graph_mismatches(args.remat, onnx_path, entry.graph)
    ill = []
    worst64, worst32 = 0.0, 0.0
    lines = [f"{'tensor':<44} {'fp64 err':>9} {'fp64 tol':>9} "
             f"{'torch f32':>9} "
             + " ".join(f"{p:>9}" for p in got32) + f" {'tolerance':>9}"]
    for k in ref:
        missing = [p for p, v in list(got32.items()) + [("fp64", got64["auto"])]
                   if k not in v]
        if missing:
            failed.append(f"{k} (remat has no such tensor: {missing})")
            continue
        e64 = relative_error(got64["auto"][k], ref[k])
        tol64 = fp64_tolerance(spread[k])
        worst64 = max(worst64, e64 / tol64)
        tol = max(1e-4, 4 * spread[k])
        e32 = {p: relative_error(v[k], ref[k]) for p, v in got32.items()}
        ratio = max(e32.values()) / tol
        if e64 > tol64:
            failed.append(f"{k}: float64 error {e64:.2e} > {tol64:.2e}")
        if spread[k] > ILL_CONDITIONED:
            ill.append((spread[k], k, ratio <= 1))
        elif ratio > 1:
            failed.append(f"{k}: float32 {max(e32.values()):.2e} > "
                          f"tolerance {tol:.2e}")
        if spread[k] <= ILL_CONDITIONED:
            worst32 = max(worst32, ratio)
        flag = "  FAIL" if (e64 > tol64 or
                            (ratio > 1 and spread[k] <= ILL_CONDITIONED)) \
            else ("  ill-conditioned" if spread[k] > ILL_CONDITIONED else "")
        lines.append(f"{k[:44]:<44} {e64:9.2e} {tol64:9.2e} {spread[k]:9.2e} "
                     + " ".join(f"{e:9.2e}" for e in e32.values())
                     + f" {tol:9.2e}{flag}")
    if args.verbose or failed:
        print("\n".join(lines))
    row["worst64"] = worst64
    row["worst32"] = worst32
    row["tensors"] = len(ref)
    row["seconds"] = time.time() - start
    if failed:
        row["status"] = "FAIL"
        row["detail"] = "; ".join(failed[:4]) + (
            f" (+{len(failed) - 4})" if len(failed) > 4 else "")
    elif ill:
        worst, name, _ = max(ill)
        within = sum(1 for _, _, ok in ill if ok)
        row["status"] = "ill-conditioned"
        row["detail"] = (f"{len(ill)} of {len(ref)} tensors, PyTorch float32 "
                         f"off by up to {worst:.1e} ({name}); float64 "
                         f"matches; remat float32 within the spread rule on "
                         f"{within} of them")
    else:
        row["status"] = "ok"
    return row


def markdown(rows):
    out = ["| model | family | input, batch | params | status | float64 "
           "worst error / tolerance | float32 worst error / tolerance | "
           "ONNX ops |",
           "|---|---|---|---:|---|---:|---:|---|"]
    for r in rows:
        f64 = f"{r['worst64']:.2f}" if "worst64" in r else "-"
        f32 = f"{r['worst32']:.2f}" if "worst32" in r else "-"
        # (An unsupported op's error lists every supported one: cut.)
        detail = r["detail"].split(" (supported:")[0]
        status = r["status"] + (f": {detail}" if detail else "")
        note = f" ({r['note']})" if r["note"] else ""
        out.append(f"| {r['model']}{note} | {r['family']} | {r['input']}, "
                   f"{r['batch']} | {r['params']:,} | {status} | {f64} | "
                   f"{f32} | {', '.join(r['ops'])} |")
    return "\n".join(out) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--remat", required=True)
    p.add_argument("--models", default="all",
                   help="comma-separated zoo names (tools/zoo_models.py), "
                        "all (the zoo), or patterns (the importer's "
                        "patterns written by hand)")
    p.add_argument("--shard", default="0/1",
                   help="K/N: only every N-th of the models, from the K-th "
                        "(ctest runs the zoo in shards side by side)")
    p.add_argument("--batch", type=int, default=0,
                   help="override each model's batch")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--table", help="write the results as a markdown table")
    p.add_argument("--expect", choices=["ok", "ill-conditioned"],
                   help="fail unless every model has this status")
    p.add_argument("--verbose", action="store_true",
                   help="print every tensor's errors")
    p.add_argument("--workdir")
    args = p.parse_args()
    try:
        import torch  # noqa: F401
        import torchvision  # noqa: F401
        import zoo_models
    except ImportError as e:
        print(f"SKIP: {e}")
        return SKIP
    known = {**zoo_models.ZOO, **zoo_models.PATTERNS}
    names = (list(zoo_models.ZOO) if args.models == "all"
             else list(zoo_models.PATTERNS) if args.models == "patterns"
             else args.models.split(","))
    try:
        k, n = (int(v) for v in args.shard.split("/"))
        assert 0 <= k < n
    except (ValueError, AssertionError):
        print(f"--shard needs K/N with 0 <= K < N, got '{args.shard}'")
        return 1
    names = names[k::n]
    unknown = [n for n in names if n not in known]
    if unknown:
        print(f"unknown zoo models {unknown} (tools/zoo_models.py: "
              f"{', '.join(known)})")
        return 1
    torch.set_num_threads(max(1, os.cpu_count() or 1))

    def run_all(work):
        rows = []
        for name in names:
            row = check_model(args, name, work)
            if row["status"] == "stopped" and "no ONNX support" in row["detail"]:
                print(f"SKIP: {row['detail']}")
                return SKIP
            rows.append(row)
            print(f"{name}: {row['status']}"
                  + (f" (worst error / tolerance: float64 "
                     f"{row['worst64']:.2f}, float32 {row['worst32']:.2f}; "
                     f"{row['seconds']:.0f} s)" if "worst64" in row else "")
                  + (f": {row['detail']}" if row["detail"] else ""),
                  flush=True)
        if args.table:
            with open(args.table, "w") as f:
                f.write(markdown(rows))
        bad = []
        for row in rows:
            expected = STOPPED.get(row["model"])
            if args.expect and row["status"] != args.expect:
                bad.append(f"{row['model']} is {row['status']}, expected "
                           f"{args.expect}")
            elif row["status"] == "stopped":
                if not expected or expected not in row["detail"]:
                    bad.append(f"{row['model']} stopped unexpectedly")
            elif expected:
                bad.append(f"{row['model']} is {row['status']} but STOPPED "
                           f"expects it stopped ('{expected}'): update it")
            elif row["status"] not in ("ok", "ill-conditioned"):
                bad.append(f"{row['model']}: {row['status']}")
        if bad:
            print("FAIL: " + "; ".join(bad))
            return 1
        print(f"OK: {len(rows)} models")
        return 0

    return workdir.run_in(run_all, "remat-onnx-zoo-", given=args.workdir)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Micro-batches: a step split into k slices (docs/planner.md,
"Micro-batches"; issue #35).

  microbatches.py REMAT grads MODEL
      MODEL is gpt2 (the tiny preset at batch 8, dropout 0.1), seed_mlp
      (the forum MLP, tiny preset at batch 16: a summed loss) or onnx-lm
      (the 2-layer nn.TransformerEncoder language model of
      transformer_budget.py at batch 8, sequence 32, exported with a
      dynamic batch, in float64 (--precision fp64): in float32 one ReLU
      input of layer 1, -3.6e-7 in float64, comes out +1.5e-8 when the
      GEMM's rows are grouped 64 at a time (k = 4), and that one flipped
      mask element moves linear1.bias's gradient by 3e-3; skips without
      PyTorch). For k = 2, 3, 4 and 8 against the
      unsplit step, on the same data (k = 3 splits the batch unevenly:
      gpt2 and onnx-lm 3, 3 and 2 samples, seed_mlp 6, 5 and 5, the short
      slices padded; gpt2's loss is cross_entropy, seed_mlp's a
      reduce_sum, which the sample mask keeps from the padding): step 1's parameter gradients within
      1e-5 relative per tensor (analytically zero gradients, float noise in
      both, left out and named), and the losses of 20 steps within 1e-5
      relative. gpt2-bf16: gpt2 with --precision bf16, where each slice's
      bias gradients are bf16 sums rounded before the float32
      accumulation (the unsplit step rounds the whole batch's once), and
      bf16 values summed in another order can round the other way:
      gradients within 1e-2 (bf16 keeps 8 bits: 2^-7 = 7.8e-3 apart at
      most per value) and the 20 losses within 1e-3.
  microbatches.py REMAT errors
      --microbatches 0, -3, abc, more than the batch, --max-microbatches 0:
      a clear error and exit status 2; one that does not divide the batch
      compiles, saying how the slices differ; a model with batch norm split
      without --microbatch-norm per-slice: an error that names the node and
      the flag, and with it into uneven slices: an error that names the
      node and asks for a k that divides the batch; a budget no split fits: the
      unsplit minimum and the least the most micro-batches need, which
      compiles (1% less does not); a model from standard input with
      --microbatches auto: exit 2 (the search reads the model once per
      split); without it, the unsplit step's error.

Exit 0 on success, 1 with a message on failure, 77 (skipped).
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from distributed import (SKIP, losses, model_path, must, norm,  # noqa: E402
                         read_safetensors, relative, run)

SPLITS = (2, 3, 4, 8)


def model_args(remat, work, name):
    """The compile arguments of MODEL and the run's --data arguments."""
    if name in ("gpt2", "gpt2-bf16"):
        bf16 = ["--precision", "bf16"] if name == "gpt2-bf16" else []
        return [model_path("gpt2"), "--preset", "tiny", "--set", "batch=8",
                "--set", "dropout=0.1"] + bf16, []
    if name == "seed_mlp":
        return [model_path("seed_mlp"), "--preset", "tiny",
                "--set", "batch=16"], []
    if name == "onnx-lm":
        try:
            import numpy as np
            import transformer_budget
        except ImportError as e:
            print(f"SKIP: {e}")
            raise SystemExit(SKIP)
        path = os.path.join(work, "lm.onnx")
        transformer_budget.export(path, 8, 32, dynamic_batch=True)
        rng = np.random.default_rng(7)
        data = []
        for input_name in ("x", "labels"):
            file = os.path.join(work, input_name + ".npy")
            np.save(file, rng.integers(0, 512, size=(8, 32)).astype(np.int64))
            data += ["--data", f"{input_name}={file}"]
        return [path, "--input-shape", "x=8,32", "--precision", "fp64"], data
    raise SystemExit(f"unknown model {name}")


def grads(remat, work, name):
    compile_args, data = model_args(remat, work, name)
    grad_tol, loss_tol = (1e-2, 1e-3) if name.endswith("-bf16") else \
        (1e-5, 1e-5)
    grads_of, losses_of = {}, {}
    for k in (1,) + SPLITS:
        plan = os.path.join(work, f"k{k}.plan")
        must(run([remat, "compile"] + compile_args +
                 ["--microbatches", str(k), "--emit=plan", "-o", plan]),
             f"compile --microbatches {k}")
        g = os.path.join(work, f"g{k}.safetensors")
        must(run([remat, "run", plan, "--steps", "1", "--dump-grads", g] +
                 data), f"run k={k} (1 step)")
        grads_of[k] = read_safetensors(g)
        log = os.path.join(work, f"k{k}.jsonl")
        must(run([remat, "run", plan, "--steps", "20", "--log", log] + data),
             f"run k={k} (20 steps)")
        losses_of[k] = [line["loss"] for line in losses(log)]
    g1 = grads_of[1]
    largest = max(norm(g) for g in g1.values())
    noise = sorted(n for n, g in g1.items() if norm(g) < 1e-5 * largest)
    failed = False
    for k in SPLITS:
        gk = grads_of[k]
        if sorted(gk) != sorted(g1):
            raise SystemExit(f"FAIL: k={k} dumps {sorted(gk)}, unsplit "
                             f"{sorted(g1)}")
        worst_name, worst = max(
            ((n, relative(gk[n], g1[n])) for n in g1 if n not in noise),
            key=lambda item: item[1])
        loss_worst = max(abs(a - b) / max(abs(b), 1e-30)
                         for a, b in zip(losses_of[k], losses_of[1]))
        print(f"{name} k={k}: step-1 gradients of {len(g1) - len(noise)} "
              f"tensors, worst relative difference {worst:.2e} "
              f"({worst_name}); 20 losses, worst relative difference "
              f"{loss_worst:.2e} (loss {losses_of[1][0]:.6f} -> "
              f"{losses_of[1][-1]:.6f})")
        if not (worst <= grad_tol and loss_worst <= loss_tol) or \
                len(losses_of[k]) != 20:
            failed = True
    if noise:
        print(f"float noise left out: {noise}")
    if failed:
        raise SystemExit(f"FAIL: beyond {grad_tol:g} (gradients) or "
                         f"{loss_tol:g} (losses)")
    print("OK")
    return 0


def expect(r, code, *texts):
    if r.returncode != code or not all(t in r.stderr for t in texts):
        raise SystemExit(f"FAIL: expected exit {code} naming {texts}, got "
                         f"{r.returncode}:\n{r.stderr}")
    print(f"exit {code}: {r.stderr.strip().splitlines()[0]}")


def errors(remat, work):
    mlp = [remat, "compile", model_path("seed_mlp"), "--preset", "tiny",
           "--emit=plan", "-o", os.path.join(work, "e.plan")]
    for value in ("0", "-3", "abc", "2.5", ""):
        expect(run(mlp + ["--microbatches", value]), 2, "--microbatches",
               "auto")
    expect(run(mlp + ["--microbatches", "16"]), 2, "--microbatches 16",
           "more than its 8 samples")
    r = run(mlp + ["--microbatches", "3"])
    must(r, "--microbatches 3 of a batch of 8")
    uneven = "3 micro-batches: 2 of 3 samples, 1 of 2 (8 in all)"
    if uneven not in r.stderr:
        raise SystemExit(f"FAIL: no '{uneven}' in:\n{r.stderr}")
    print(f"uneven: {uneven}")
    expect(run(mlp + ["--max-microbatches", "0"]), 2, "--max-microbatches")
    expect(run(mlp + ["--microbatch-norm", "global"]), 2,
           "--microbatch-norm", "per-slice")
    norm_model = [remat, "compile", os.path.join(HERE, "models", "norm.json"),
                  "--emit=plan", "-o", os.path.join(work, "n.plan")]
    r = run(norm_model + ["--microbatches", "2"])
    expect(r, 2, "normalizes over the batch", "--microbatch-norm per-slice",
           "/ops/")
    must(run(norm_model + ["--microbatches", "2",
                           "--microbatch-norm", "per-slice"]),
         "norm.json with --microbatch-norm per-slice")
    expect(run(norm_model + ["--microbatches", "4",
                             "--microbatch-norm", "per-slice"]), 2,
           "normalizes over the batch", "slices of different sizes",
           "divides the batch", "/ops/")
    # A budget no split fits: the error names the unsplit minimum and the
    # least the most micro-batches need, a budget that then compiles while
    # 1% less does not.
    r = run(mlp + ["--budget", "1000"])
    expect(r, 1, "minimum feasible budget", "8 micro-batches need at least")
    found = re.search(r"--microbatches 8 --budget (\d+)", r.stderr)
    if not found:
        raise SystemExit(f"FAIL: no suggested budget in:\n{r.stderr}")
    least = int(found.group(1))
    must(run(mlp + ["--microbatches", "8", "--budget", str(least)]),
         f"--microbatches 8 --budget {least}")
    if run(mlp + ["--microbatches", "8",
                  "--budget", str(least * 99 // 100)]).returncode == 0:
        raise SystemExit(f"FAIL: 1% below the suggested {least} compiles")
    print(f"split minimum: --microbatches 8 --budget {least} compiles, "
          f"1% less does not")
    # A model from standard input is read once: no split search.
    with open(model_path("seed_mlp")) as f:
        text = f.read()
    stdin = [remat, "compile", "-", "--preset", "tiny", "--emit=plan", "-o",
             os.path.join(work, "s.plan")]
    expect(subprocess.run(stdin + ["--microbatches", "auto", "--budget",
                                   str(least)], input=text,
                          capture_output=True, text=True), 2,
           "--microbatches auto", "not '-' (standard input)")
    expect(subprocess.run(stdin + ["--budget", "1000"], input=text,
                          capture_output=True, text=True), 1,
           "minimum feasible budget")
    print("OK")
    return 0


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    remat, what = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="remat-microbatches-") as work:
        if what == "grads":
            return grads(remat, work, sys.argv[3])
        if what == "errors":
            return errors(remat, work)
    raise SystemExit(__doc__)


if __name__ == "__main__":
    sys.exit(main())

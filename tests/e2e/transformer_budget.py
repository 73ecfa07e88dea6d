#!/usr/bin/env python3
"""A torch.nn.TransformerEncoder language model from PyTorch planned below
store-all (issue 33, point 3 and acceptance 3).

  transformer_budget.py REMAT [--batch B] [--seq S] [--max-ratio R]

Exports a 2-layer nn.TransformerEncoder language model (vocabulary 512,
d 256, 4 heads, feed-forward 1024, post-LN, ReLU; token and learned
position embeddings; batch 16, sequence 128 by default) in training mode
at opset 17, and compiles it with SGD:

  1. `remat plan --sweep --points 1 --json` gives its minimum feasible
     budget; it must be at most R (default 0.5) times the store-all arena
     of `remat compile` without a budget. A linear layer's weight gradient
     is one GEMM over the flattened rows: were it a batched product summed
     afterwards, its [batch, d, 3d] temporary would be the peak and the
     minimum would sit at store-all.
  2. The plan at that minimum runs one step on fixed data within its
     budget (the arena), and its parameter gradients equal the store-all
     plan's within 1e-5 relative per tensor (max |a-b| / max |b|).

Prints the table row of docs/benchmarks.md. Exit 0 on success, 1 with a
message on failure, 77 without PyTorch.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SKIP = 77
TOLERANCE = 1e-5


def export(path, batch, seq, dynamic_batch=False):
    """Exports the model at `batch` x `seq` tokens; dynamic_batch leaves
    the batch dim dynamic (what `--ranks` needs, docs/onnx.md)."""
    import torch
    from torch import nn

    class LanguageModel(nn.Module):
        def __init__(self, vocab=512, width=256, heads=4, ffn=1024, layers=2):
            super().__init__()
            self.tokens = nn.Embedding(vocab, width)
            self.positions = nn.Parameter(0.02 * torch.randn(1, seq, width))
            layer = nn.TransformerEncoderLayer(width, heads, ffn, dropout=0.0,
                                               batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, layers,
                                                 enable_nested_tensor=False)
            self.head = nn.Linear(width, vocab)

        def forward(self, x):
            return self.head(self.encoder(self.tokens(x) + self.positions))

    torch.manual_seed(0)
    model = LanguageModel()
    x = torch.randint(0, 512, (batch, seq))
    dynamic = ({"x": {0: "batch"}, "y": {0: "batch"}} if dynamic_batch
               else None)
    torch.onnx.export(model, x, path, input_names=["x"], output_names=["y"],
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, opset_version=17,
                      dynamic_axes=dynamic)


def run(argv, what):
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL: {what}: {' '.join(argv)}\n{r.stderr}")
        sys.exit(1)
    return r


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("remat")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--max-ratio", type=float, default=0.5)
    a = p.parse_args()
    try:
        import numpy as np
        import torch  # noqa: F401
        from torch_parity import read_safetensors
    except ImportError as e:
        print(f"skipped: PyTorch is not installed ({e})")
        return SKIP
    with tempfile.TemporaryDirectory() as work:
        model = os.path.join(work, "lm.onnx")
        export(model, a.batch, a.seq)
        rng = np.random.default_rng(0)
        np.save(os.path.join(work, "x.npy"),
                rng.integers(0, 512, (a.batch, a.seq)).astype(np.int64))
        np.save(os.path.join(work, "labels.npy"),
                rng.integers(0, 512, (a.batch, a.seq)).astype(np.int64))
        common = ["--optimizer", "sgd"]
        sweep_json = os.path.join(work, "sweep.json")
        run([a.remat, "plan", model, "--sweep", "--points", "1", "--json",
             sweep_json] + common, "sweep")
        with open(sweep_json) as f:
            sweep = json.load(f)
        minimum = sweep["min_feasible_bytes"]
        plans, arenas, grads = {}, {}, {}
        for name, budget in (("store-all", None), ("minimum", minimum)):
            plan = os.path.join(work, name + ".plan")
            argv = [a.remat, "compile", model, "--emit=plan", "-o", plan]
            if budget is not None:
                argv += ["--budget", str(budget)]
            run(argv + common, "compile " + name)
            with open(plan) as f:
                arenas[name] = json.load(f)["arena_bytes"]
            dump = os.path.join(work, name + ".grads.safetensors")
            run([a.remat, "run", plan, "--steps", "1",
                 "--data", "x=" + os.path.join(work, "x.npy"),
                 "--data", "labels=" + os.path.join(work, "labels.npy"),
                 "--dump-grads", dump], "run " + name)
            grads[name] = read_safetensors(dump)
            plans[name] = plan
        ratio = minimum / arenas["store-all"]
        print(f"TransformerEncoder LM (2 layers, d 256, batch {a.batch}, "
              f"sequence {a.seq}): store-all arena {arenas['store-all']} B, "
              f"minimum feasible budget {minimum} B ({ratio:.3f}x), its "
              f"arena {arenas['minimum']} B; lower bound "
              f"{sweep.get('lower_bound_bytes')} B "
              f"({sweep.get('lower_bound_reason')})")
        failed = False
        if ratio > a.max_ratio:
            print(f"FAIL: the minimum is {ratio:.3f}x store-all, over "
                  f"{a.max_ratio}x")
            failed = True
        if arenas["minimum"] > minimum:
            print(f"FAIL: the minimum's plan has arena {arenas['minimum']} B "
                  f"over its budget {minimum} B")
            failed = True
        reference, planned = grads["store-all"], grads["minimum"]
        if set(reference) != set(planned) or not reference:
            print(f"FAIL: gradient names differ: {sorted(reference)} vs "
                  f"{sorted(planned)}")
            return 1
        worst = 0.0
        for name, ref in reference.items():
            scale = float(np.max(np.abs(ref))) or 1.0
            err = float(np.max(np.abs(planned[name] - ref))) / scale
            worst = max(worst, err)
            if err > TOLERANCE:
                print(f"FAIL: {name}: relative error {err:.2e} over "
                      f"{TOLERANCE}")
                failed = True
        print(f"{len(reference)} gradients: worst relative error against "
              f"store-all {worst:.2e}")
        if failed:
            return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())

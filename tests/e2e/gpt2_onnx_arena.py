#!/usr/bin/env python3
"""A GPT-2 written with torch.nn, exported through ONNX, plans like
models/gpt2.json (issue 33, acceptance 4).

  gpt2_onnx_arena.py REMAT [--layers L] [--width D] [--heads H]
                     [--vocab V] [--seq S] [--batch B] [--max-ratio R]

Exports tools/zoo_models.py's GPT2Like (token and position embeddings,
pre-LN blocks of nn.MultiheadAttention under a causal mask buffer and an
nn.GELU() MLP, the head tied to the token embedding) at GPT-2 124M's width
by default (12 layers, d 768, 12 heads, vocabulary 50257, sequence 256,
batch 8) in training mode at opset 17, and plans both it and
models/gpt2.json at the same sizes (dropout 0, AdamW) at store-all (no
budget). The ONNX model's arena must be within R (default 2%) of the JSON
model's. It can only be: the importer reads the exporter's attention as
the fused attention op, nn.GELU() as one op and the tied head's transposed
weight as matmul's transpose flag (docs/onnx.md, "Patterns read as one
op"); without them the arena is 1.44x.

Prints the table row of docs/benchmarks.md. Exit 0 on success, 1 with a
message on failure, 77 without PyTorch.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))

SKIP = 77


def plan_report(argv, what):
    """`remat plan` of argv: its JSON report, and the seconds it took."""
    start = time.time()
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL: {what}: {' '.join(argv)}\n{r.stderr}")
        sys.exit(1)
    return json.loads(r.stdout), time.time() - start


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("remat")
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--width", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--vocab", type=int, default=50257)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--max-ratio", type=float, default=0.02,
                   help="largest relative difference of the arenas")
    a = p.parse_args()
    try:
        import torch
        import zoo_models
    except ImportError as e:
        print(f"skipped: PyTorch is not installed ({e})")
        return SKIP
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "gpt2_like.onnx")
        print(f"exporting GPT2Like ({a.layers} layers, d {a.width}) ...",
              flush=True)
        torch.manual_seed(0)
        module = zoo_models.GPT2Like(width=a.width, heads=a.heads,
                                     layers=a.layers, vocab=a.vocab,
                                     seq=a.seq)
        params = sum(t.numel() for t in module.parameters())
        x = torch.randint(0, a.vocab, (a.batch, a.seq))
        zoo_models.export_module(module, x, path)
        del module
        onnx_report, onnx_seconds = plan_report(
            [a.remat, "plan", path, "--optimizer", "adamw"], "plan ONNX")
        sizes = {"n_layer": a.layers, "d_model": a.width,
                 "n_head": a.heads, "vocab": a.vocab, "seq": a.seq,
                 "batch": a.batch, "dropout": 0}
        argv = [a.remat, "plan", os.path.join(ROOT, "models", "gpt2.json")]
        for k, v in sizes.items():
            argv += ["--set", f"{k}={v}"]
        json_report, json_seconds = plan_report(argv, "plan gpt2.json")
    onnx_arena = onnx_report["arena_bytes"]
    json_arena = json_report["arena_bytes"]
    ratio = onnx_arena / json_arena
    print(f"GPT2Like via ONNX ({params:,} parameters, {a.layers} layers, "
          f"d {a.width}, {a.heads} heads, vocabulary {a.vocab}, sequence "
          f"{a.seq}, batch {a.batch}, AdamW), store-all:")
    print("| model | arena (B) | activations (B) | params (B) | optimizer "
          "(B) | peak op | plan s |")
    print("|---|---:|---:|---:|---:|---|---:|")
    for name, r, s in (("GPT2Like.onnx", onnx_report, onnx_seconds),
                       ("models/gpt2.json", json_report, json_seconds)):
        b = r["breakdown"]
        print(f"| {name} | {r['arena_bytes']:,} | {b['activations']:,} | "
              f"{b['params']:,} | {b['optimizer']:,} | `{r['peak_op']}` | "
              f"{s:.1f} |")
    print(f"ratio ONNX / JSON: {ratio:.6f}")
    if abs(ratio - 1) > a.max_ratio:
        print(f"FAIL: the ONNX model's store-all arena is {ratio:.4f}x the "
              f"JSON model's, beyond {a.max_ratio:.0%}")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())

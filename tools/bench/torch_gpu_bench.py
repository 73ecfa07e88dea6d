#!/usr/bin/env python3
"""PyTorch peer of the remat CUDA benchmarks: step time and peak memory.

Models (the same ones remat plans):
  seed_mlp  3 linear layers 1024-1024-1024-1 with bias, loss = sum(output),
            input x ~ randn [batch, 1024];
  gpt2      GPT-2 124M (12 layers, d 768, 12 heads, vocab 50257, seq 1024),
            batch 8, f32, tied lm_head, tanh GELU, no dropout, loss =
            cross_entropy over next-token labels.

Modes, each a whole training step (forward, backward, optimizer):
  eager       plain autograd;
  checkpoint  torch.utils.checkpoint around every layer (seed_mlp) or block
              (gpt2), non-reentrant;
  compile     torch.compile with torch._functorch.config.
              activation_memory_budget = B for each --budgets B (where
              torch.compile and that option exist; otherwise recorded as
              skipped).

Per configuration: --warmup steps, then --steps timed steps (synchronized);
ms_median of the timed steps, torch.cuda.max_memory_allocated /
max_memory_reserved over them (reset after warmup; parameters, gradients
and optimizer state stay allocated, so they are included). Attention is
written out (matmul, softmax, matmul) like remat's attention op; --attention
sdpa uses F.scaled_dot_product_attention instead.

  python3 tools/bench/torch_gpu_bench.py --device cuda --out torch.json
  python3 tools/bench/torch_gpu_bench.py --device cpu --tiny   # smoke test

Prints one line per configuration and writes JSON (--out, default stdout).
"""
import argparse
import json
import math
import statistics
import sys
import time
import traceback

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint


# ----------------------------------------------------------------- models --

class SeedMlp(nn.Module):
    def __init__(self, width, checkpoint=False):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(width, width),
                                     nn.Linear(width, width),
                                     nn.Linear(width, 1)])
        self.checkpoint = checkpoint

    def forward(self, x):
        for layer in self.layers:
            if self.checkpoint and torch.is_grad_enabled():
                x = torch.utils.checkpoint.checkpoint(layer, x,
                                                      use_reentrant=False)
            else:
                x = layer(x)
        return x.sum()


class Block(nn.Module):
    def __init__(self, d, heads, attention):
        super().__init__()
        self.heads = heads
        self.attention = attention
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.fc_proj = nn.Linear(4 * d, d)

    def attend(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        shape = (b, s, self.heads, d // self.heads)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        if self.attention == "sdpa":
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(shape[-1]))
            mask = torch.ones(s, s, dtype=torch.bool, device=x.device).triu(1)
            o = scores.masked_fill(mask, float("-inf")).softmax(-1) @ v
        return self.proj(o.transpose(1, 2).reshape(b, s, d))

    def forward(self, x):
        x = x + self.attend(self.ln1(x))
        return x + self.fc_proj(F.gelu(self.fc(self.ln2(x)),
                                       approximate="tanh"))


class Gpt2(nn.Module):
    def __init__(self, vocab, seq, d, layers, heads, attention,
                 checkpoint=False):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(
            [Block(d, heads, attention) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.checkpoint = checkpoint
        for m in self.modules():  # GPT-2's init
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear):
                nn.init.zeros_(m.bias)

    def forward(self, tokens, labels):
        pos = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.wte(tokens) + self.wpe(pos)
        for block in self.blocks:
            if self.checkpoint and torch.is_grad_enabled():
                x = torch.utils.checkpoint.checkpoint(block, x,
                                                      use_reentrant=False)
            else:
                x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, logits.shape[-1]),
                               labels.view(-1))


# -------------------------------------------------------------- harness --

def sizes(args):
    if args.tiny:
        return dict(mlp_width=64, mlp_batch=args.batch or 8, vocab=101,
                    seq=32, d=64, layers=2, heads=4, gpt2_batch=2)
    return dict(mlp_width=1024, mlp_batch=args.batch or 1024, vocab=50257,
                seq=1024, d=768, layers=12, heads=12, gpt2_batch=8)


def build(model_name, mode, args, dev):
    sz = sizes(args)
    checkpoint = mode == "checkpoint"
    torch.manual_seed(0)  # the same weights in every mode
    gen = torch.Generator(device="cpu").manual_seed(0)
    if model_name == "seed_mlp":
        model = SeedMlp(sz["mlp_width"], checkpoint)
        x = torch.randn(sz["mlp_batch"], sz["mlp_width"], generator=gen)
        inputs = (x.to(dev),)
        batch = sz["mlp_batch"]
    else:
        model = Gpt2(sz["vocab"], sz["seq"], sz["d"], sz["layers"],
                     sz["heads"], args.attention, checkpoint)
        tokens = torch.randint(0, sz["vocab"],
                               (sz["gpt2_batch"], sz["seq"] + 1),
                               generator=gen)
        inputs = (tokens[:, :-1].contiguous().to(dev),
                  tokens[:, 1:].contiguous().to(dev))
        batch = sz["gpt2_batch"]
    model = model.to(dev)
    if args.optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    elif args.optimizer == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    else:
        opt = None
    return model, inputs, opt, batch


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize()


def run_config(model_name, mode, budget, args, dev):
    entry = dict(model=model_name, mode=mode, budget=budget,
                 optimizer=args.optimizer, attention=args.attention)
    model, inputs, opt, batch = build(model_name, mode, args, dev)
    entry["batch"] = batch
    forward = model
    if mode == "compile":
        import torch._functorch.config as fconfig  # noqa: may be absent
        if not hasattr(fconfig, "activation_memory_budget"):
            raise RuntimeError("torch._functorch.config has no "
                               "activation_memory_budget")
        import torch._dynamo
        fconfig.activation_memory_budget = budget
        torch._dynamo.reset()
        forward = torch.compile(model)

    def step():
        loss = forward(*inputs)
        loss.backward()
        if opt is not None:
            opt.step()
            opt.zero_grad(set_to_none=False)
        else:
            model.zero_grad(set_to_none=False)
        return loss

    t0 = time.perf_counter()
    for _ in range(args.warmup):
        loss = step()
    sync(dev)
    entry["warmup_s"] = time.perf_counter() - t0
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(args.steps):
        t = time.perf_counter()
        loss = step()
        sync(dev)
        times.append((time.perf_counter() - t) * 1000.0)
    entry.update(ms_median=statistics.median(times), ms=times,
                 loss=float(loss.detach()))
    if dev.type == "cuda":
        entry["max_memory_allocated"] = torch.cuda.max_memory_allocated()
        entry["max_memory_reserved"] = torch.cuda.max_memory_reserved()
    else:
        entry["max_memory_allocated"] = None
        entry["max_memory_reserved"] = None
    if model_name == "gpt2":
        entry["tokens_per_s"] = batch * sizes(args)["seq"] / (
            entry["ms_median"] / 1000.0)
    entry["status"] = "ok"
    return entry


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--tiny", action="store_true",
                   help="tiny sizes (smoke test, e.g. on the CPU)")
    p.add_argument("--models", default="seed_mlp,gpt2")
    p.add_argument("--modes", default="eager,checkpoint,compile")
    p.add_argument("--budgets", default="1.0,0.5",
                   help="activation_memory_budget values for compile")
    p.add_argument("--batch", type=int, default=0,
                   help="seed_mlp batch (default 1024; tiny 8)")
    p.add_argument("--optimizer", default="sgd",
                   choices=["sgd", "adamw", "none"])
    p.add_argument("--attention", default="math", choices=["math", "sdpa"])
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--deadline", type=float, default=0,
                   help="seconds; configurations not started by then are "
                        "recorded as skipped")
    p.add_argument("--out", default="")
    args = p.parse_args()

    start = time.monotonic()
    dev = torch.device(args.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        sys.exit("torch_gpu_bench: --device cuda but torch.cuda is not "
                 "available")
    torch.manual_seed(0)
    results = []
    # Modes outer, models inner: the cheap eager / checkpoint runs of every
    # model come before the slow compiles, so a deadline skips compiles.
    for mode in args.modes.split(","):
        for model_name in args.models.split(","):
            budgets = ([float(b) for b in args.budgets.split(",")]
                       if mode == "compile" else [None])
            for budget in budgets:
                base = dict(model=model_name, mode=mode, budget=budget)
                if args.deadline and time.monotonic() - start > args.deadline:
                    results.append(dict(base, status="skipped",
                                        error="deadline reached"))
                    continue
                if mode == "compile" and not hasattr(torch, "compile"):
                    results.append(dict(base, status="skipped",
                                        error="torch.compile unavailable "
                                              "(torch %s)" % torch.__version__))
                    continue
                try:
                    entry = run_config(model_name, mode, budget, args, dev)
                except Exception as e:  # one failure must not stop the table
                    entry = dict(base, status="failed",
                                 error="%s: %s" % (type(e).__name__, e),
                                 trace=traceback.format_exc(limit=3))
                finally:
                    if dev.type == "cuda":
                        torch.cuda.empty_cache()
                results.append(entry)
                write_report(args, dev, results)
                mem = entry.get("max_memory_allocated")
                print("%-9s %-10s %-5s %-8s %9s ms  %s" % (
                    model_name, mode, "" if budget is None else budget,
                    entry["status"],
                    "%.2f" % entry["ms_median"] if "ms_median" in entry
                    else "-",
                    "%.1f MiB" % (mem / 2**20) if mem else
                    entry.get("error", "")), file=sys.stderr, flush=True)
    write_report(args, dev, results)
    if not args.out:
        print(json.dumps(report_of(args, dev, results), indent=1))


def report_of(args, dev, results):
    return dict(torch=torch.__version__, device=str(dev),
                device_name=(torch.cuda.get_device_name(dev)
                             if dev.type == "cuda" else "cpu"),
                tiny=args.tiny, results=results)


def write_report(args, dev, results):
    """Rewrites --out after every configuration, so a run killed by a
    timeout keeps what it measured."""
    if args.out:
        with open(args.out, "w") as f:
            f.write(json.dumps(report_of(args, dev, results), indent=1) + "\n")


if __name__ == "__main__":
    main()

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

Largest batch under a memory budget (--max-batch-budget BYTES, default off;
remat's peer is `remat plan MODEL --max-batch --budget B`): for each model
and the modes eager and checkpoint of --modes, after the eager / checkpoint
timings and before the compiles. On CUDA,
torch.cuda.set_per_process_memory_fraction(BYTES / total), total from
torch.cuda.mem_get_info, caps the caching allocator (the CUDA context lies
outside it; parameters, gradients, optimizer state and inputs inside, the
model and optimizer being built under the cap and kept across trials). A
trial at batch b is --max-batch-warmup (1) steps plus one measured step,
the training step timed above, with fresh random inputs; it fits unless an
out-of-memory error is raised. The batch doubles from the usual one
(seed_mlp --batch / 1024, gpt2 8) until a trial fails, then bisects until
the largest batch known to fit is within 2% of the smallest seen to fail
(exact below 50). After every trial the inputs and graph are dropped,
gradients zeroed in place, gc.collect(), torch.cuda.empty_cache(), peaks
reset. The optimizer is --max-batch-optimizer (default "model": remat's,
AdamW for gpt2, SGD for seed_mlp). With --deadline every search gets an
equal share of the time left when it starts and ends as "partial" (the
best batch known to fit) before a trial that would overrun it. Without
CUDA the searches are recorded as "skipped: needs cuda". JSON:
"max_batch_setup" {budget_bytes, fraction, device_total_bytes
(mem_get_info total), device_free_bytes, allowed_bytes, resident_before}
and "max_batch": [{model, mode, budget_bytes, max_batch, min_fail,
max_memory_allocated, max_memory_reserved (of the measured step at
max_batch), step_ms, resident_bytes (allocated between trials), trials,
tried [[batch, fits, seconds]...], seconds, optimizer, attention, fraction,
device_total_bytes, status ok | partial | capped | no batch fits |
skipped... | failed}]. The cap is reset to 1.0 afterwards. --self-test
checks the search (a pure function of a fits(batch) callable) against
synthetic thresholds and deadlines, and the trial runner on the CPU with
simulated out-of-memory errors; it exits 1 on a failure.

  python3 tools/bench/torch_gpu_bench.py --device cuda --out torch.json
  python3 tools/bench/torch_gpu_bench.py --device cuda --max-batch-only \
      --max-batch-budget 34359738368 --deadline 120 --out max_batch.json
  python3 tools/bench/torch_gpu_bench.py --device cpu --tiny   # smoke test
  python3 tools/bench/torch_gpu_bench.py --self-test

Prints one line per configuration and writes JSON (--out, default stdout).
"""
import argparse
import gc
import json
import os
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


def make_model(model_name, mode, args, dev, optimizer=None):
    """The model (weights seeded, the same in every mode) on dev, and its
    optimizer (optimizer: sgd | adamw | none; default args.optimizer)."""
    sz = sizes(args)
    checkpoint = mode == "checkpoint"
    torch.manual_seed(0)  # the same weights in every mode
    if model_name == "seed_mlp":
        model = SeedMlp(sz["mlp_width"], checkpoint)
    else:
        model = Gpt2(sz["vocab"], sz["seq"], sz["d"], sz["layers"],
                     sz["heads"], args.attention, checkpoint)
    model = model.to(dev)
    optimizer = optimizer or resolve_optimizer(model_name, args.optimizer)
    if optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    elif optimizer == "adamw":
        # models/gpt2.json: lr 6e-4, no weight decay.
        opt = torch.optim.AdamW(model.parameters(), lr=6e-4, weight_decay=0.0)
    else:
        opt = None
    return model, opt


def build(model_name, mode, args, dev):
    sz = sizes(args)
    model, opt = make_model(model_name, mode, args, dev)
    gen = torch.Generator(device="cpu").manual_seed(0)
    if model_name == "seed_mlp":
        x = torch.randn(sz["mlp_batch"], sz["mlp_width"], generator=gen)
        inputs = (x.to(dev),)
        batch = sz["mlp_batch"]
    else:
        tokens = torch.randint(0, sz["vocab"],
                               (sz["gpt2_batch"], sz["seq"] + 1),
                               generator=gen)
        inputs = (tokens[:, :-1].contiguous().to(dev),
                  tokens[:, 1:].contiguous().to(dev))
        batch = sz["gpt2_batch"]
    return model, inputs, opt, batch


def train_step(forward, model, opt, inputs):
    """One training step: forward, backward, optimizer (gradients are
    zeroed in place, so they stay allocated like the optimizer state)."""
    loss = forward(*inputs)
    loss.backward()
    if opt is not None:
        opt.step()
        opt.zero_grad(set_to_none=False)
    else:
        model.zero_grad(set_to_none=False)
    return loss


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize()


def run_config(model_name, mode, budget, args, dev):
    entry = dict(model=model_name, mode=mode, budget=budget,
                 optimizer=resolve_optimizer(model_name, args.optimizer),
                 attention=args.attention)
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
        return train_step(forward, model, opt, inputs)

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


# ------------------------------------------------------------ max batch --

def search_max_batch(fits, start=1, rel_tol=0.02, abs_tol=1, growth=2,
                     cap=1 << 30, should_stop=None):
    """The largest batch b >= 1 with fits(b), for a monotone fits (true up
    to some threshold, false above it). Pure: fits is the only experiment.

    Grows b geometrically (x growth) from start until a batch fails (or
    halves towards 1 when start itself fails, by the same bisection), then
    bisects between lo (fits) and hi (fails) until
    hi - lo <= max(abs_tol, rel_tol * lo): lo is then within rel_tol of the
    true maximum, and exact where rel_tol * lo < abs_tol = 1. No batch is
    tried twice; none above cap.

    should_stop(b), asked before each trial, ends the search with status
    "partial" and the best batch known to fit (0 when none is known yet).
    Returns dict(max_batch, min_fail (smallest batch seen to fail, or None),
    trials, status, tried [[batch, fits], ...]); status is "ok",
    "partial", "capped" (cap fits) or "no batch fits" (batch 1 fails)."""
    lo, hi = 0, None
    tried = []

    def result(status):
        return dict(max_batch=lo, min_fail=hi, trials=len(tried),
                    status=status, tried=tried)

    def trial(b):
        ok = bool(fits(b))
        tried.append([b, ok])
        return ok

    b = max(1, min(int(start), int(cap)))
    while hi is None:  # bracket: lo fits, hi fails
        if should_stop is not None and should_stop(b):
            return result("partial")
        if trial(b):
            lo = b
            if b >= cap:
                return result("capped")
            b = min(int(cap), max(b + 1, int(b * growth)))
        else:
            hi = b
    while hi - lo > max(abs_tol, rel_tol * lo):  # bisect
        mid = (lo + hi) // 2
        if should_stop is not None and should_stop(mid):
            return result("partial")
        if trial(mid):
            lo = mid
        else:
            hi = mid
    return result("ok" if lo else "no batch fits")


def is_oom(e):
    """Whether exception e says the allocator ran out of memory (under a
    per-process memory fraction that is torch.OutOfMemoryError; a library
    allocation that fails may say so only in a RuntimeError's message)."""
    kinds = tuple(k for k in (getattr(torch, "OutOfMemoryError", None),
                              getattr(torch.cuda, "OutOfMemoryError", None))
                  if isinstance(k, type))
    if kinds and isinstance(e, kinds):
        return True
    text = str(e)
    return isinstance(e, RuntimeError) and (
        "out of memory" in text.lower() or "ALLOC_FAILED" in text)


def resolve_optimizer(model_name, choice):
    """An --optimizer / --max-batch-optimizer choice, where "model" means
    remat's model files' (models/gpt2.json adamw, seed_mlp sgd)."""
    if choice != "model":
        return choice
    return "adamw" if model_name == "gpt2" else "sgd"


class MaxBatchRunner:
    """fits(batch) for search_max_batch: one model and optimizer, built
    once (so parameters, gradients and optimizer state are allocated under
    the same allocator limit as the activations and stay allocated across
    trials), and per trial fresh inputs of that batch, --max-batch-warmup
    steps plus one measured step (the step run_config times). An
    out-of-memory error anywhere in the trial means "does not fit"; any
    other error propagates. After every trial the inputs and the autograd
    graph are dropped, the gradients zeroed, the cache emptied and the peak
    statistics reset."""

    def __init__(self, model_name, mode, args, dev, optimizer):
        self.model_name, self.args, self.dev = model_name, args, dev
        self.sz = sizes(args)
        self.model, self.opt = make_model(model_name, mode, args, dev,
                                          optimizer)
        self.records = []  # one dict per trial

    def inputs(self, batch):
        sz, dev = self.sz, self.dev
        if self.model_name == "seed_mlp":
            return (torch.randn(batch, sz["mlp_width"], device=dev),)
        tokens = torch.randint(0, sz["vocab"], (batch, sz["seq"] + 1),
                               device=dev)
        return (tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous())

    def _run(self, batch):
        inputs = self.inputs(batch)
        for _ in range(self.args.max_batch_warmup):
            train_step(self.model, self.model, self.opt, inputs)
        sync(self.dev)
        if self.dev.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.dev)
        t = time.perf_counter()
        loss = train_step(self.model, self.model, self.opt, inputs)
        sync(self.dev)
        stats = dict(step_ms=(time.perf_counter() - t) * 1000.0,
                     loss=float(loss.detach()))
        if self.dev.type == "cuda":
            stats["max_memory_allocated"] = torch.cuda.max_memory_allocated(
                self.dev)
            stats["max_memory_reserved"] = torch.cuda.max_memory_reserved(
                self.dev)
        return stats

    def cleanup(self):
        self.model.zero_grad(set_to_none=False)  # partial sums after an OOM
        gc.collect()
        if self.dev.type == "cuda":
            torch.cuda.synchronize(self.dev)
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats(self.dev)

    def resident_bytes(self):
        """Allocated between trials: parameters, gradients, optimizer
        state (None on the CPU)."""
        if self.dev.type != "cuda":
            return None
        return torch.cuda.memory_allocated(self.dev)

    def __call__(self, batch):
        t0 = time.perf_counter()
        error = None
        try:
            stats = self._run(batch)
        except Exception as e:
            if not is_oom(e):
                raise
            stats, error = None, type(e).__name__
        # Leaving the except clause dropped the traceback, and with it the
        # frames that held the inputs, the loss and the partial graph.
        self.cleanup()
        record = dict(batch=batch, fits=stats is not None)
        record.update(stats or dict(error=error))
        record["seconds"] = time.perf_counter() - t0
        self.records.append(record)
        return stats is not None

    def estimate_s(self, batch):
        """Seconds a trial at batch should take: the measured step of the
        largest batch that fit, scaled linearly, times the steps per trial,
        plus an allowance for the inputs and the cleanup; before any batch
        fit, the last trial's seconds; before any trial, 0."""
        fit = [r for r in self.records if r["fits"]]
        if fit:
            best = max(fit, key=lambda r: r["batch"])
            steps = self.args.max_batch_warmup + 1
            return (1.25 * steps * best["step_ms"] / 1000.0 * batch
                    / best["batch"] + 0.25)
        return self.records[-1]["seconds"] if self.records else 0.0


def max_batch_setup(args, dev):
    """Limits the caching allocator of dev to --max-batch-budget bytes:
    torch.cuda.set_per_process_memory_fraction(budget / total), total from
    torch.cuda.mem_get_info (the CUDA context lies outside the limit)."""
    budget = args.max_batch_budget
    setup = dict(budget_bytes=budget)
    if dev.type != "cuda":
        return setup
    index = dev.index if dev.index is not None else torch.cuda.current_device()
    gc.collect()
    torch.cuda.empty_cache()
    free, total = torch.cuda.mem_get_info(index)
    fraction = min(1.0, budget / float(total))
    torch.cuda.set_per_process_memory_fraction(fraction, index)
    setup.update(fraction=fraction, device_total_bytes=total,
                 device_free_bytes=free, allowed_bytes=int(fraction * total),
                 resident_before=torch.cuda.memory_reserved(index))
    if budget > total:
        setup["note"] = "budget exceeds the device memory; fraction 1.0"
    return setup


def max_batch_phase(args, dev, start, report):
    """The largest batch under --max-batch-budget for every model of
    --models and the modes eager / checkpoint of --modes; appends to
    report.max_batch (rewriting --out after every trial). With --deadline,
    each search gets an equal share of the time left when it starts (what
    a search leaves goes to the later ones) and stops as "partial" before a
    trial that would not end within its share."""
    modes = [m for m in args.modes.split(",") if m in ("eager", "checkpoint")]
    jobs = [(mode, model_name) for mode in modes
            for model_name in args.models.split(",")]
    if dev.type == "cuda":
        report.max_batch_setup = max_batch_setup(args, dev)
    else:
        report.max_batch_setup = dict(budget_bytes=args.max_batch_budget)
    setup = report.max_batch_setup
    try:
        for i, (mode, model_name) in enumerate(jobs):
            entry = dict(model=model_name, mode=mode,
                         budget_bytes=args.max_batch_budget, max_batch=None,
                         max_memory_allocated=None, max_memory_reserved=None,
                         trials=0, seconds=0.0,
                         optimizer=resolve_optimizer(model_name, args.max_batch_optimizer),
                         attention=args.attention,
                         fraction=setup.get("fraction"),
                         device_total_bytes=setup.get("device_total_bytes"))
            if model_name == "gpt2":
                entry["seq"] = sizes(args)["seq"]
            report.max_batch.append(entry)
            run_search(entry, mode, model_name, args, dev, start, report,
                       len(jobs) - i)
            report.write()
            mem = entry["max_memory_reserved"]
            print("max-batch %-9s %-10s %-13s %9s  %d trials %.1f s  %s" % (
                model_name, mode, entry["status"], entry["max_batch"],
                entry["trials"], entry["seconds"],
                "%.1f MiB reserved" % (mem / 2**20) if mem else
                entry.get("error", "")), file=sys.stderr, flush=True)
    finally:
        if dev.type == "cuda" and "fraction" in setup:  # later runs: no limit
            torch.cuda.set_per_process_memory_fraction(
                1.0, dev.index if dev.index is not None
                else torch.cuda.current_device())
            torch.cuda.empty_cache()


def run_search(entry, mode, model_name, args, dev, start, report, jobs_left):
    if dev.type != "cuda":
        entry["status"] = "skipped: needs cuda"
        return
    now = time.monotonic()
    deadline = None
    if args.deadline:
        left = start + args.deadline - now
        if left <= 0:
            entry.update(status="skipped", error="deadline reached")
            return
        deadline = now + left / jobs_left
    t0 = time.perf_counter()
    runner = None
    entry["status"] = "running"
    try:
        runner = MaxBatchRunner(model_name, mode, args, dev,
                                entry["optimizer"])
        runner.cleanup()
        entry["resident_bytes"] = runner.resident_bytes()

        def fits(batch):
            ok = runner(batch)
            entry.update(trials=len(runner.records),
                         seconds=time.perf_counter() - t0,
                         tried=[[r["batch"], r["fits"],
                                 round(r["seconds"], 3)]
                                for r in runner.records])
            report.write()  # a killed run keeps the trials so far
            return ok

        def should_stop(batch):
            return (deadline is not None and
                    time.monotonic() + runner.estimate_s(batch) > deadline)

        sz = sizes(args)
        first = sz["mlp_batch"] if model_name == "seed_mlp" \
            else sz["gpt2_batch"]
        found = search_max_batch(fits, start=first, rel_tol=0.02, abs_tol=1,
                                 should_stop=should_stop)
        entry.update(max_batch=found["max_batch"],
                     min_fail=found["min_fail"], status=found["status"])
        best = [r for r in runner.records
                if r["fits"] and r["batch"] == found["max_batch"]]
        if best:
            entry.update(max_memory_allocated=best[0]["max_memory_allocated"],
                         max_memory_reserved=best[0]["max_memory_reserved"],
                         step_ms=best[0]["step_ms"])
        entry["resident_bytes"] = runner.resident_bytes()
    except Exception as e:  # one failure must not stop the table
        entry.update(status="failed",
                     error="%s: %s" % (type(e).__name__, e),
                     trace=traceback.format_exc(limit=3))
    finally:
        entry["seconds"] = time.perf_counter() - t0
        if runner is not None:
            entry["trials"] = len(runner.records)
        runner = None  # the model and optimizer go before the next search
        gc.collect()
        torch.cuda.empty_cache()


# -------------------------------------------------------------- self-test --

def self_test():
    """Checks search_max_batch against synthetic thresholds (2% / exact
    tolerance, trial count, cap, deadline), then MaxBatchRunner on the CPU
    at --tiny sizes with a simulated out-of-memory error above a threshold
    (raised in forward for one model, in backward for the other)."""
    failures = []
    count = [0]

    def check(cond, what):
        count[0] += 1
        if not cond:
            failures.append(what)

    class Runaway(Exception):
        pass

    def search(fits, **kw):
        """search_max_batch, ended after 200 trials (a broken search must
        fail the test, not hang it)."""
        calls = [0]

        def guarded(b):
            calls[0] += 1
            if calls[0] > 200:
                raise Runaway()
            return fits(b)
        try:
            return search_max_batch(guarded, **kw)
        except Runaway:
            return dict(max_batch=-1, min_fail=None, trials=200,
                        status="runaway: over 200 trials", tried=[])

    for threshold in (1, 2, 3, 7, 8, 9, 12, 49, 50, 51, 99, 100, 101, 1023,
                      12345, 999983, 1 << 20, 3000000):
        for first in (1, 8, 1024, 1 << 20):
            calls = []

            def fits(b, t=threshold):
                calls.append(b)
                return b <= t
            r = search(fits, start=first)
            what = "threshold %d start %d: %r" % (threshold, first,
                                                 {k: r[k] for k in r
                                                  if k != "tried"})
            m = r["max_batch"]
            check(r["status"] == "ok", what + " status")
            check(1 <= m <= threshold, what + " fits")
            check(threshold - m <= 0.02 * threshold, what + " within 2%")
            if 0.02 * threshold < 1:
                check(m == threshold, what + " exact")
            check(r["min_fail"] is not None and r["min_fail"] > threshold,
                  what + " min_fail")
            check(len(set(calls)) == len(calls), what + " a batch twice")
            check(r["trials"] == len(calls), what + " trials")
            bound = (2 * math.ceil(math.log2(max(threshold, first) + 1)) + 4)
            check(r["trials"] <= bound, what + " trials > %d" % bound)
    # 12345 from 1: doubling to 16384, then bisection to 2%.
    r = search(lambda b: b <= 12345)
    check(12345 * 0.98 <= r["max_batch"] <= 12345 and r["trials"] <= 21,
          "12345: %r" % r)
    r = search(lambda b: False, start=64)
    check(r["status"] == "no batch fits" and r["max_batch"] == 0
          and r["min_fail"] == 1, "none fits: %r" % r)
    r = search(lambda b: True, start=3, cap=1000)
    check(r["status"] == "capped" and r["max_batch"] == 1000,
          "capped: %r" % r)
    r = search(lambda b: True, should_stop=lambda b: True)
    check(r["status"] == "partial" and r["trials"] == 0
          and r["max_batch"] == 0, "stop at once: %r" % r)
    # Deadline on a fake clock: a trial at b costs 1 + b / 1000 s and the
    # estimate is exact; the search must stop before a trial that would end
    # past the deadline, with the best batch that fit. 12345 by 40 s stops
    # while doubling (1..8192 take 30.4 s, 16384 would take 17.4 more); by
    # 75 s while bisecting (1..16384 take 47.8 s, 12288 13.3 s more, then
    # 14336 would end at 76.4 s); 30 by 40 s completes.
    for threshold, deadline, status, best, bisected in (
            (12345, 40.0, "partial", 8192, False),
            (12345, 75.0, "partial", 12288, True),
            (30, 40.0, "ok", 30, True)):
        clock = [0.0]

        def fits(b, t=threshold):
            clock[0] += 1.0 + b / 1000.0
            return b <= t
        r = search(fits, should_stop=lambda b, d=deadline:
                   clock[0] + 1.0 + b / 1000.0 > d)
        fit = [b for b, ok in r["tried"] if ok]
        what = "deadline %d by %g s: %r clock %.1f" % (threshold, deadline,
                                                       r, clock[0])
        check(clock[0] <= deadline, what + " past the deadline")
        check(r["max_batch"] == max(fit or [0]), what + " best fit")
        check(r["status"] == status and r["max_batch"] == best, what)
        check((r["min_fail"] is not None) == bisected, what + " min_fail")
    check(is_oom(torch.cuda.OutOfMemoryError("x")), "is_oom OutOfMemoryError")
    check(is_oom(RuntimeError("CUDA error: out of memory")), "is_oom text")
    check(not is_oom(RuntimeError("shape mismatch")), "is_oom other")

    # The runner, on the CPU at tiny sizes, with a fake out-of-memory error.
    args = parse_args(["--device", "cpu", "--tiny"])
    dev = torch.device("cpu")
    for model_name, mode, limit, where in (("seed_mlp", "eager", 37, "fwd"),
                                           ("gpt2", "checkpoint", 5, "bwd"),
                                           ("gpt2", "eager", 3, "fwd")):
        runner = MaxBatchRunner(model_name, mode, args, dev,
                                resolve_optimizer(model_name, args.max_batch_optimizer))

        def fake_oom(batch):
            if batch > limit:
                raise torch.cuda.OutOfMemoryError("fake: out of memory")
        if where == "fwd":
            runner.model.register_forward_pre_hook(
                lambda m, inputs: fake_oom(inputs[0].shape[0]))
        else:
            target = (runner.model.layers[0] if model_name == "seed_mlp"
                      else runner.model.blocks[0])
            target.register_full_backward_hook(
                lambda m, gin, gout: fake_oom(gout[0].shape[0]))
        r = search(runner, start=2)
        what = "runner %s %s: %r" % (model_name, mode, r)
        check(r["status"] == "ok" and r["max_batch"] == limit, what)
        check(all(rec["fits"] == (rec["batch"] <= limit)
                  for rec in runner.records), what + " records")
        check(all("step_ms" in rec for rec in runner.records if rec["fits"]),
              what + " step_ms")
        check(all(math.isfinite(rec["loss"]) for rec in runner.records
                  if rec["fits"]), what + " loss")
        check(runner.estimate_s(2 * limit) > 0, what + " estimate")
    # A non-OOM error is not "does not fit".
    runner = MaxBatchRunner("seed_mlp", "eager", args, dev, "sgd")
    runner.model.register_forward_pre_hook(
        lambda m, inputs: (_ for _ in ()).throw(ValueError("boom")))
    try:
        runner(4)
        check(False, "a ValueError was taken for out of memory")
    except ValueError:
        check(True, "")

    for f in failures:
        print("self-test FAILED: %s" % f, file=sys.stderr)
    print("self-test: %d checks, %d failed" % (count[0], len(failures)),
          file=sys.stderr)
    return not failures


def parse_args(argv=None):
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
    p.add_argument("--optimizer", default="model",
                   choices=["model", "sgd", "adamw", "none"],
                   help="optimizer of the timed steps; model: remat's (gpt2 "
                        "adamw, seed_mlp sgd)")
    p.add_argument("--attention", default="math", choices=["math", "sdpa"])
    p.add_argument("--tf32", type=int, choices=[0, 1],
                   default=int(os.environ.get("REMAT_CUDA_TF32", "0") not in
                               ("", "0")),
                   help="allow TF32 tensor cores in matmuls (default: as "
                        "REMAT_CUDA_TF32 sets it for remat, i.e. off)")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--deadline", type=float, default=0,
                   help="seconds; configurations not started by then are "
                        "recorded as skipped")
    p.add_argument("--max-batch-budget", type=int, default=0,
                   metavar="BYTES",
                   help="also search the largest batch whose training step "
                        "fits BYTES of CUDA allocator memory (eager, "
                        "checkpoint); default off")
    p.add_argument("--max-batch-only", action="store_true",
                   help="with --max-batch-budget: skip the timed "
                        "configurations")
    p.add_argument("--max-batch-optimizer", default="model",
                   choices=["model", "sgd", "adamw", "none"],
                   help="optimizer of the search; model: remat's (gpt2 "
                        "adamw, seed_mlp sgd)")
    p.add_argument("--max-batch-warmup", type=int, default=1,
                   help="unmeasured steps per trial before the measured one")
    p.add_argument("--self-test", action="store_true",
                   help="check the max-batch search (CPU only) and exit")
    p.add_argument("--out", default="")
    args = p.parse_args(argv)
    if args.max_batch_only and not args.max_batch_budget:
        p.error("--max-batch-only needs --max-batch-budget")
    return args


class Report:
    """The JSON report; write() rewrites --out (after every configuration
    and every max-batch trial), so a run killed by a timeout keeps what it
    measured."""

    def __init__(self, args, dev):
        self.args, self.dev = args, dev
        self.results = []
        self.max_batch = []
        self.max_batch_setup = None

    def as_dict(self):
        dev = self.dev
        d = dict(torch=torch.__version__, device=str(dev),
                 device_name=(torch.cuda.get_device_name(dev)
                              if dev.type == "cuda" else "cpu"),
                 tiny=self.args.tiny, tf32=self.args.tf32,
                 results=self.results)
        if self.args.max_batch_budget:
            d.update(max_batch_setup=self.max_batch_setup,
                     max_batch=self.max_batch)
        return d

    def write(self):
        if self.args.out:
            with open(self.args.out, "w") as f:
                f.write(json.dumps(self.as_dict(), indent=1) + "\n")


def main():
    args = parse_args()
    if args.self_test:
        sys.exit(0 if self_test() else 1)

    start = time.monotonic()
    # The same precision as remat's GEMMs: full f32 unless TF32 is asked
    # for on both sides.
    torch.backends.cuda.matmul.allow_tf32 = bool(args.tf32)
    torch.backends.cudnn.allow_tf32 = bool(args.tf32)
    dev = torch.device(args.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        sys.exit("torch_gpu_bench: --device cuda but torch.cuda is not "
                 "available")
    torch.manual_seed(0)
    report = Report(args, dev)
    results = report.results
    max_batch_pending = bool(args.max_batch_budget)
    # Modes outer, models inner: the cheap eager / checkpoint runs of every
    # model come before the slow compiles, so a deadline skips compiles.
    # The max-batch searches (--max-batch-budget) run between the two.
    modes = [] if args.max_batch_only else args.modes.split(",")
    for mode in modes:
        if mode == "compile" and max_batch_pending:
            max_batch_pending = False
            max_batch_phase(args, dev, start, report)
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
                    results.append(dict(
                        base, status="skipped",
                        error="torch.compile unavailable (torch %s)"
                              % torch.__version__))
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
                report.write()
                mem = entry.get("max_memory_allocated")
                print("%-9s %-10s %-5s %-8s %9s ms  %s" % (
                    model_name, mode, "" if budget is None else budget,
                    entry["status"],
                    "%.2f" % entry["ms_median"] if "ms_median" in entry
                    else "-",
                    "%.1f MiB" % (mem / 2**20) if mem else
                    entry.get("error", "")), file=sys.stderr, flush=True)
    if max_batch_pending:
        max_batch_phase(args, dev, start, report)
    report.write()
    if not args.out:
        print(json.dumps(report.as_dict(), indent=1))


if __name__ == "__main__":
    main()

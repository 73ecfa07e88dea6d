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
  autocast    eager under torch.autocast(device, torch.bfloat16): the peer
              of remat's --precision bf16 (float32 master weights and
              optimizer state, matmuls in bf16);
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
The models and their training step are torch_models.py's, the max-batch
search torch_max_batch.py's (its self-test: torch_max_batch_check.py).
"""
import argparse
import json
import os
import statistics
import sys
import time
import traceback

import torch

from torch_max_batch import max_batch_phase
from torch_max_batch_check import self_test
from torch_models import build, resolve_optimizer, sizes, sync, train_step


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
        # (from-import: `import torch._dynamo` would make torch a local
        # name of this function, unbound in step() below)
        from torch import _dynamo
        fconfig.activation_memory_budget = budget
        _dynamo.reset()
        forward = torch.compile(model)

    def step():
        if mode == "autocast":
            with torch.autocast(dev.type, dtype=torch.bfloat16):
                loss = forward(*inputs)
            return train_step(lambda *_: loss, model, opt, inputs)
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
        sys.exit(0 if self_test(parse_args(["--device", "cpu", "--tiny"]))
                 else 1)

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

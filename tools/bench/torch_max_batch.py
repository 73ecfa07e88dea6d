"""The largest batch under a memory budget for
tools/bench/torch_gpu_bench.py (--max-batch-budget; its docstring says what
is measured and the JSON it writes): search_max_batch, a pure search over a
fits(batch) experiment; MaxBatchRunner, that experiment as training steps
under the CUDA caching allocator's per-process limit; max_batch_phase, the
searches of every model and mode within a deadline.
"""
import gc
import sys
import time
import traceback

import torch

from torch_models import (make_model, resolve_optimizer, sizes, sync,
                          train_step)


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
                         optimizer=resolve_optimizer(
                             model_name, args.max_batch_optimizer),
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

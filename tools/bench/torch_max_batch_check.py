"""The self-test of tools/bench/torch_max_batch.py
(`torch_gpu_bench.py --self-test`): the search against synthetic
thresholds and deadlines, and the trial runner on the CPU with simulated
out-of-memory errors.
"""
import math
import sys

import torch

from torch_max_batch import MaxBatchRunner, is_oom, search_max_batch
from torch_models import resolve_optimizer


def self_test(args):
    """Checks search_max_batch against synthetic thresholds (2% / exact
    tolerance, trial count, cap, deadline), then MaxBatchRunner on the CPU
    at --tiny sizes with a simulated out-of-memory error above a threshold
    (raised in forward for one model, in backward for the other); args:
    torch_gpu_bench.py's command line with --device cpu --tiny."""
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
    dev = torch.device("cpu")
    for model_name, mode, limit, where in (("seed_mlp", "eager", 37, "fwd"),
                                           ("gpt2", "checkpoint", 5, "bwd"),
                                           ("gpt2", "eager", 3, "fwd")):
        runner = MaxBatchRunner(
            model_name, mode, args, dev,
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

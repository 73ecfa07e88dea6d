#!/usr/bin/env python3
"""Mutation fuzzer for remat's file inputs (plans and model files).

Mutates JSON seed files structurally (deleted keys, changed types, huge /
negative / zero numbers, out-of-range buffer indices and offsets, odd
shapes, wrong dtypes, shuffled or duplicated list entries) and at the byte
level (truncation, non-UTF-8 bytes, flipped bytes), runs the target binary
on each mutant with a timeout and classifies the outcome:

  error    exit 1 or 2 with a message on stderr (the documented contract)
  ok       exit 0
  crash    a signal, a sanitizer report ("AddressSanitizer", "runtime
           error:", ...) or any other exit code
  hang     the timeout expired
  resource the fuzzer's memory guard (--asan-memory-mb) stopped a run that
           the target had accepted (a large but valid plan)
  noplace  a clean exit whose last stderr line does not name the input
           file (the contract says errors name the location; reported, not
           saved unless --save-noplace)

Crashing and hanging inputs are saved in OUT_DIR as
<kind>-<signature hash>.<ext> with the stderr next to them (.stderr), one
file per distinct signature (the first sanitizer frame in the project's
sources, else the exit status).

Examples (targets built with -fsanitize=address,undefined):

  # plans through the runtime
  tests/fuzz/fuzz_inputs.py --target run --binary /tmp/fz/runtime/remat-run \\
      --seeds tests/e2e/plans/*.plan --iterations 3000 --out /tmp/fuzz-run

  # model files through the compiler (unsanitized: cap its address space)
  tests/fuzz/fuzz_inputs.py --target compile \\
      --binary build/tools/remat/remat \\
      --seeds models/*.json --iterations 500 --out /tmp/fuzz-compile \\
      --rlimit-as-mb 8192 --asan-memory-mb 0

  # shrink a saved crash (keeps the same signature)
  tests/fuzz/fuzz_inputs.py --target run --binary /tmp/fz/runtime/remat-run \\
      --minimize /tmp/fuzz-run/crash-1234abcd.plan --out /tmp/fuzz-run

Only the Python standard library is used.
"""

import argparse
import copy
import json
import os
import random
import re
import sys
import tempfile
import time

from mutate_json import Mutator, all_paths, delete_at, get_at, set_at
from run_target import (MEMORY_LIMITS, in_order, run_one, save_finding,
                        signature)

# Argument templates per target; {input} is the mutated file, {tmp} a
# scratch directory of the run.
TARGET_ARGS = {
    "run": ["{input}", "--steps", "1"],
    "compile": ["compile", "{input}", "--preset", "tiny", "--emit=plan", "-o",
                "{tmp}/out.plan"],
    # remat-read-model (tests/fuzz/ReadModel.cpp): the model reader alone.
    "read-model": ["{input}"],
}


# --------------------------------------------------------------------------
# Minimization


def minimize(binary, args_template, data, suffix, timeout, workdir,
             max_runs=400, log=print):
    """Shrinks a JSON input while the failure's signature stays the same."""
    kind, rc, stderr, _ = run_one(binary, args_template, data, suffix, timeout,
                                  workdir)
    target = signature(stderr, rc, kind)
    if kind not in ("crash", "hang"):
        log("input does not fail (%s); nothing to minimize" % kind)
        return data, target
    log("signature: " + target)
    try:
        doc = json.loads(data)
    except ValueError:
        log("not JSON; byte-level minimization is not implemented")
        return data, target
    runs = 0

    def still_fails(candidate):
        nonlocal runs
        runs += 1
        blob = json.dumps(candidate).encode()
        k, r, e, _ = run_one(binary, args_template, blob, suffix, timeout,
                             workdir)
        return k in ("crash", "hang") and signature(e, r, k) == target

    changed = True
    while changed and runs < max_runs:
        changed = False
        # Deepest-last order: try removing big subtrees first.
        for path, value in sorted(all_paths(doc), key=lambda pv: len(pv[0])):
            if runs >= max_runs:
                break
            if not path:
                continue
            try:
                get_at(doc, path)
            except (KeyError, IndexError, TypeError):
                continue
            candidate = copy.deepcopy(doc)
            delete_at(candidate, path)
            if still_fails(candidate):
                doc = candidate
                changed = True
                break
            # Lists: try keeping only the first half.
            if isinstance(value, list) and len(value) > 1:
                candidate = copy.deepcopy(doc)
                set_at(candidate, path, value[: len(value) // 2])
                if still_fails(candidate):
                    doc = candidate
                    changed = True
                    break
    log("minimized in %d runs" % runs)
    return json.dumps(doc, indent=1).encode(), target



def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Classes: error (clean exit 1/2 with a message), ok, crash "
               "(signal, sanitizer report, other exit code), hang "
               "(timeout), resource (stopped by the fuzzer's memory guard), "
               "noplace (exit 1 whose message does not name the file).",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", choices=sorted(TARGET_ARGS),
                        required=True,
                        help="run: BINARY PLAN --steps 1 (remat-run or "
                             "'remat run'); compile: BINARY compile MODEL "
                             "--preset tiny --emit=plan; read-model: "
                             "remat-read-model MODEL")
    parser.add_argument("--binary", required=True,
                        help="the executable (remat-run or remat)")
    parser.add_argument("--args", nargs=argparse.REMAINDER,
                        help="override the argument template; {input} is "
                             "the mutated file, {tmp} a scratch directory "
                             "(must come last)")
    parser.add_argument("--seeds", nargs="+", default=[],
                        help="seed files (plans or model JSON)")
    parser.add_argument("--iterations", type=int, default=1000,
                        help="number of mutants to run (default 1000)")
    parser.add_argument("--out", required=True,
                        help="directory for crashing / hanging inputs")
    parser.add_argument("--timeout", type=float, default=20.0,
                        help="seconds per run before it counts as a hang "
                             "(default 20)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="parallel runs (default 1)")
    parser.add_argument("--seed", type=int, default=None,
                        help="random seed (default: time)")
    parser.add_argument("--save-noplace", action="store_true",
                        help="also save inputs classed 'noplace'")
    parser.add_argument("--minimize", metavar="FILE",
                        help="shrink FILE keeping its failure signature, "
                             "write it to OUT/min-<name> and exit")
    parser.add_argument("--asan-memory-mb", type=int, default=4096,
                        help="sanitized targets: fail allocations and stop "
                             "runs past this many MiB (0: no limit; "
                             "default 4096)")
    parser.add_argument("--rlimit-as-mb", type=int, default=0,
                        help="unsanitized targets: address-space limit in "
                             "MiB (do not use with ASan; default none)")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress lines")
    args = parser.parse_args(argv)

    template = args.args or TARGET_ARGS[args.target]
    MEMORY_LIMITS["asan_mb"] = args.asan_memory_mb
    MEMORY_LIMITS["rlimit_as_mb"] = args.rlimit_as_mb
    os.makedirs(args.out, exist_ok=True)
    workdir = tempfile.mkdtemp(prefix="fuzz-inputs-")
    if not os.access(args.binary, os.X_OK):
        parser.error("binary %r is not executable" % args.binary)

    if args.minimize:
        with open(args.minimize, "rb") as f:
            data = f.read()
        suffix = os.path.splitext(args.minimize)[1] or ".json"
        small, sig = minimize(args.binary, template, data, suffix,
                              args.timeout, workdir)
        dest = os.path.join(args.out,
                            "min-" + os.path.basename(args.minimize))
        with open(dest, "wb") as f:
            f.write(small)
        print("%s (%d -> %d bytes): %s" % (dest, len(data), len(small), sig))
        return 0

    if not args.seeds:
        parser.error("--seeds is required unless --minimize is given")
    seeds = []
    for path in args.seeds:
        with open(path, "r", encoding="utf-8") as f:
            seeds.append((path, f.read()))
    rng_seed = args.seed if args.seed is not None else int(time.time())
    rng = random.Random(rng_seed)
    mutator = Mutator(rng)
    counts = {}
    seen = {}
    noplace = {}
    start = time.time()

    def job(path, suffix, data):
        kind, rc, stderr, _ = run_one(args.binary, template, data, suffix,
                                      args.timeout, workdir)
        return path, suffix, data, kind, rc, stderr

    def mutants():
        # All mutations come from one RNG in this thread, so a --seed run
        # is repeatable (with --jobs 1, also in order).
        for i in range(args.iterations):
            path, text = seeds[i % len(seeds)]
            yield path, os.path.splitext(path)[1] or ".json", \
                mutator.mutate(text)

    n = 0
    for path, suffix, data, kind, rc, stderr in in_order(job, mutants(),
                                                          args.jobs):
        n += 1
        counts[kind] = counts.get(kind, 0) + 1
        if kind in ("crash", "hang") or (kind == "noplace" and
                                         args.save_noplace):
            sig = signature(stderr, rc, kind)
            new = sig not in seen
            save_finding(args.out, kind, sig, data, suffix, stderr, seen)
            if new and not args.quiet:
                print("[%d] NEW %s from %s: %s" % (n, kind, path, sig),
                      flush=True)
        elif kind == "noplace":
            lines = stderr.strip().splitlines()
            key = re.sub(r"[-0-9]+", "N", lines[-1] if lines else "")
            noplace[key] = noplace.get(key, 0) + 1
        if not args.quiet and n % 100 == 0:
            print("[%d/%d] %.0fs %s" % (n, args.iterations,
                                        time.time() - start, counts),
                  flush=True)
    if not os.listdir(workdir):
        os.rmdir(workdir)
    print("seed %d, %d iterations in %.0fs: %s" % (
        rng_seed, args.iterations, time.time() - start,
        ", ".join("%s %d" % kv for kv in sorted(counts.items()))))
    for sig, e in sorted(seen.items()):
        print("  %5d x %s\n          %s" % (e["count"], sig, e["file"]))
    if noplace:
        print("errors whose last line does not name the input file:")
        for key, c in sorted(noplace.items(), key=lambda kv: -kv[1])[:20]:
            print("  %5d x %s" % (c, key[:160]))
    return 1 if seen else 0


if __name__ == "__main__":
    sys.exit(main())

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
  tools/fuzz_inputs.py --target run --binary /tmp/fz/runtime/remat-run \\
      --seeds tests/e2e/plans/*.plan --iterations 3000 --out /tmp/fuzz-run

  # model files through the compiler (unsanitized: cap its address space)
  tools/fuzz_inputs.py --target compile --binary build/tools/remat/remat \\
      --seeds models/*.json --iterations 500 --out /tmp/fuzz-compile \\
      --rlimit-as-mb 8192 --asan-memory-mb 0

  # shrink a saved crash (keeps the same signature)
  tools/fuzz_inputs.py --target run --binary /tmp/fz/runtime/remat-run \\
      --minimize /tmp/fuzz-run/crash-1234abcd.plan --out /tmp/fuzz-run

Only the Python standard library is used.
"""

import argparse
import concurrent.futures
import copy
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

# Argument templates per target; {input} is the mutated file, {tmp} a
# scratch directory of the run.
TARGET_ARGS = {
    "run": ["{input}", "--steps", "1"],
    "compile": ["compile", "{input}", "--preset", "tiny", "--emit=plan", "-o",
                "{tmp}/out.plan"],
}

SANITIZER_ENV = {
    # Distinct exit codes so a sanitizer report is never mistaken for the
    # runtime's own exit 1.
    "ASAN_OPTIONS": "exitcode=86:detect_leaks=1:handle_abort=1",
    "UBSAN_OPTIONS": "halt_on_error=1:exitcode=87:print_stacktrace=1",
    "LSAN_OPTIONS": "exitcode=88",
}

SANITIZER_MARKERS = ("AddressSanitizer", "runtime error:", "LeakSanitizer",
                     "UndefinedBehaviorSanitizer", "ThreadSanitizer",
                     "MemorySanitizer", "terminate called",
                     "Assertion `", "Aborted", "Segmentation fault")

INTERESTING_INTS = [0, -1, 1, 2, 3, 4, 7, 63, 64, 65, 4096, 2**31 - 1, 2**31,
                    -2**31, 2**32 - 1, 2**32, 2**40, 2**48, 2**53, 2**62,
                    2**63 - 1, -2**63, 2**63, 2**64 - 1]
INTERESTING_FLOATS = [0.0, -0.0, 1e-45, -1.5, 0.5, 1.0, 1e30, -1e30, 1e308,
                      -1e308, 3.4e38, 1e39]
INTERESTING_STRINGS = ["", "f16", "bf16", "i32", "i64", "f32", "f64", "param",
                       "grad", "input", "optimizer", "activation",
                       "temporary", "state", "forward", "backward", "matmul",
                       "attention", "embedding", "cross_entropy", "reshape",
                       "transpose", "constant", "sgd_update",
                       "sgd_plain_update", "adamw_update",
                       "labels_of", "sequence", "randint", "randn", "normal",
                       "batch", "width", "1/0", "0", "-1", "2**64",
                       "sqrt(-1)", "(((", "99999999999999999999", "x" * 300,
                       "\u00e9\u4e2d", "a/b", "1e308*1e308"]


# --------------------------------------------------------------------------
# JSON tree helpers


def all_paths(node, path=()):
    """Every (path, value) in the tree, root included."""
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from all_paths(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from all_paths(v, path + (i,))


def get_at(root, path):
    for p in path:
        root = root[p]
    return root


def set_at(root, path, value):
    if not path:
        return value
    get_at(root, path[:-1])[path[-1]] = value
    return root


def delete_at(root, path):
    parent = get_at(root, path[:-1])
    if isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent.pop(path[-1])


def count_buffers(doc):
    if isinstance(doc, dict) and isinstance(doc.get("buffers"), list):
        return len(doc["buffers"])
    return 8


def count_names(doc):
    """Names defined in a model file (inputs, params, ops)."""
    names = []
    if isinstance(doc, dict):
        for key in ("inputs", "params", "ops"):
            for e in doc.get(key, []) if isinstance(doc.get(key), list) else []:
                if isinstance(e, dict) and isinstance(e.get("name"), str):
                    names.append(e["name"])
    return names


# --------------------------------------------------------------------------
# Mutations


class Mutator:
    def __init__(self, rng):
        self.rng = rng

    def number(self, old):
        r = self.rng
        choice = r.randrange(9)
        if choice == 0:
            return r.choice(INTERESTING_INTS)
        if choice == 1:
            return r.choice(INTERESTING_FLOATS)
        if isinstance(old, bool) or not isinstance(old, (int, float)):
            return r.choice(INTERESTING_INTS)
        if choice == 2:
            return -old
        if choice == 3:
            return old * r.choice([2, 3, 1 << 16, 1 << 32])
        if choice == 4:
            return old + r.choice([-64, -1, 1, 64, 4096])
        if choice == 5:
            return 0
        if choice == 6 and isinstance(old, int):
            return old // r.choice([2, 3, 64])
        if choice == 7:
            return float(old) + 0.5
        return r.choice(INTERESTING_INTS)

    def other_type(self, old):
        r = self.rng
        candidates = [None, True, False, "str", 0, -1, 1.5, [], {}, [1, 2],
                      {"kind": "zeros"}, [0], [-1], [2**63]]
        return copy.deepcopy(r.choice(candidates))

    def mutate_node(self, doc, path, value, meta):
        """One mutation at `path`; returns the new document."""
        r = self.rng
        key = path[-1] if path else None
        parent = get_at(doc, path[:-1]) if path else None
        ops = ["type", "delete"]
        if isinstance(value, bool):
            ops += ["flip"]
        elif isinstance(value, (int, float)):
            ops += ["number"] * 4
            if key in ("inputs", "outputs", "loss", "of") or (
                    isinstance(key, int) and len(path) >= 2 and
                    path[-2] in ("inputs", "outputs")):
                ops += ["index"] * 4
        elif isinstance(value, str):
            ops += ["string"] * 3 + ["name"] * 2
        elif isinstance(value, list):
            ops += ["list"] * 4
        elif isinstance(value, dict):
            ops += ["addkey", "dupkey"]
        op = r.choice(ops)
        if op == "delete" and path:
            delete_at(doc, path)
            return doc
        if op == "delete" or op == "type":
            return set_at(doc, path, self.other_type(value))
        if op == "flip":
            return set_at(doc, path, not value)
        if op == "number":
            return set_at(doc, path, self.number(value))
        if op == "index":
            n = meta["buffers"]
            return set_at(doc, path,
                          r.choice([-1, -2, n, n + 1, 2**31, 2**63 - 1,
                                    r.randrange(max(n, 1))]))
        if op == "string":
            return set_at(doc, path, r.choice(INTERESTING_STRINGS))
        if op == "name":
            names = meta["names"] or ["x"]
            return set_at(doc, path, r.choice(names + [value + "_", ""]))
        if op == "list":
            lst = value
            sub = r.randrange(8)
            if sub == 0 and lst:
                lst.append(copy.deepcopy(r.choice(lst)))
            elif sub == 1:
                r.shuffle(lst)
            elif sub == 2 and lst:
                del lst[r.randrange(len(lst)):]
            elif sub == 3:
                lst.clear()
            elif sub == 4 and len(lst) >= 2:
                i, j = r.sample(range(len(lst)), 2)
                lst[i], lst[j] = lst[j], lst[i]
            elif sub == 5:
                lst.insert(r.randrange(len(lst) + 1),
                           r.choice([0, 1, 2**62, -3, 65536, 2**31 - 1]))
            elif sub == 6 and lst:
                lst.reverse()
            else:
                lst.append(r.choice([0, 1, 2**32, [], {}]))
            return doc
        if op == "addkey":
            value[r.choice(["bogus", "kind", "shift", "vocab", "of", "a", "c",
                            "low", "high", "std", "data", "init", "attrs",
                            "shape", "dtype", "recompute"])] = \
                self.other_type(None) if r.random() < 0.5 else \
                r.choice(INTERESTING_INTS)
            return doc
        if op == "dupkey" and value:
            # Copy one key's value from a sibling object of the same list.
            if isinstance(parent, list) and len(parent) > 1:
                other = r.choice(parent)
                if isinstance(other, dict) and other:
                    k = r.choice(list(other))
                    value[k] = copy.deepcopy(other[k])
            return doc
        return doc

    # Plan-aware mutations: keep the plan mostly consistent (bytes match
    # the shape, offsets aligned and inside the arena) so the mutant gets
    # past the first checks and reaches the step rules and the kernels.

    DTYPE_SIZE = {"f32": 4, "f16": 2, "bf16": 2, "i32": 4, "i64": 8}

    def place_at_end(self, plan, b):
        align = plan.get("alignment", 64)
        if not isinstance(align, int) or align <= 0:
            align = 64
        arena = plan.get("arena_bytes", 0)
        if not isinstance(arena, int):
            arena = 0
        off = (arena + align - 1) // align * align
        b["offset"] = off
        plan["arena_bytes"] = off + max(int(b.get("bytes", 0)), 1)

    def fix_bytes(self, b):
        n = 1
        for d in b.get("shape", []):
            n *= d if isinstance(d, int) else 1
        b["bytes"] = n * self.DTYPE_SIZE.get(b.get("dtype"), 4)

    def mutate_plan(self, plan):
        r = self.rng
        bufs = plan.get("buffers")
        steps = plan.get("steps")
        if not isinstance(bufs, list) or not bufs or \
                not isinstance(steps, list) or not steps:
            return plan
        b = r.choice(bufs)
        if not isinstance(b, dict):
            return plan
        choice = r.randrange(10)
        if choice == 0:      # alias another buffer's bytes
            o = r.choice(bufs)
            if isinstance(o, dict):
                b["offset"] = o.get("offset", 0)
                if r.random() < 0.5:
                    for k in ("shape", "bytes", "dtype"):
                        if k in o:
                            b[k] = copy.deepcopy(o[k])
        elif choice == 1:    # new shape, consistent bytes, fresh bytes
            shape = list(b.get("shape", []))
            sub = r.randrange(5)
            if sub == 0 and shape:
                i = r.randrange(len(shape))
                shape[i] = r.choice([1, 2, 3, 7, 64, 4096, 1 << 20])
            elif sub == 1:
                shape.insert(r.randrange(len(shape) + 1), r.choice([1, 2]))
            elif sub == 2 and shape:
                shape.pop(r.randrange(len(shape)))
            elif sub == 3:
                shape = []
            else:
                shape = [r.choice([1, 2, 4, 16]) for _ in range(r.randint(1, 5))]
            b["shape"] = shape
            self.fix_bytes(b)
            self.place_at_end(plan, b)
        elif choice == 2:    # dtype change, consistent bytes
            b["dtype"] = r.choice(list(self.DTYPE_SIZE))
            self.fix_bytes(b)
            self.place_at_end(plan, b)
        elif choice == 3:    # op swap within the same step shape
            s = r.choice(steps)
            if isinstance(s, dict):
                s["op"] = r.choice(INTERESTING_STRINGS[15:25] + [
                    "add", "sub", "mul", "div", "relu", "gelu", "tanh", "exp",
                    "softmax", "layer_norm", "reduce_sum", "reduce_mean",
                    "broadcast_to", "sum_to", "mse", "dropout",
                    "relu_grad", "softmax_grad", "layer_norm_grad",
                    "embedding_grad", "cross_entropy_grad", "mse_grad",
                    "attention_grad"])
        elif choice == 4:    # operand swap to a buffer of the same shape
            s = r.choice(steps)
            if isinstance(s, dict):
                key = r.choice(["inputs", "outputs"])
                lst = s.get(key)
                if isinstance(lst, list) and lst:
                    i = r.randrange(len(lst))
                    old = lst[i]
                    shape = bufs[old].get("shape") if isinstance(old, int) \
                        and 0 <= old < len(bufs) and \
                        isinstance(bufs[old], dict) else None
                    same = [j for j, o in enumerate(bufs)
                            if isinstance(o, dict) and o.get("shape") == shape]
                    lst[i] = r.choice(same or [r.randrange(len(bufs))])
        elif choice == 5:    # input data generators
            b["role"] = "input"
            b.pop("init", None)
            kind = r.choice(["randn", "randint", "sequence", "labels_of"])
            data = {"kind": kind}
            if kind == "randint":
                data["low"] = r.choice(INTERESTING_INTS + [0, -5])
                data["high"] = r.choice(INTERESTING_INTS + [1, 10])
            elif kind == "sequence":
                data["vocab"] = r.choice(INTERESTING_INTS)
                data["a"] = r.choice(INTERESTING_INTS)
                data["c"] = r.choice(INTERESTING_INTS)
            elif kind == "labels_of":
                data["of"] = r.randrange(-1, len(bufs) + 1)
                data["shift"] = r.choice(INTERESTING_INTS)
            else:
                data["std"] = r.choice(INTERESTING_FLOATS)
            b["data"] = data
            if kind != "randn":
                b["dtype"] = r.choice(["i32", "i64"])
            self.fix_bytes(b)
            self.place_at_end(plan, b)
        elif choice == 6:    # attributes
            s = r.choice(steps)
            if isinstance(s, dict):
                attrs = s.setdefault("attrs", {})
                if isinstance(attrs, dict):
                    key = r.choice(["permutation", "axes", "keep_dims",
                                    "transpose_a", "transpose_b", "rate",
                                    "seed", "causal", "scale", "value",
                                    "epsilon", "lr", "beta1", "beta2", "eps"])
                    attrs[key] = r.choice([
                        [1, 0], [0], [], [0, 1, 2], [2, 0, 1], [-1], [1, 1],
                        True, False, 0.0, 0.99999, 1.0, -1.0, 1e38, 2**63,
                        -2**63])
        elif choice == 7:    # reorder steps
            if len(steps) > 1:
                i, j = r.sample(range(len(steps)), 2)
                steps[i], steps[j] = steps[j], steps[i]
        elif choice == 8:    # huge but consistent sizes
            plan["arena_bytes"] = r.choice([2**40, 2**50, 2**63, 2**64 - 1])
            if r.random() < 0.5:
                b["shape"] = [r.choice([2**20, 2**31, 2**33])] + \
                    list(b.get("shape", []))[1:]
                self.fix_bytes(b)
        else:                # loss / alignment / batch
            key = r.choice(["loss", "alignment", "batch", "tokens_per_sample",
                            "seed"])
            plan[key] = r.choice(INTERESTING_INTS + [r.randrange(len(bufs))])
        return plan

    def mutate(self, text):
        """A mutated version of `text` (str) as bytes."""
        r = self.rng
        if r.random() < 0.12:
            return self.mutate_bytes(text.encode())
        try:
            doc = json.loads(text)
        except ValueError:
            return self.mutate_bytes(text.encode())
        meta = {"buffers": count_buffers(doc), "names": count_names(doc)}
        for _ in range(r.choice([1, 1, 1, 2, 2, 3, 5])):
            if isinstance(doc, dict) and "buffers" in doc and r.random() < 0.5:
                try:
                    doc = self.mutate_plan(doc)
                    continue
                except (TypeError, ValueError, KeyError, AttributeError,
                        IndexError):
                    pass  # an earlier mutation broke the plan's structure
            paths = list(all_paths(doc))
            # Prefer leaves and small containers: more targeted changes.
            path, value = r.choice(paths)
            doc = self.mutate_node(doc, path, value, meta)
        out = json.dumps(doc, indent=None if r.random() < 0.5 else 1)
        data = out.encode()
        if r.random() < 0.03:
            data = self.mutate_bytes(data)
        return data

    def mutate_bytes(self, data):
        r = self.rng
        data = bytearray(data)
        choice = r.randrange(5)
        if choice == 0 and data:
            del data[r.randrange(len(data)):]          # truncate
        elif choice == 1:
            # non-UTF-8 bytes inside a string literal where possible
            quotes = [i for i, c in enumerate(data) if c == 0x22]
            pos = r.choice(quotes) + 1 if quotes else r.randrange(len(data) + 1)
            data[pos:pos] = r.choice([b"\xff", b"\xc3", b"\xed\xa0\x80",
                                      b"\xf8\x88\x80\x80\x80", b"\x00",
                                      b"\\ud800", b"\\u0000"])
        elif choice == 2 and data:
            for _ in range(r.randint(1, 4)):
                data[r.randrange(len(data))] = r.randrange(256)
        elif choice == 3:
            data = data + r.choice([b"}", b"\xff", b"garbage", b"\n{}",
                                    b"\x00"])
        else:
            data = bytearray(r.choice([b"", b"{}", b"[]", b"null", b"{",
                                       b"\xef\xbb\xbf{}", b"1e999",
                                       b"[" * 100000]))
        return bytes(data)


# --------------------------------------------------------------------------
# Running and classifying


PROJECT_FRAME = re.compile(
    r"#\d+ 0x[0-9a-f]+ in (.+?) (/\S*?/(?:runtime|compiler|ir|passes|tools)/"
    r"[^\s:]+):(\d+)")


def signature(stderr, rc, kind):
    """A short string that identifies a distinct failure: the sanitizer's
    verdict and the innermost frame in the project's sources."""
    parts = [kind]
    summary = re.search(r"SUMMARY: \w+Sanitizer: (\S+)", stderr)
    if summary:
        parts.append(summary.group(1))
    loc = re.search(r"(\S+/(?:runtime|compiler|ir|passes|tools)/[^\s:]+:\d+)"
                    r":\d+: runtime error: ([^\n]*)", stderr)
    frame = PROJECT_FRAME.search(stderr)
    if loc:
        parts.append(os.path.basename(loc.group(1)))
        parts.append(re.sub(r"[-0-9]+", "N", loc.group(2))[:60])
    elif frame:
        func = re.sub(r"\(.*", "", frame.group(1)).split("::")[-1]
        parts.append("%s@%s:%s" % (func, os.path.basename(frame.group(2)),
                                   frame.group(3)))
    if len(parts) == 1:
        lines = stderr.strip().splitlines()
        parts.append("rc=%s" % rc)
        parts.append(re.sub(r"[-0-9]+", "N", lines[-1] if lines else "")[:80])
    return " | ".join(parts)


def classify(rc, stderr, input_path, timed_out):
    if timed_out:
        return "hang"
    if "hard rss limit exhausted" in stderr or (
            "out-of-memory" in stderr and "allocator_may_return_null" in
            stderr):
        # The fuzzer's own memory guard (--asan-memory-mb) stopped a run
        # that the target accepted: a large but valid request.
        return "resource"
    if rc < 0:
        return "crash"
    if any(m in stderr for m in SANITIZER_MARKERS):
        return "crash"
    if rc == 0:
        return "ok"
    if rc in (1, 2):
        lines = [l for l in stderr.strip().splitlines() if l.strip()]
        if not lines:
            return "crash"
        last = lines[-1]
        # Usage errors (exit 2) point at --help instead of a file place.
        if rc == 1 and os.path.basename(input_path) not in last:
            return "noplace"
        return "error"
    return "crash"


# Memory guards (set by main): a mutant asking for a large-but-accepted
# allocation must not take the shared machine down with it.
MEMORY_LIMITS = {"asan_mb": 4096, "rlimit_as_mb": 0}


def limit_address_space():
    if MEMORY_LIMITS["rlimit_as_mb"]:
        import resource
        size = MEMORY_LIMITS["rlimit_as_mb"] << 20
        resource.setrlimit(resource.RLIMIT_AS, (size, size))


def run_one(binary, args_template, data, suffix, timeout, workdir):
    tmp = tempfile.mkdtemp(dir=workdir)
    path = os.path.join(tmp, "input" + suffix)
    with open(path, "wb") as f:
        f.write(data)
    argv = [binary] + [a.format(input=path, tmp=tmp) for a in args_template]
    env = dict(os.environ)
    env.update(SANITIZER_ENV)
    if MEMORY_LIMITS["asan_mb"]:
        # Allocations past the limit fail (posix_memalign returns ENOMEM,
        # operator new reports out-of-memory); RSS past it ends the run.
        env["ASAN_OPTIONS"] += (":max_allocation_size_mb=%d:"
                                "allocator_may_return_null=1:"
                                "hard_rss_limit_mb=%d" %
                                (MEMORY_LIMITS["asan_mb"],
                                 MEMORY_LIMITS["asan_mb"]))
    start = time.time()
    timed_out = False
    for attempt in range(5):
        try:
            proc = subprocess.run(argv, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, timeout=timeout,
                                  env=env, cwd=tmp,
                                  preexec_fn=limit_address_space)
            rc, err = proc.returncode, proc.stderr
            break
        except subprocess.TimeoutExpired as e:
            rc, err, timed_out = None, e.stderr or b"", True
            break
        except OSError:
            # The binary is being relinked (ETXTBSY, EACCES): wait for it.
            if attempt == 4:
                raise
            time.sleep(2)
    elapsed = time.time() - start
    for name in os.listdir(tmp):
        try:
            os.unlink(os.path.join(tmp, name))
        except OSError:
            pass
    os.rmdir(tmp)
    stderr = err.decode("utf-8", "replace")
    kind = classify(rc if rc is not None else 0, stderr, path, timed_out)
    return kind, rc, stderr, elapsed


def save_finding(out_dir, kind, sig, data, suffix, stderr, seen):
    h = hashlib.sha1(sig.encode()).hexdigest()[:10]
    if sig in seen:
        seen[sig]["count"] += 1
        # Keep the smallest example of each signature.
        if len(data) >= seen[sig]["size"]:
            return None
    base = os.path.join(out_dir, "%s-%s" % (kind, h))
    with open(base + suffix, "wb") as f:
        f.write(data)
    with open(base + ".stderr", "w") as f:
        f.write(sig + "\n\n" + stderr)
    entry = seen.setdefault(sig, {"count": 0, "file": base + suffix})
    entry["count"] = max(entry["count"], 1)
    entry["size"] = len(data)
    return base + suffix


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


# --------------------------------------------------------------------------


def in_order(job, items, jobs):
    """job(*item) for every item of the iterable `items` on `jobs` threads,
    at most 2 x jobs in flight; yields the results in the items' order (so
    a seeded run reports the same sequence whatever the thread count)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        pending = []
        source = iter(items)
        while True:
            while len(pending) < 2 * jobs:
                item = next(source, None)
                if item is None:
                    break
                pending.append(pool.submit(job, *item))
            if not pending:
                return
            yield pending.pop(0).result()


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
                             "--preset tiny --emit=plan")
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

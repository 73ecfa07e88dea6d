"""Runs a fuzz target on one input and judges the outcome, for
tests/fuzz/fuzz_inputs.py and tests/fuzz/fuzz_onnx.py: the target under
sanitizer options and memory guards, its outcome classified (error, ok,
crash, hang, resource, noplace), a failure's signature, the findings saved
one per signature, and a thread pool that keeps the inputs' order.

Only the Python standard library is used.
"""

import concurrent.futures
import hashlib
import os
import re
import subprocess
import tempfile
import time

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

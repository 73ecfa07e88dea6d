#!/usr/bin/env python3
"""A new user's first hour (issue 37, points 1-12): each check runs the
mistake the issue names and checks what the CLI does with it (run by ctest;
stdlib only, PyTorch for the ONNX parts, which skip without it).

  first_hour.py REMAT REMAT_RUN CHECK, CHECK one of
  outputs-not-inputs  an output equal to an input (or to another output) is
                      refused with exit 2 and the input is unchanged byte
                      for byte: compile -o/--report, train --plan/--save,
                      run --save, explain --json, plan --json, profile -o
  sidecar-devnull     an ONNX model's plan to -o /dev/null writes no
                      /dev/null.weights.safetensors
  failed-no-output    a compile whose --report cannot be written leaves no
                      plan behind
  train-outputs-early train --save / --dump-grads into a missing folder fail
                      before the compile
  sweep-rows          --points N gives at most N rows, each a different
                      plan; a model with no room says so in one line
  budget-zero         --budget 0 is one usage error in compile, train, plan
  byte-sizes          500kb, 0.6M, 600kB, 1.5GiB accepted by every command;
                      a bad size quotes the grammar
  budget-frac         --budget-frac on a model, or a bad one with --graph,
                      is a usage error with the command's prefix
  numbers             --time-limit -1 and train --steps 0 are usage errors
  remat-run-name      remat-run --help and its usage errors name remat-run
  launcher-ranks      train under an MPI launcher without --ranks stops
                      before compiling and names --ranks N
  file-kinds          folders, missing files, ONNX under another name, a
                      model given to remat run
  interrupted         train stopped by SIGINT or SIGTERM mid-run leaves no
                      temporary (its plan folder, --save's) and no output
  runtime-small       remat-run on seed_mlp's tiny plan (cpu backend) maps
                      no CUDA library (its /proc/PID/maps, read while it
                      runs), peaks at most 64 MB resident, and states its
                      fixed bytes on stderr and in the step log, within the
                      report's runtime_fixed_bytes
Exit 0 on success, 1 with a message on failure, 77 when skipped.
"""
import os
import re
import subprocess
import sys
import tempfile

from errors import BASE, GPT2, ROOT, edited, expect, fail, write

SKIP = 77
sys.path.insert(0, os.path.join(ROOT, "tools"))


def read(path):
    with open(path, "rb") as f:
        return f.read()


def torch_or_skip():
    try:
        import torch  # noqa: F401
        import export_onnx
    except ImportError as e:
        print(f"skipped: PyTorch is not installed ({e})")
        sys.exit(SKIP)
    return export_onnx


def outputs_not_inputs(remat, remat_run, work):
    model = write(work, "m.json", BASE)
    plan = os.path.join(work, "p.plan")
    expect([remat, "compile", model, "--emit=plan", "-o", plan], 0)
    link = os.path.join(work, "link.json")
    os.symlink(model, link)
    before = {p: read(p) for p in (model, plan)}
    clash = "writing it would destroy an input"
    cases = [
        ([remat, "compile", model, "-o", model], "remat compile: -o"),
        ([remat, "compile", model, "--emit=plan", "-o", model], clash),
        ([remat, "compile", model, "-o", link], clash),
        ([remat, "compile", model, "--emit=plan", "-o",
          os.path.join(work, "q.plan"), "--report", model], "--report"),
        ([remat, "compile", model, "--emit=plan", "-o",
          os.path.join(work, "q.plan"), "--report",
          os.path.join(work, "q.plan")], "are the same file"),
        ([remat, "train", model, "--plan", model], "remat train: --plan"),
        ([remat, "train", model, "--steps", "1", "--save", model], "--save"),
        ([remat, "run", plan, "--save", plan], "remat run: --save"),
        ([remat_run, plan, "--log", plan], "remat-run: --log"),
        ([remat, "explain", plan, "--json", plan], "remat explain: --json"),
        ([remat, "plan", model, "--json", model], "remat plan: --json"),
        ([remat, "profile", model, "-o", model], "remat profile: -o"),
    ]
    for argv, text in cases:
        expect(argv, 2, text, absent=("planned peak", "step 1"))
        for path, data in before.items():
            if read(path) != data:
                fail(f"{' '.join(argv)} changed {os.path.basename(path)}")
    if os.path.exists(os.path.join(work, "q.plan")):
        fail("a refused compile wrote q.plan")


def sidecar_devnull(remat, remat_run, work):
    export_onnx = torch_or_skip()
    model = os.path.join(work, "c.onnx")
    export_onnx.export("classifier", model, batch=4)
    sidecar = "/dev/null.weights.safetensors"
    if os.path.exists(sidecar):
        os.remove(sidecar)  # left by an older remat
    expect([remat, "compile", model, "--emit=plan", "-o", "/dev/null"], 0)
    if os.path.exists(sidecar):
        os.remove(sidecar)
        fail(f"compile -o /dev/null created {sidecar}")
    # A plan into a FIFO cannot have its weights beside it: an error.
    fifo = os.path.join(work, "fifo")
    os.mkfifo(fifo)
    expect([remat, "compile", model, "--emit=plan", "-o", fifo], 1,
           "needs a regular file for its plan")


def failed_no_output(remat, remat_run, work):
    model = write(work, "m.json", BASE)
    plan = os.path.join(work, "p.plan")
    missing = os.path.join(work, "nodir", "r.json")
    for argv in ([remat, "compile", model, "--emit=plan", "-o", plan,
                  "--report", missing],
                 [remat, "train", model, "--plan", plan, "--report", missing],
                 [remat, "compile", model, "--emit=plan", "-o", plan,
                  "--budget", "64"]):
        expect(argv, 1, "error")
        if os.path.exists(plan):
            fail(f"{' '.join(os.path.basename(a) for a in argv)}: failed but "
                 "left the plan behind")
    if [n for n in os.listdir(work) if n.startswith(".")]:
        fail(f"temporaries left: {os.listdir(work)}")


def train_outputs_early(remat, remat_run, work):
    for flag in ("--save", "--dump-grads", "--dump-values", "--log"):
        missing = os.path.join(work, "nodir", "out")
        extra = ["--dump-names", "all"] if flag == "--dump-values" else []
        expect([remat, "train", GPT2, "--preset", "tiny", "--steps", "50",
                flag, missing] + extra, 1,
               f"cannot write '{missing}': the folder", absent=("planned peak",
                                                               "step 1"))


def sweep_rows(remat, remat_run, work):
    def rows(argv):
        r = expect(argv, 0, stream="stdout")
        table = [l for l in r.stdout.splitlines() if re.match(r"\| \d", l)]
        plans = [tuple(l.split("|")[3:5]) for l in table]
        if len(set(plans)) != len(plans):
            fail(f"{' '.join(argv[1:])}: rows repeat a plan:\n" +
                 "\n".join(table))
        return r.stdout, table
    # Wide weights, a small batch: the minimum is within 1% of store-all.
    wide = write(work, "wide.json", edited('"batch": 4, "d": 8',
                                           '"batch": 2, "d": 256'))
    out, table = rows([remat, "plan", wide, "--sweep", "--points", "9"])
    said = [l for l in out.splitlines() if "to sweep:" in l]
    if len(said) != 1 or len(table) > 9:
        fail(f"a sweep with no room: {len(table)} rows, {len(said)} lines "
             f"saying so:\n{out}")
    for n in (1, 2, 5):
        out, table = rows([remat, "plan", GPT2, "--preset", "tiny", "--sweep",
                           "--points", str(n)])
        if not 1 <= len(table) <= n:
            fail(f"--points {n}: {len(table)} rows")


def budget_zero(remat, remat_run, work):
    model = write(work, "m.json", BASE)
    text = "--budget '0' is too small: no step fits in 0 bytes"
    for command, extra in (("compile", ["--emit=plan"]), ("train", []),
                           ("plan", [])):
        expect([remat, command, model, "--budget", "0"] + extra, 2,
               f"remat {command}: {text}", absent=("workspace reserve",
                                                   "planned peak"))


def byte_sizes(remat, remat_run, work):
    import json
    model = write(work, "m.json", BASE)
    for size, nbytes in (("500kb", 500000), ("0.6M", 600000),
                         ("600kB", 600000), ("1.5GiB", 1610612736),
                         ("2 MiB", 2097152), ("123456", 123456)):
        r = expect([remat, "plan", model, "--budget", size], 0,
                   stream="stdout")
        got = json.loads(r.stdout)["budget_bytes"]
        if got != nbytes:
            fail(f"--budget {size}: budget_bytes {got}, want {nbytes}")
        report = os.path.join(work, "r.json")
        expect([remat, "compile", model, "--emit=plan", "-o", os.devnull,
                "--budget", size, "--report", report], 0)
        if json.load(open(report))["budget_bytes"] != nbytes:
            fail(f"compile --budget {size}: another budget_bytes")
    for command, extra in (("compile", ["--emit=plan"]), ("train", []),
                           ("plan", [])):
        for bad in ("12 parsecs", "1e6", "-5MB", "5 MiBs"):
            expect([remat, command, model, "--budget", bad] + extra, 2,
                   f"remat {command}: --budget '{bad}' is not a byte size",
                   "powers of 1024", "units in any case")


def budget_frac(remat, remat_run, work):
    model = write(work, "m.json", BASE)
    graph = os.path.join(work, "g.json")
    subprocess.run([sys.executable, os.path.join(ROOT, "tests", "tools",
                                                 "gen_layered_graph.py"),
                    "--nodes", "20", "--seed", "1", "-o", graph], check=True,
                   capture_output=True)
    for value in ("abc", "1.5", "0", "-0.5", "0.5x"):
        for argv in ([remat, "plan", model, "--budget-frac", value],
                     [remat, "plan", "--graph", graph, "--budget-frac", value]):
            expect(argv, 2, f"remat plan: --budget-frac needs a fraction "
                   f"of the store-all peak in (0, 1] or 'min', got '{value}'")
    expect([remat, "plan", model, "--budget-frac", "0.5"], 2,
           "remat plan: --budget-frac goes with --graph")
    expect([remat, "plan", "--graph", graph, "--budget-frac", "0.9"], 0,
           stream="stdout")


def numbers(remat, remat_run, work):
    model = write(work, "m.json", BASE)
    for command, extra in (("compile", ["--emit=plan", "--budget", "1MB"]),
                           ("train", []), ("plan", [])):
        for bad in ("-1", "abc", "inf"):
            expect([remat, command, model, "--time-limit", bad] + extra, 2,
                   f"remat {command}: --time-limit needs a number of seconds "
                   f">= 0, got '{bad}'", absent=("planned peak",))
    expect([remat, "train", model, "--steps", "0"], 2,
           "remat train: --steps 0 trains nothing", absent=("planned peak",))


def remat_run_name(remat, remat_run, work):
    r = expect([remat_run, "--help"], 0, "usage: remat-run PLAN",
               stream="stdout")
    expect([remat_run, "p.plan", "--stepz", "1"], 2,
           "remat-run: unknown option '--stepz'", "(see remat-run --help)")
    expect([remat, "run", "--help"], 0, "usage: remat run PLAN",
           stream="stdout")


def launcher_ranks(remat, remat_run, work):
    model = write(work, "m.json", BASE)
    env = dict(os.environ, OMPI_COMM_WORLD_SIZE="2")
    expect([remat, "train", model, "--steps", "1"], 2,
           "remat train: the launcher started 2 ranks, but the plan would be "
           "for 1: give remat train --ranks 2", absent=("planned peak",),
           env=env)


def file_kinds(remat, remat_run, work):
    model = write(work, "m.json", BASE)
    folder = os.path.join(work, "folder.plan")
    os.mkdir(folder)
    expect([remat, "run", folder], 1, "cannot open the plan file: it is a "
           "directory", absent=("truncated JSON",))
    expect([remat, "explain", folder], 1, "it is a directory")
    expect([remat, "compile", folder], 1, "is a directory, not a model file")
    missing = os.path.join(work, "missing.json")
    expect([remat, "compile", missing], 1,
           f"cannot open '{missing}': No such file or directory")
    expect([remat, "run", os.path.join(work, "missing.plan")], 1,
           "cannot open the plan file: No such file or directory")
    expect([remat, "run", model, "--weights", os.path.join(work, "w.st")], 1,
           "this is a remat model, not a plan",
           f"`remat train {model} --steps N`")
    expect([remat, "run", model], 1, "this is a remat model, not a plan")
    export_onnx = torch_or_skip()
    onnx = os.path.join(work, "c.onnx")
    export_onnx.export("classifier", onnx, batch=4)
    renamed = os.path.join(work, "classifier.model")
    os.rename(onnx, renamed)
    expect([remat, "compile", renamed, "--emit=plan", "-o",
            os.path.join(work, "c.plan")], 0, absent=("malformed JSON",))
    expect([remat, "run", renamed], 1, "this is an ONNX model, not a plan",
           "remat train")


def wait_for_steps(p, log, steps, seconds, stopped):
    """Waits until process `p` has logged `steps` lines to `log`; fails
    with stopped() when it ends first, or when `seconds` pass (killing it).
    """
    import time
    deadline = time.time() + seconds
    while time.time() < deadline:
        if os.path.exists(log) and open(log).read().count("\n") >= steps:
            return
        if p.poll() is not None:
            fail(stopped())
        time.sleep(0.05)
    p.kill()
    fail(f"{os.path.basename(p.args[0])} logged no {steps} steps in "
         f"{seconds} s")


def interrupted(remat, remat_run, work):
    import signal
    for sig in (signal.SIGINT, signal.SIGTERM):
        tmp = os.path.join(work, "tmp")
        os.mkdir(tmp)
        out = os.path.join(work, "out")
        os.mkdir(out)
        log = os.path.join(out, "log.jsonl")
        p = subprocess.Popen(
            [remat, "train", GPT2, "--preset", "tiny", "--steps", "1000000",
             "--save", os.path.join(out, "w.safetensors"), "--log", log],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env=dict(os.environ, TMPDIR=tmp))
        wait_for_steps(p, log, 2, 120,
                       lambda: f"train stopped by itself: {p.stderr.read()!r}")
        p.send_signal(sig)
        rc = p.wait(timeout=60)
        if rc != -sig:
            fail(f"after {sig.name} train exited {rc}, not by the signal")
        left = os.listdir(tmp) + [n for n in os.listdir(out)
                                  if n != "log.jsonl"]
        if left:
            fail(f"{sig.name} left {left} behind")
        print(f"ok: {sig.name} after 2 steps: nothing left but the log")
        import shutil
        shutil.rmtree(tmp)
        shutil.rmtree(out)


RUNTIME_PEAK_LIMIT = 64 * 1000 * 1000  # issue 37: at most 64 MB
CUDA_LIBRARY = re.compile(r"/lib(cuda|cudart|cublas|cublasLt|nccl|nvrtc|"
                          r"remat-cuda)[^/]*\.so")


def proc_kib(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    fail(f"no {key} in /proc/{pid}/status")


def runtime_small(remat, remat_run, work):
    import json
    seed_mlp = os.path.join(ROOT, "models", "seed_mlp.json")
    plan = os.path.join(work, "tiny.plan")
    expect([remat, "compile", seed_mlp, "--preset", "tiny", "--emit=plan",
            "-o", plan], 0)
    log = os.path.join(work, "log.jsonl")
    stderr = os.path.join(work, "stderr")
    with open(stderr, "w") as err:
        p = subprocess.Popen([remat_run, plan, "--backend", "cpu", "--steps",
                              "100000000", "--log", log],
                             stdout=subprocess.DEVNULL, stderr=err)
    try:
        wait_for_steps(p, log, 3, 60,
                       lambda: f"remat-run stopped: {open(stderr).read()!r}")
        with open(f"/proc/{p.pid}/maps") as f:
            maps = f.read()
        # The process's peak so far: the runtime resets VmHWM when the
        # executor starts (before it, the plan was read: the fixed bytes
        # below bound that part), so take the larger of the two.
        hwm = proc_kib(p.pid, "VmHWM")
        rss = proc_kib(p.pid, "VmRSS")
    finally:
        p.kill()
        p.wait()
    cuda = sorted({m.group(0) for m in CUDA_LIBRARY.finditer(maps)})
    if cuda:
        fail(f"a cpu run maps CUDA libraries: {cuda}")
    entry = json.loads(open(log).readline())
    if "runtime_fixed_bytes" not in entry:
        fail(f"the step log states no runtime_fixed_bytes: {entry}")
    fixed = entry["runtime_fixed_bytes"]
    said = re.search(r"runtime fixed bytes (\d+) B", open(stderr).read())
    if not said or int(said.group(1)) != fixed:
        fail(f"stderr does not state the fixed bytes {fixed}: "
             f"{open(stderr).read()!r}")
    stated = json.load(open(plan))["report"].get("runtime_fixed_bytes")
    if not isinstance(stated, int) or fixed > stated:
        fail(f"measured fixed bytes {fixed} B over the report's "
             f"runtime_fixed_bytes {stated!r}")
    peak = max(hwm, fixed, entry["peak_rss_bytes"])
    print(f"remat-run: fixed {fixed} B, VmHWM {hwm} B, VmRSS {rss} B, "
          f"no CUDA mapping")
    if peak > RUNTIME_PEAK_LIMIT:
        fail(f"remat-run peaks at {peak} B resident, over "
             f"{RUNTIME_PEAK_LIMIT} B")


CHECKS = {"outputs-not-inputs": outputs_not_inputs,
          "sidecar-devnull": sidecar_devnull,
          "failed-no-output": failed_no_output,
          "train-outputs-early": train_outputs_early,
          "sweep-rows": sweep_rows, "budget-zero": budget_zero,
          "byte-sizes": byte_sizes, "budget-frac": budget_frac,
          "numbers": numbers, "remat-run-name": remat_run_name,
          "launcher-ranks": launcher_ranks, "file-kinds": file_kinds,
          "interrupted": interrupted, "runtime-small": runtime_small}


def main():
    if len(sys.argv) != 4 or sys.argv[3] not in CHECKS:
        print(__doc__)
        return 2
    remat, remat_run, check = sys.argv[1:]
    with tempfile.TemporaryDirectory() as work:
        CHECKS[check](remat, remat_run, work)
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())

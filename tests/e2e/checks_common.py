"""The helpers of the e2e checks (checks.py and the scripts that import it):
model paths, failing, safetensors entries, and `remat` compile and run
calls that return losses, reports and dumped gradients."""
import json
import mmap
import os
import struct
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def model(name):
    return os.path.join(ROOT, "models", name)


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def safetensors_entries(path):
    """(name, header entry, raw bytes) of every tensor of a safetensors file;
    the bytes are a read-only memoryview of the file mapped into memory (no
    copies: the zoo's files are hundreds of MB)."""
    with open(path, "rb") as f:
        raw = memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(bytes(raw[8:8 + n]))
    body = raw[8 + n:]
    for name, info in header.items():
        if name != "__metadata__":
            begin, end = info["data_offsets"]
            yield name, info, body[begin:end]


def losses(remat, args, work, tag):
    log = os.path.join(work, tag + ".jsonl")
    result = subprocess.run([remat, "train"] + args + ["--log", log],
                            capture_output=True, text=True)
    if result.returncode != 0:
        fail(f"remat train {' '.join(args)} failed:\n{result.stderr}")
    with open(log) as f:
        return [json.loads(line)["loss"] for line in f]


def compile_plan(remat, args, work, tag, env=None):
    plan = os.path.join(work, tag + ".plan")
    report = os.path.join(work, tag + ".json")
    r = subprocess.run([remat, "compile"] + args + ["--emit=plan", "-o", plan,
                                                    "--report", report],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        return None, r.stderr
    with open(report) as f:
        return plan, json.load(f)


def minimum_budget(remat, args, work, env=None):
    """The minimum feasible budget of the model `args` compile: the error of
    a budget of 1 byte names it."""
    _, error = compile_plan(remat, args + ["--budget", "1"], work, "x", env)
    marker = "minimum feasible budget: "
    if marker not in error:
        fail(f"an infeasible budget did not name the minimum: {error}")
    return int(error.split(marker)[1].split()[0])


def run_plan(remat, plan, work, tag, steps=2, env=None, extra=(),
             stderr=None):
    """Losses and the dumped gradients (bytes) of `steps` steps of `plan`;
    `extra` flags for remat run, its stderr appended to the list `stderr`."""
    log = os.path.join(work, tag + ".jsonl")
    grads = os.path.join(work, tag + ".grads")
    r = subprocess.run([remat, "run", plan, "--steps", str(steps), "--seed",
                        "3", "--log", log, "--dump-grads", grads] +
                       list(extra), capture_output=True, text=True, env=env)
    if r.returncode != 0:
        fail(f"remat run {plan} failed:\n{r.stderr}")
    if stderr is not None:
        stderr.append(r.stderr)
    with open(log) as f:
        losses = [json.loads(line)["loss"] for line in f]
    with open(grads, "rb") as f:
        return losses, f.read()

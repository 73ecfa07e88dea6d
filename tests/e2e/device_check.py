#!/usr/bin/env python3
"""Checks of tests/device/device-check.sh that need no GPU (stdlib only).

  device_check.py bitwise-tool    tools/bench/budgets_bitwise.py finds equal
                                  runs equal, and names the step, gradient
                                  and index of a one-ulp difference
  device_check.py broken-build    BREAK_BUILD=1 (every compile fails) stops
                                  the run within a minute of the build
                                  stage's start, naming it, before any test
                                  ran

Exit 0 on success, 1 with a message on failure.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "bench", "budgets_bitwise.py")
SCRIPT = os.path.join(ROOT, "tests", "device", "device-check.sh")


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def write_run(work, tag, losses, grads):
    """A --log JSONL and a --dump-grads safetensors file like remat run's."""
    log = os.path.join(work, tag + ".jsonl")
    with open(log, "w") as f:
        for step, loss in enumerate(losses, 1):
            f.write(json.dumps({"step": step, "loss": loss, "ms": 1.0}) + "\n")
    header, data = {}, b""
    for name, values in grads.items():
        raw = struct.pack("<%df" % len(values), *values)
        header[name] = {"dtype": "F32", "shape": [len(values)],
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    head = json.dumps(header).encode()
    path = os.path.join(work, tag + ".safetensors")
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + data)
    return f"{log},{path}"


def next_float(x):
    (bits,) = struct.unpack("<I", struct.pack("<f", x))
    return struct.unpack("<f", struct.pack("<I", bits + 1))[0]


def bitwise(*args):
    r = subprocess.run([sys.executable, TOOL, *args], capture_output=True,
                       text=True)
    if r.returncode != 0:
        fail(f"budgets_bitwise.py {' '.join(args)}: exit {r.returncode}\n"
             f"{r.stderr}")
    return r.stdout


def check_bitwise_tool():
    work = tempfile.mkdtemp(prefix="remat-bitwise-")
    try:
        losses = [2.5, 2.25, 2.0]
        grads = {"w": [0.5, -0.25, 1e-3, 3.0], "b": [0.125, 0.0]}
        a = write_run(work, "a", losses, grads)
        same = write_run(work, "same", losses, grads)
        out = bitwise("--a", "all=" + a, "--b", "half=" + same)
        if "bitwise: yes (3 losses, 2 gradients, 6 values)" not in out:
            fail("equal runs not reported bitwise equal:\n" + out)
        # One ulp in w[2] and in the step-2 loss.
        grads_b = {"w": [0.5, -0.25, next_float(1e-3), 3.0],
                   "b": [0.125, 0.0]}
        losses_b = [2.5, next_float(2.25), 2.0]
        b = write_run(work, "b", losses_b, grads_b)
        result = os.path.join(work, "result.json")
        out = bitwise("--a", "all=" + a, "--b", "half=" + b, "--out", result)
        for want in ("bitwise: NO", "losses differ at 1 of 3 steps",
                     "at step 2", "1 of 2 gradients differ",
                     "in 'w' [index 2]"):
            if want not in out:
                fail(f"'{want}' missing from the report of a one-ulp "
                     f"difference:\n{out}")
        r = json.load(open(result))
        ulp = next_float(1e-3) - struct.unpack("<f", struct.pack("<f", 1e-3))[0]
        if r["bitwise"] or abs(r["largest_gradient_difference"] - ulp) > 1e-15:
            fail(f"wrong largest difference {r} (one ulp is {ulp})")
        # Why: A rerun with B's workspace that equals B blames the workspace.
        out = bitwise("--a", "all=" + a, "--b", "half=" + b,
                      "--same-workspace", b)
        if "why: A with B's workspace equals B" not in out:
            fail("the workspace not named as the cause:\n" + out)
        out = bitwise("--a", "all=" + a, "--b", "half=" + b,
                      "--same-workspace", a)
        if "the plans themselves differ" not in out:
            fail("the plans not named as the cause:\n" + out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("budgets_bitwise.py: equal runs equal; a one-ulp loss and "
          "gradient difference found and located; the cause named")


def check_broken_build():
    work = tempfile.mkdtemp(prefix="remat-device-check-")
    try:
        plans = os.path.join(work, "plans")
        os.makedirs(plans)
        for name in ("gpt2-tiny-all", "gpt2-tiny-50"):
            open(os.path.join(plans, name + ".plan"), "w").close()
        env = dict(os.environ, EMULATOR="1", BREAK_BUILD="1",
                   BUILD=os.path.join(work, "build"),
                   OUT=os.path.join(work, "out"), PLANS_DIR=plans,
                   PYTHON=sys.executable)
        # The minute counts from the build stage's start: configuring on a
        # loaded machine may take a while by itself.
        proc = subprocess.Popen(["bash", SCRIPT], env=env, text=True,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
        lines, build_started = [], None
        deadline = time.time() + 180
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("== build") and build_started is None:
                build_started = time.time()
            if time.time() > deadline:
                proc.kill()
                fail("the device check did not stop within 180 s on a "
                     "broken build:\n" + "".join(lines))
        rc = proc.wait()
        ended = time.time()
        out = "".join(lines)
        if build_started is None:
            fail("the build stage never started:\n" + out)
        took = ended - build_started
        if rc != 1:
            fail(f"exit {rc} on a broken build (expected 1):\n{out}")
        if "RESULT build: FAIL" not in out:
            fail("the build stage is not named as failing:\n" + out)
        if "injected by BREAK_BUILD=1" not in out:
            fail("the failing stage's evidence (the compile error) is not "
                 "shown:\n" + out)
        for later in ("RESULT kernels", "RESULT whole-model", "RESULT bench"):
            if later in out:
                fail(f"'{later}' ran after the failed build:\n{out}")
        summary = open(os.path.join(work, "out", "summary.md")).read()
        if "FAIL at build" not in summary:
            fail("summary.md does not say the run failed at build:\n" +
                 summary)
        if not os.path.exists(os.path.join(work, "out", "logs.tgz")):
            fail("no logs.tgz with the evidence")
        if took > 60:
            fail(f"the run took {took:.0f} s to stop after the build stage "
                 f"began (limit 60 s):\n{out}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"BREAK_BUILD=1: stopped at the build stage, named, {took:.0f} s "
          f"after it began")


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in ("bitwise-tool",
                                                 "broken-build"):
        print(__doc__)
        return 2
    {"bitwise-tool": check_bitwise_tool,
     "broken-build": check_broken_build}[sys.argv[1]]()
    return 0


if __name__ == "__main__":
    sys.exit(main())

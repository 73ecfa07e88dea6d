#!/usr/bin/env python3
"""Every kind of file the tools write, written to the places that break naive
writers (docs/cli.md "Output files"):

  /dev/null      stays a character device (as root a rename would replace it)
  a symlink      still points to its target, which holds the new content
  a FIFO         a reader in another process gets the whole content
  a missing dir  a clear error naming the path, exit 1, nothing written

and no temporary file (`.NAME.XXXXXX`) is left in any folder written to.
Usage: outputs.py REMAT REMAT_OPT
"""
import os
import stat
import subprocess
import sys
import tempfile
import threading

import workdir

FAILURES = []


def check(condition, message):
    if not condition:
        FAILURES.append(message)
        print("FAIL: " + message)


def leftovers(folder):
    return [n for n in os.listdir(folder) if n.startswith(".")]


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=300,
                          **kw)


def main():
    return workdir.run_in(
        lambda work: check_writers(sys.argv[1], sys.argv[2], work),
        "remat-outputs-")


def check_writers(remat, remat_opt, work):
    """The checks, their files in the folder `work`: 0 all passed, else 1."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    model = os.path.join(root, "models", "gpt2.json")
    tiny = [model, "--preset", "tiny"]

    # Inputs the writers need: a plan, and the IR remat-opt reads.
    plan = os.path.join(work, "in.plan")
    ir = os.path.join(work, "in.mlir")
    r = run([remat, "compile"] + tiny + ["--emit=plan", "-o", plan])
    check(r.returncode == 0, f"compile to a plan failed: {r.stderr}")
    r = run([remat, "compile"] + tiny + ["--emit=graph", "-o", ir])
    check(r.returncode == 0, f"compile to IR failed: {r.stderr}")
    if FAILURES:
        return 1

    # Each writer: a name and argv with {} where the output path goes.
    writers = {
        "compile -o (IR)": [remat, "compile"] + tiny + ["-o", "{}"],
        "compile -o (plan)": [remat, "compile"] + tiny + ["--emit=plan",
                                                          "-o", "{}"],
        "compile --report": [remat, "compile"] + tiny + [
            "--emit=plan", "-o", os.path.join(work, "r.plan"),
            "--report", "{}"],
        "train --plan": [remat, "train"] + tiny + ["--steps", "1",
                                                   "--plan", "{}"],
        "plan --json": [remat, "plan"] + tiny + ["--budget", "600000",
                                                 "--json", "{}"],
        "explain -o (SVG)": [remat, "explain", plan, "-o", "{}"],
        "explain --json": [remat, "explain", plan, "--json", "{}"],
        "run --log": [remat, "run", plan, "--steps", "2", "--log", "{}"],
        "run --save": [remat, "run", plan, "--steps", "1", "--save", "{}"],
        "run --dump-grads": [remat, "run", plan, "--steps", "1",
                             "--dump-grads", "{}"],
        "remat-opt -o": [remat_opt, ir, "-remat-autodiff", "-o", "{}"],
    }

    def argv_for(name, path):
        return [path if a == "{}" else a for a in writers[name]]

    for name in writers:
        failures_before = len(FAILURES)
        folder = tempfile.mkdtemp(prefix="out-", dir=work)

        # A regular file: the content every other case is compared with.
        regular = os.path.join(folder, "regular")
        r = run(argv_for(name, regular))
        check(r.returncode == 0 and os.path.isfile(regular),
              f"{name}: writing a regular file failed: {r.stderr}")
        expected = open(regular, "rb").read() if os.path.isfile(regular) \
            else b""
        check(len(expected) > 0, f"{name}: wrote an empty file")
        # Reports and logs hold times; the rest is byte-identical per run.
        deterministic = name not in ("run --log", "compile --report",
                                     "plan --json")

        # /dev/null stays a character device.
        r = run(argv_for(name, "/dev/null"))
        check(r.returncode == 0, f"{name}: -> /dev/null failed: {r.stderr}")
        check(stat.S_ISCHR(os.stat("/dev/null").st_mode),
              f"{name}: /dev/null is no longer a character device")

        # A symbolic link (relative, to a file in a sibling folder) stays a
        # link and its target gets the content.
        targets = os.path.join(folder, "targets")
        os.mkdir(targets)
        target = os.path.join(targets, "target")
        with open(target, "wb") as f:
            f.write(b"old content")
        link = os.path.join(folder, "link")
        os.symlink(os.path.join("targets", "target"), link)
        r = run(argv_for(name, link))
        check(r.returncode == 0, f"{name}: -> symlink failed: {r.stderr}")
        check(os.path.islink(link) and
              os.readlink(link) == os.path.join("targets", "target"),
              f"{name}: the symbolic link was replaced")
        content = open(target, "rb").read()
        check(content != b"old content" and
              (content == expected or not deterministic),
              f"{name}: the link's target does not hold the new content")

        # A FIFO read by another process.
        fifo = os.path.join(folder, "fifo")
        os.mkfifo(fifo)
        got = {}
        reader = subprocess.Popen(["cat", fifo], stdout=subprocess.PIPE)
        threading.Thread(target=lambda: got.setdefault(
            "data", reader.communicate(timeout=300)[0])).start()
        r = run(argv_for(name, fifo))
        reader.wait(timeout=300)
        while "data" not in got:
            pass
        check(r.returncode == 0, f"{name}: -> FIFO failed: {r.stderr}")
        check(stat.S_ISFIFO(os.lstat(fifo).st_mode),
              f"{name}: the FIFO was replaced")
        check(got["data"] == expected or
              (not deterministic and len(got["data"]) > 0),
              f"{name}: the FIFO's reader got {len(got['data'])} bytes, "
              f"want {len(expected)}")

        # A folder that does not exist: a clear error naming the path.
        missing = os.path.join(folder, "no-such-dir", "out")
        r = run(argv_for(name, missing))
        check(r.returncode == 1 and missing in r.stderr and
              "does not exist" in r.stderr,
              f"{name}: -> missing folder: exit {r.returncode}, "
              f"stderr {r.stderr!r}")
        check(not os.path.exists(os.path.dirname(missing)),
              f"{name}: the missing folder was created")

        for place in (folder, targets, work):
            check(not leftovers(place),
                  f"{name}: temporary files left in {place}: "
                  f"{leftovers(place)}")
        if len(FAILURES) == failures_before:
            print(f"{name}: regular, /dev/null, symlink, FIFO, missing "
                  "folder ok")

    check(not [n for n in os.listdir("/dev") if n.startswith(".null")],
          "a temporary file was left in /dev")

    # A failed compile leaves the old file as it was and no temporary.
    keep = os.path.join(work, "keep.mlir")
    with open(keep, "w") as f:
        f.write("old")
    bad = os.path.join(work, "bad.json")
    with open(bad, "w") as f:
        f.write('{"format": "remat-model"')
    r = run([remat, "compile", bad, "-o", keep])
    check(r.returncode == 1 and open(keep).read() == "old",
          "a failed compile changed its output file")
    check(not leftovers(work), f"temporary files left: {leftovers(work)}")

    # Two writers of the same path at the same moment: both succeed and the
    # file holds one whole output.
    same = os.path.join(work, "same.plan")
    procs = [subprocess.Popen([remat, "compile"] + tiny +
                              ["--emit=plan", "-o", same],
                              stderr=subprocess.PIPE) for _ in range(4)]
    codes = [p.wait(timeout=300) for p in procs]
    check(codes == [0] * 4, f"concurrent writers exited {codes}")
    check(open(same, "rb").read() == open(plan, "rb").read(),
          "concurrent writers left a file unlike a single writer's")
    check(not leftovers(work), f"temporary files left: {leftovers(work)}")

    if FAILURES:
        print(f"{len(FAILURES)} failures")
        return 1
    print(f"{len(writers)} writers x 5 destinations ok; no temporary files")
    return 0


if __name__ == "__main__":
    sys.exit(main())

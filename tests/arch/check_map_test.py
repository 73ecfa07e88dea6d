#!/usr/bin/env python3
"""Shows that tests/arch/check_map.py fails on what it is meant to catch.

Copies the repository's tracked files into a temporary folder, plants one
violation at a time and checks that the map check then reports it (a new
problem line naming the planted file, and exit status 1):
  - passes/ including a runtime/ header outside runtime/plan/;
  - runtime/ including a tools/ header;
  - a source file grown past 800 lines;
  - "this session" in a document under docs/;
  - RematPasses linking RematRuntime, RematRuntime linking cuBLAS (CMake's
    target graph).
Each plant is undone before the next. Exit 0 when every plant is caught.
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CHECK = os.path.join(HERE, "check_map.py")


def copy_tree(dest):
    files = subprocess.run(["git", "-C", ROOT, "ls-files"], check=True,
                           capture_output=True, text=True).stdout.split()
    for f in files:
        src = os.path.join(ROOT, f)
        if not os.path.isfile(src):
            continue
        os.makedirs(os.path.dirname(os.path.join(dest, f)), exist_ok=True)
        shutil.copy2(src, os.path.join(dest, f))


def problems(root, check):
    run = subprocess.run([sys.executable, CHECK, "--root", root, "--only",
                          check], capture_output=True, text=True)
    lines = {l for l in run.stdout.splitlines()
             if l.startswith(check + ": ") and not l.endswith((" ok",))
             and "problem(s)" not in l}
    return run.returncode, lines


def plant(root, path, edit):
    full = os.path.join(root, path)
    with open(full) as f:
        original = f.read()
    with open(full, "w") as f:
        f.write(edit(original))
    return lambda: open(full, "w").write(original)


PLANTS = [
    ("includes", "passes/Schedule.cpp", "passes/Schedule.cpp",
     lambda s: '#include "runtime/Executor.h"\n' + s),
    ("includes", "runtime/Executor.cpp", "runtime/Executor.cpp",
     lambda s: '#include "tools/remat/CompileCommand.h"\n' + s),
    ("size", "passes/Schedule.cpp", "passes/Schedule.cpp",
     lambda s: s + "// padding\n" * 801),
    ("history", "docs/cli.md", "docs/cli.md",
     lambda s: s + "\nThis session made the flags agree.\n"),
    ("links", "passes/CMakeLists.txt", "RematPasses: links RematRuntime",
     lambda s: s + "\ntarget_link_libraries(RematPasses PUBLIC RematRuntime)\n"),
    ("links", "runtime/CMakeLists.txt", "RematRuntime: links cublas",
     lambda s: s + "\ntarget_link_libraries(RematRuntime PUBLIC cublas)\n"),
]


def main():
    failed = 0
    with tempfile.TemporaryDirectory(prefix="remat-map-test-") as root:
        copy_tree(root)
        for check, path, expect, edit in PLANTS:
            _, before = problems(root, check)
            undo = plant(root, path, edit)
            rc, after = problems(root, check)
            undo()
            new = after - before
            caught = rc == 1 and any(expect in l for l in new)
            print(f"{'caught' if caught else 'MISSED'}  {check}: planted in "
                  f"{path}" + ("" if caught else f" (exit {rc}, new: {sorted(new)})"))
            failed += not caught
    print(f"{len(PLANTS) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

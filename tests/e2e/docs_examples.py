#!/usr/bin/env python3
"""Runs every example command of README.md and docs/*.md and checks the
outputs the docs quote (docs/cli.md "Examples in the docs").

Fenced blocks are read by their language:

  ```sh       every line is a command; the block runs as one bash script
              (`set -euo pipefail`), so a variable set on one line is seen
              on the next and any failing command fails the block.
  ```console  lines starting with `$ ` are commands; the lines after one,
              up to the next `$ `, are its output, which
              must match as a terminal shows them (stderr interleaved): a
              line `...` (indented or not) stands for any number of lines, and
              times (`3.1 ms`, `20645 tokens/s`, `samples/s`) match any time, and
              remat run's measured `runtime fixed bytes N B` any N.

Other blocks (text, json, mlir, no language) are not commands. An HTML
comment `<!-- docs-test: skip REASON -->` right before a fence skips that
block (it is listed, with its reason, in the output); REASON says what runs
it instead (CI, the device check).

The commands of one document run in order in one scratch folder that holds
links to models/, tests/, tools/ and docs/, and `build/tools/remat/remat`,
`build/tools/remat-opt/remat-opt` and `build/runtime/remat-run` links to the
binaries under test; `remat`, `remat-opt` and `remat-run` are on PATH.

Usage: docs_examples.py --remat R --remat-opt O --remat-run RR [DOC...]
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

import workdir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
FENCE = re.compile(r"^```(\S*)\s*$")
DIRECTIVE = re.compile(r"<!--\s*docs-test:\s*skip\s*(.*?)\s*-->")
TIMES = [(re.compile(r"\d+(\.\d+)? ms\b"), "<t> ms"),
         (re.compile(r"\d+(\.\d+)? (samples|tokens)/s\b"), r"<n> \2/s"),
         (re.compile(r"runtime fixed bytes \d+ B"), "runtime fixed bytes <n> B")]
TIMEOUT = 600


def blocks(path):
    """(language, first line number, lines, skip reason or None) of every
    fenced block of a Markdown file."""
    lines = open(path).read().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        lang, start = m.group(1), i + 1
        skip = None
        for back in (i - 1, i - 2):
            if back >= 0:
                d = DIRECTIVE.search(lines[back])
                if d:
                    skip = d.group(1) or "no reason given"
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        out.append((lang, start + 1, lines[i + 1:j], skip))
        i = j + 1
    return out


def normalize(line):
    for pattern, replacement in TIMES:
        line = pattern.sub(replacement, line)
    return line.rstrip()


def matches(expected, actual):
    """Whether the actual lines match the expected ones, `...` standing for
    any number of lines (backtracking; docs quote a few dozen lines)."""
    expected = [normalize(e) for e in expected]
    actual = [normalize(a) for a in actual]
    memo = {}

    def go(i, j):
        if (i, j) in memo:
            return memo[(i, j)]
        if i == len(expected):
            result = j == len(actual)
        elif expected[i].strip() == "...":
            result = any(go(i + 1, k) for k in range(j, len(actual) + 1))
        else:
            result = j < len(actual) and expected[i] == actual[j] and \
                go(i + 1, j + 1)
        memo[(i, j)] = result
        return result
    return go(0, 0)


def scratch(args):
    work = tempfile.mkdtemp(prefix="remat-docs-")
    for name in ("models", "tests", "tools", "docs"):
        os.symlink(os.path.join(ROOT, name), os.path.join(work, name))
    binaries = {"remat": (args.remat, "build/tools/remat"),
                "remat-opt": (args.remat_opt, "build/tools/remat-opt"),
                "remat-run": (args.remat_run, "build/runtime")}
    bindir = os.path.join(work, ".bin")
    os.mkdir(bindir)
    for name, (binary, folder) in binaries.items():
        os.makedirs(os.path.join(work, folder), exist_ok=True)
        os.symlink(os.path.abspath(binary), os.path.join(work, folder, name))
        os.symlink(os.path.abspath(binary), os.path.join(bindir, name))
    env = dict(os.environ)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    return work, env


def run(script, work, env, merged=False):
    """Runs a script; `merged`: stderr goes where stdout goes, interleaved
    as a terminal shows them (the result's stdout holds both)."""
    return subprocess.run(["bash", "-c", "set -euo pipefail\n" + script],
                          cwd=work, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT if merged
                          else subprocess.PIPE, text=True, timeout=TIMEOUT)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--remat", required=True)
    parser.add_argument("--remat-opt", required=True)
    parser.add_argument("--remat-run", required=True)
    parser.add_argument("docs", nargs="*")
    args = parser.parse_args()
    docs = args.docs or [os.path.join(ROOT, "README.md")] + sorted(
        glob.glob(os.path.join(ROOT, "docs", "*.md")))
    failures, commands, skipped = [], 0, []
    for doc in docs:
        name = os.path.relpath(doc, ROOT)
        work, env = scratch(args)
        failures_before = len(failures)
        for lang, line, body, skip in blocks(doc):
            if lang not in ("sh", "console"):
                continue
            where = f"{name}:{line}"
            if skip:
                skipped.append(f"{where}: {skip}")
                continue
            if lang == "sh":
                script = "\n".join(body)
                commands += sum(1 for b in body
                                if b.strip() and not b.lstrip().startswith("#"))
                r = run(script, work, env)
                if r.returncode != 0:
                    failures.append(f"{where}: the block exited "
                                    f"{r.returncode}:\n{script}\n--- stderr:\n"
                                    f"{r.stderr[-3000:]}")
                continue
            # console: commands and their quoted output.
            k = 0
            while k < len(body):
                if not body[k].startswith("$ "):
                    failures.append(f"{where}+{k}: output with no command "
                                    f"before it: {body[k]!r}")
                    break
                command = body[k][2:]
                expected = []
                k += 1
                while k < len(body) and not body[k].startswith("$ "):
                    expected.append(body[k])
                    k += 1
                while expected and not expected[-1].strip():
                    expected.pop()
                commands += 1
                r = run(command, work, env, merged=True)
                actual = r.stdout.rstrip("\n").split("\n") \
                    if r.stdout.strip() else []
                if r.returncode != 0:
                    failures.append(f"{where}: `{command}` exited "
                                    f"{r.returncode}:\n{r.stdout[-3000:]}")
                elif expected and not matches(expected, actual):
                    failures.append(
                        f"{where}: `{command}` printed other than the doc "
                        "quotes.\n--- the doc:\n" + "\n".join(expected) +
                        "\n--- the tool:\n" + "\n".join(actual))
        workdir.finish(work, passed=len(failures) == failures_before)
    for s in skipped:
        print(f"skipped {s}")
    for f in failures:
        print(f"FAIL {f}\n")
    print(f"{commands} commands from {len(docs)} documents, {len(skipped)} "
          f"blocks skipped, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

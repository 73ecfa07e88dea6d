#!/usr/bin/env python3
"""`--help` and docs/cli.md say the same: every flag a command's --help lists
is documented in that command's section of docs/cli.md, and every flag the
section documents is one --help lists (remat train also takes remat run's
flags, which pass through). For remat-opt: every remat pass and each of its
options. `remat --help` names every document in docs/.

Usage: help_docs.py REMAT REMAT_OPT
"""
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
FLAG = re.compile(r"(?<![\w./-])(--[a-z][a-z0-9-]*|-o)(?![\w-])")
COMMANDS = ["compile", "train", "plan", "run", "explain", "profile"]


def sections(text):
    """docs/cli.md's `## ...` sections by the first word after `remat ` in
    the heading (`compile`, `run`, ...), `remat-opt` for remat-opt's."""
    out, name = {}, None
    for line in text.split("\n"):
        if line.startswith("## "):
            m = re.match(r"## `remat(-opt)?\s*(\w*)", line)
            name = None
            if m:
                name = "remat-opt" if m.group(1) else m.group(2)
            out.setdefault(name, "")
        if name:
            out[name] += line + "\n"
    return out


def flags(text, command=None):
    """The flags a text names, leaving out those in a quoted command line of
    another command (`remat compile MODEL --emit=plan -o P`)."""
    def other(m):
        quoted = m.group(1)
        words = quoted.split()
        if len(words) > 1 and words[0] == "remat" and words[1] != command:
            return ""
        return m.group(0)
    text = re.sub(r"`([^`]*)`", other, text)
    return set(FLAG.findall(text)) - {"--help"}


def main():
    remat, remat_opt = sys.argv[1], sys.argv[2]
    doc = open(os.path.join(ROOT, "docs", "cli.md")).read()
    parts = sections(doc)
    failures = []
    helps = {}
    for command in COMMANDS:
        r = subprocess.run([remat, command, "--help"], capture_output=True,
                           text=True)
        if r.returncode != 0:
            failures.append(f"remat {command} --help exited {r.returncode}")
            continue
        helps[command] = flags(r.stdout, command)
    for command in COMMANDS:
        if command not in parts:
            failures.append(f"docs/cli.md has no section `remat {command}`")
            continue
        documented = flags(parts[command], command)
        listed = helps.get(command, set())
        passthrough = helps.get("run", set()) if command == "train" else set()
        for flag in sorted(listed - documented - passthrough):
            failures.append(f"remat {command} --help lists {flag}, which "
                            f"docs/cli.md's `remat {command}` section lacks")
        for flag in sorted(documented - listed - passthrough):
            failures.append(f"docs/cli.md's `remat {command}` section "
                            f"documents {flag}, which remat {command} --help "
                            "does not list")

    # remat-opt: remat's passes and their options.
    r = subprocess.run([remat_opt, "--help"], capture_output=True, text=True)
    passes, current = {}, None
    for line in r.stdout.split("\n"):
        m = re.match(r"^      (--remat-[a-z-]+)\s", line)
        if m:
            current = m.group(1)[1:]
            passes[current] = set()
            continue
        m = re.match(r"^        --([a-z-]+)", line)
        if m and current:
            passes[current].add(m.group(1))
        elif not line.startswith("        "):
            current = None
    section = parts.get("remat-opt", "")
    if not passes:
        failures.append("remat-opt --help lists no remat pass")
    for name, options in sorted(passes.items()):
        if name not in section:
            failures.append(f"remat-opt's pass {name} is not in docs/cli.md's "
                            "remat-opt section")
        for option in sorted(options):
            if not re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])",
                             section):
                failures.append(f"remat-opt's option {name}={option} is not "
                                "in docs/cli.md's remat-opt section")

    # `remat --help` names every document.
    r = subprocess.run([remat, "--help"], capture_output=True, text=True)
    for path in sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))):
        name = "docs/" + os.path.basename(path)
        if name not in r.stdout:
            failures.append(f"remat --help does not name {name}")

    for f in failures:
        print("FAIL " + f)
    print(f"{len(COMMANDS)} commands, {len(passes)} remat-opt passes: "
          f"{len(failures)} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""`--help` and docs/cli.md say the same: every flag a command's --help lists
is documented in that command's section of docs/cli.md, and every flag the
section documents is one --help lists (remat train also takes remat run's
flags, which pass through, and its --help lists each of them). A flag whose
--help entry states a default has every number of that entry on a line of
its docs section that names it. A command that takes an ONNX model's
training flags lists all of them. docs/cli.md's exit codes name every
command. For remat-opt: every remat pass and each of its options. `remat
--help` names every document in docs/; `remat-run --help` names remat-run.

Usage: help_docs.py REMAT REMAT_OPT [REMAT_RUN]
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


TRAINING_FLAGS = {"--input-shape", "--loss", "--optimizer", "--lr", "--frozen"}


def entries(help_text):
    """--help's option entries: (flags, text) for each line that starts
    with "  -", with its more indented continuation lines."""
    out = []
    for line in help_text.split("\n"):
        if re.match(r"^  -", line):
            out.append(line)
        elif out and re.match(r"^   ", line):
            out[-1] += "\n" + line
    return [(FLAG.findall(e.split("  ", 2)[1] if e.count("  ") > 1 else e), e)
            for e in out]


def default_mismatches(command, help_text, section):
    """A flag whose entry states a default: some line of the docs section
    naming the flag holds every number of the entry."""
    failures = []
    for names, text in entries(help_text):
        if "default" not in text or not names:
            continue
        flag = names[0]
        numbers = set(re.findall(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w.])", text))
        if not numbers:
            continue
        lines = [l for l in section.split("\n")
                 if re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", l)]
        if not any(all(re.search(rf"(?<![\w.]){re.escape(n)}(?![\w.])", l)
                       for n in numbers) for l in lines):
            failures.append(f"remat {command} --help gives {flag} the "
                            f"default(s) {sorted(numbers)}; no line of "
                            "docs/cli.md's section naming it says so")
    return failures


def main():
    remat, remat_opt = sys.argv[1], sys.argv[2]
    remat_run = sys.argv[3] if len(sys.argv) > 3 else None
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
        texts = helps.setdefault("texts", {})
        texts[command] = r.stdout
    texts = helps.pop("texts", {})
    for flag in sorted(helps.get("run", set()) - helps.get("train", set())):
        failures.append(f"remat train --help does not list remat run's {flag}, "
                        "which it passes on")
    for command in COMMANDS:
        listed = helps.get(command, set())
        if listed & TRAINING_FLAGS and not TRAINING_FLAGS <= listed:
            failures.append(f"remat {command} --help lists "
                            f"{sorted(listed & TRAINING_FLAGS)} of an ONNX "
                            f"model's training flags but not "
                            f"{sorted(TRAINING_FLAGS - listed)}")
        if command in parts and command in texts:
            failures += default_mismatches(command, texts[command],
                                           parts[command])
    exit_codes = re.search(r"## Exit codes\n(.*?)\n## ", doc, re.S)
    for command in COMMANDS:
        if not exit_codes or f"`{command}`" not in exit_codes.group(1):
            failures.append(f"docs/cli.md's exit codes do not name `{command}`")
    if remat_run:
        r = subprocess.run([remat_run, "--help"], capture_output=True,
                           text=True)
        if not r.stdout.startswith("usage: remat-run "):
            failures.append("remat-run --help does not name remat-run: "
                            f"{r.stdout.splitlines()[:1]}")
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

#!/usr/bin/env python3
"""Counts, for every op of the graph dialect, the hand-written source files
that name it in any spelling.

The op list comes from ir/GraphOps.td (through `llvm-tblgen --dump-json`).
Files scanned: C++, TableGen and CUDA sources (.h .cpp .inc .td .cu .cuh)
outside tests/, docs/, build folders and generated files (`*.inc` and
anything under a `generated/` folder). A file names an op when
  - an identifier, split into lower-case words at `_` and camel humps,
    equals the op's words with optional framing words around them
    (`graph`, `op`, `kind`, `launch`, `kernel`, `check`, `infer`, `k`),
    e.g. `GeluGradOp`, `OpKind::GeluGrad`, `launchGeluGrad`, `gelu_grad`; or
    A call of a <cmath> function of the same name (`std::exp(x)`,
    `exp(x)` in device code) is the math function, not the op, and a name
    in oneDNN's namespace (`dnnl::matmul`) is the library's primitive; or
  - a string literal or a comment holds the op's snake-case name as a word
    (`"gelu_grad"`, `graph.gelu_grad`; not joined to others by hyphens,
    as in the flag value `per-slice`); in comments a one-word name such as
    `add` counts only when quoted or in backticks, since prose uses the word.

Usage: tests/tools/op_mentions.py [--max N] [--ops a,b] [--list] [ROOT]
Prints one line per op: count and files. With --max N, exits 1 when a plain
op (not dropout, attention, cross_entropy, the optimizer updates,
grad_accumulate or their
gradients) is named in more than N files.
"""
import argparse
import json
import os
import re
import subprocess
import sys

NOT_PLAIN = {"dropout", "attention", "attention_grad", "cross_entropy",
             "cross_entropy_grad", "sgd_update", "sgd_plain_update",
             "adamw_update", "grad_accumulate"}
FRAMING = {"graph", "op", "kind", "launch", "kernel", "check", "infer", "k"}
EXTS = (".h", ".cpp", ".td", ".cu", ".cuh")


def op_names(root):
    tblgen = os.environ.get("LLVM_TBLGEN", "/usr/lib/llvm-19/bin/llvm-tblgen")
    if not os.path.exists(tblgen):
        print(f"op_mentions: {tblgen} not found (LLVM 19 tools); skipped")
        sys.exit(77)
    out = subprocess.run(
        [tblgen, "--dump-json", "-I", "/usr/lib/llvm-19/include", "-I", root,
         os.path.join(root, "ir/GraphOps.td")],
        check=True, capture_output=True, text=True).stdout
    records = json.loads(out)
    names = []
    for rec in records["!instanceof"]["Op"]:
        r = records[rec]
        if r["opDialect"]["def"] == "Graph_Dialect":
            names.append(r["opName"])
    return sorted(names)


def words(identifier):
    parts = []
    for chunk in identifier.split("_"):
        parts += re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", chunk)
    return [p.lower() for p in parts if p]


COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MATH_CALL = re.compile(r"(?:std::)?\b(exp|tanh|erf|pow)\s*\(")
LIBRARY_NAME = re.compile(r"\bdnnl::[A-Za-z_][A-Za-z0-9_]*")


def names_in(text, ops):
    """The set of ops named in one file's text."""
    found = set()
    comments = " ".join(m.group(0) for m in COMMENT.finditer(text))
    code = COMMENT.sub(" ", text)
    strings = " ".join(m.group(0) for m in STRING.finditer(code))
    code = STRING.sub(" ", code)
    code = MATH_CALL.sub(" (", code)
    code = LIBRARY_NAME.sub(" ", code)
    opwords = {op: op.split("_") for op in ops}
    for ident in set(IDENT.findall(code)):
        w = words(ident)
        while w and w[0] in FRAMING:
            w = w[1:]
        while w and w[-1] in FRAMING:
            w = w[:-1]
        for op, ow in opwords.items():
            if w == ow:
                found.add(op)
    for op in ops:
        # A hyphenated compound ("per-slice", a flag's value) is not a name.
        word = r"(?<![A-Za-z0-9_-])" + re.escape(op) + r"(?![A-Za-z0-9_-])"
        if re.search(word, strings):
            found.add(op)
        if "_" in op:
            if re.search(word, comments):
                found.add(op)
        elif re.search(r"[`'\"]" + re.escape(op) + r"[`'\"]|graph\." +
                       re.escape(op) + r"(?![A-Za-z0-9_])", comments):
            found.add(op)
    return found


def source_files(root):
    skip_top = {"tests", "docs", ".git"}
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        top = rel.split(os.sep)[0]
        if top in skip_top or top.startswith("build") or top.startswith("."):
            if rel != ".":
                dirnames[:] = []
                continue
        if "generated" in rel.split(os.sep):
            continue
        for f in filenames:
            if f.endswith(EXTS):
                yield os.path.join(rel, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("root", nargs="?",
                    default=os.path.dirname(os.path.dirname(os.path.dirname(
                        os.path.abspath(__file__)))))
    ap.add_argument("--max", type=int, default=None)
    ap.add_argument("--ops", default="")
    ap.add_argument("--list", action="store_true", help="print the files too")
    args = ap.parse_args()
    ops = op_names(args.root)
    if args.ops:
        ops = [o for o in ops if o in args.ops.split(",")]
    files = {op: [] for op in ops}
    for path in sorted(source_files(args.root)):
        with open(os.path.join(args.root, path), encoding="utf-8",
                  errors="replace") as f:
            for op in names_in(f.read(), ops):
                files[op].append(path)
    over = []
    for op in ops:
        plain = op not in NOT_PLAIN
        line = f"{op:20} {len(files[op]):3}{'' if plain else ' (not plain)'}"
        if args.list:
            line += "  " + " ".join(files[op])
        print(line)
        if plain and args.max is not None and len(files[op]) > args.max:
            over.append(op)
    if over:
        print(f"op_mentions: {len(over)} plain ops named in more than "
              f"{args.max} files: {', '.join(over)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

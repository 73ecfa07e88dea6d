#!/usr/bin/env python3
"""Checks the source tree against docs/architecture.md's map.

  check_map.py [--root DIR] [--only CHECK[,CHECK...]]
               [--allow-oversize FILE...]

Checks (all by default; --only picks some):
  includes  every `#include "X/..."` of a hand-written source follows the
            layer rules below, and the MLIR-free layers include no mlir/ or
            llvm/ header.
  links     what each library links, directly or through another, from
            CMake's target graph (a configure of the tree into a temporary
            folder with --graphviz): LINK_RULES below.
  size      no hand-written source file is over 800 lines.
  history   README.md and docs/*.md tell no history (HISTORY_WORDS below;
            CHANGELOG.md is where history goes).
  ops       every plain op is named in at most 6 hand-written files
            (tests/tools/op_mentions.py --max 6; skipped without LLVM 19's
            llvm-tblgen).
Prints one line per violation as `check: file:line: what`, then a summary;
exits 1 when any check fails.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ROOT = os.path.dirname(os.path.dirname(HERE))

# Layers, most specific prefix first, and the layers each may include.
# ops <- runtime/plan <- ir <- passes <- compiler <- tools, and
# runtime/plan <- runtime <- tools (docs/architecture.md).
LAYERS = [
    ("runtime/plan/", "runtime/plan"),
    ("runtime/", "runtime"),
    ("ops/", "ops"),
    ("ir/", "ir"),
    ("passes/", "passes"),
    ("compiler/", "compiler"),
    ("tools/", "tools"),
    ("tests/", "tests"),
]
MAY_INCLUDE = {
    "ops": {"ops"},
    "runtime/plan": {"ops", "runtime/plan"},
    "runtime": {"ops", "runtime/plan", "runtime"},
    "ir": {"ops", "runtime/plan", "ir"},
    "passes": {"ops", "runtime/plan", "ir", "passes"},
    "compiler": {"ops", "runtime/plan", "ir", "passes", "compiler"},
    "tools": {"ops", "runtime/plan", "runtime", "ir", "passes", "compiler",
              "tools"},
    "tests": {"ops", "runtime/plan", "runtime", "ir", "passes", "compiler",
              "tools", "tests"},
}
# Folders with no MLIR or LLVM: the runtime, the op table, and the
# planner's and memory algorithms' plain-data libraries.
MLIR_FREE = ("ops/", "runtime/", "passes/planner/", "passes/memory/")

# Per library target: the targets it may not link, directly or through
# another (CMake's link closure), and link items (libraries outside the
# project) it may not name.
LINK_RULES = {
    "RematOps": {"targets": {"RematPlan", "RematRuntime", "RematIR"},
                 "items": ("dnnl", "openblas", "mpi", "MLIR", "LLVM",
                           "cuda", "cublas", "nccl")},
    "RematPlan": {"targets": {"RematRuntime", "RematCpuKernelInfo",
                              "RematIR"},
                  "items": ("dnnl", "openblas", "mpi", "MLIR", "LLVM",
                            "cuda", "cublas", "nccl")},
    # The CUDA libraries only in the module libremat-cuda.so, loaded on
    # demand (runtime/BackendModule.cpp).
    "RematRuntime": {"targets": {"RematIR", "RematPasses", "RematCompiler",
                                 "RematCudaBackend"},
                     "items": ("MLIR", "LLVM", "cuda", "cublas", "nccl")},
    "RematIR": {"targets": {"RematRuntime", "RematCpuKernelInfo"},
                "items": ("dnnl", "openblas", "mpi")},
    "RematPasses": {"targets": {"RematRuntime", "RematCpuKernelInfo"},
                    "items": ("dnnl", "openblas", "mpi")},
    "RematCompiler": {"targets": {"RematRuntime", "RematCpuKernelInfo"},
                      "items": ("dnnl", "openblas", "mpi")},
    "remat-run": {"targets": {"RematIR", "RematPasses", "RematCompiler",
                              "RematCudaBackend"},
                  "items": ("MLIR", "LLVM", "cuda", "cublas", "nccl")},
    "remat": {"targets": {"RematCudaBackend"},
              "items": ("cuda", "cublas", "nccl")},
}

SOURCE_EXTS = (".h", ".cpp", ".cu", ".cuh", ".td", ".py", ".sh", ".cmake")
MAX_LINES = 800
# Not hand-written, or data: generated tables, model and plan files.
NOT_HANDWRITTEN = ("ops/generated/", "models/", "tests/e2e/models/",
                   "tests/e2e/plans/", "tests/e2e/profiles/",
                   "runtime/backends/cuda/emu/include/")

HISTORY_WORDS = [r"\bsessions?\b", r"\bturn \d+\b", r"\bthis change\b",
                 r"\bno longer\b", r"\bused to\b", r"\bpreviously\b",
                 r"\bbefore this\b", r"\buntil now\b"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SYSTEM_INCLUDE = re.compile(r'^\s*#\s*include\s+[<"]((mlir|llvm)/[^">]+)[">]')


def tracked_files(root):
    """The repository's files (git's list where it is a checkout)."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files"], check=True,
                             capture_output=True, text=True).stdout
        files = [f for f in out.splitlines()
                 if os.path.isfile(os.path.join(root, f))]
        if files:
            return sorted(files)
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames
                       if not d.startswith(".") and not d.startswith("build")]
        for name in filenames:
            files.append(os.path.relpath(os.path.join(dirpath, name), root))
    return sorted(files)


def layer_of(path):
    for prefix, layer in LAYERS:
        if path.startswith(prefix):
            return layer
    return None


def check_includes(root, files):
    problems = []
    for f in files:
        if not f.endswith((".h", ".cpp", ".cu", ".cuh")):
            continue
        layer = layer_of(f)
        if layer is None:
            continue
        with open(os.path.join(root, f), errors="replace") as src:
            for number, line in enumerate(src, 1):
                m = INCLUDE.match(line)
                if m:
                    target = layer_of(m.group(1))
                    if target and target not in MAY_INCLUDE[layer]:
                        problems.append(
                            f"{f}:{number}: {layer}/ includes "
                            f"\"{m.group(1)}\" ({target}/ is not below it)")
                if f.startswith(MLIR_FREE):
                    s = SYSTEM_INCLUDE.match(line)
                    if s:
                        problems.append(f"{f}:{number}: includes {s.group(1)} "
                                        "in an MLIR-free layer")
    return problems


def target_graph(root, work):
    """Configures `root` into the folder `work` with CMake's --graphviz and
    returns (names, edges): node id -> target or library name, and node id
    -> the node ids it links (static libraries' usage requirements
    included)."""
    dot = os.path.join(work, "targets.dot")
    run = subprocess.run(["cmake", "-G", "Ninja", "-S", root, "-B", work,
                          "-DCMAKE_BUILD_TYPE=Release", "--graphviz=" + dot],
                         capture_output=True, text=True)
    if run.returncode != 0 or not os.path.exists(dot):
        raise RuntimeError("cmake failed: " + (run.stderr.strip().splitlines()
                                               or ["no output"])[-1])
    names, edges, modules = {}, {}, set()
    node = re.compile(r'^\s*"(\w+)" \[ label = "([^"]+)"(?:, shape = (\w+))?')
    edge = re.compile(r'^\s*"(\w+)" -> "(\w+)"')
    with open(dot) as f:
        for line in f:
            m = node.match(line)
            if m:
                names[m.group(1)] = m.group(2)
                # A module library (libremat-cuda.so) is loaded, never
                # linked: an edge to it is add_dependencies' build order.
                if m.group(3) == "tripleoctagon":
                    modules.add(m.group(1))
                continue
            m = edge.match(line)
            if m:
                edges.setdefault(m.group(1), set()).add(m.group(2))
    for node_id in edges:
        edges[node_id] -= modules
    return names, edges


def check_links(root, work):
    try:
        names, edges = target_graph(root, work)
    except RuntimeError as e:
        return [str(e)]
    ids = {name: i for i, name in names.items()}
    problems = []
    for name, rule in LINK_RULES.items():
        if name not in ids:
            continue
        seen, todo = set(), [ids[name]]
        while todo:
            for dep in edges.get(todo.pop(), ()):
                if dep not in seen:
                    seen.add(dep)
                    todo.append(dep)
        linked = sorted(names[i] for i in seen)
        for lib in linked:
            base = os.path.basename(lib)
            if lib in rule["targets"]:
                problems.append(f"{name}: links {lib}")
            elif lib not in names.values() or not lib.startswith("Remat"):
                for word in rule["items"]:
                    if re.match(r"(lib)?" + re.escape(word), base,
                                re.IGNORECASE) or \
                            re.match(r"(CUDA|MPI)::", lib) and \
                            word.lower() in lib.lower():
                        problems.append(f"{name}: links {lib}")
                        break
    return problems


def check_size(root, files, allowed=()):
    problems = []
    for f in files:
        base = os.path.basename(f)
        if not (f.endswith(SOURCE_EXTS) or base == "CMakeLists.txt"):
            continue
        if f.startswith(NOT_HANDWRITTEN) or f.endswith(".inc"):
            continue
        with open(os.path.join(root, f), errors="replace") as src:
            lines = sum(1 for _ in src)
        if lines > MAX_LINES and f in allowed:
            print(f"size: {f}: {lines} lines, allowed by --allow-oversize "
                  "(still to split)")
        elif lines > MAX_LINES:
            problems.append(f"{f}:{lines}: {lines} lines (at most {MAX_LINES})")
    return problems


def check_history(root, files):
    problems = []
    pattern = re.compile("|".join(HISTORY_WORDS), re.IGNORECASE)
    for f in files:
        if not (f == "README.md" or (f.startswith("docs/") and f.endswith(".md"))):
            continue
        with open(os.path.join(root, f), errors="replace") as src:
            for number, line in enumerate(src, 1):
                m = pattern.search(line)
                if m:
                    problems.append(f"{f}:{number}: \"{m.group(0)}\" tells "
                                    "history (CHANGELOG.md holds it)")
    return problems


def check_ops(root):
    script = os.path.join(root, "tests/tools/op_mentions.py")
    run = subprocess.run([sys.executable, script, "--max", "6", root],
                         capture_output=True, text=True)
    if run.returncode == 77:
        return None
    if run.returncode != 0:
        last = (run.stdout + run.stderr).strip().splitlines()
        return [f"op_mentions: {last[-1] if last else 'failed'}"]
    return []


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=DEFAULT_ROOT)
    parser.add_argument("--only", default="includes,links,size,history,ops")
    parser.add_argument("--allow-oversize", nargs="*", default=[],
                        metavar="FILE",
                        help="files the size check lets pass (listed)")
    args = parser.parse_args()
    checks = args.only.split(",")
    files = tracked_files(args.root)
    failed = 0
    for check in checks:
        if check == "includes":
            problems = check_includes(args.root, files)
        elif check == "links":
            with tempfile.TemporaryDirectory(prefix="remat-map-") as work:
                problems = check_links(args.root, work)
        elif check == "size":
            problems = check_size(args.root, files, args.allow_oversize)
        elif check == "history":
            problems = check_history(args.root, files)
        elif check == "ops":
            problems = check_ops(args.root)
            if problems is None:
                print("ops: skipped (no llvm-tblgen)")
                continue
        else:
            parser.error(f"unknown check '{check}'")
        for p in problems:
            print(f"{check}: {p}")
        print(f"{check}: {'ok' if not problems else f'{len(problems)} problem(s)'}")
        failed += bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

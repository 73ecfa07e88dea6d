#!/usr/bin/env python3
"""Capture the compiler's outputs and compare two captures (stdlib only).

Proves that a refactor leaves the output of `remat` unchanged: capture once
with the binaries of the commit before the refactor, once with the new ones,
and compare the two folders item by item.

  compare_baseline.py capture --remat BUILD/tools/remat/remat \\
      [--run BUILD/runtime/remat-run] --out DIR [--graphs DIR] [--models DIR]
  compare_baseline.py compare BASE_DIR NEW_DIR

capture writes into DIR (which must be empty or not exist):

  models/NAME/CONFIG/store-all.plan, half.plan, min.plan
      `remat compile MODEL ARGS --emit=plan -o PLAN --report REPORT` at three
      budgets: none (store-all), half the activation memory, and the minimum
      feasible budget. CONFIG/ARGS per model (CONFIGS below): gpt2 `tiny`
      (--preset tiny) and `small` (--preset small); mlp_deep `tiny` and
      `tiny-b64` (--preset tiny --set batch=64); seed_mlp `tiny`; any other
      model `tiny` where it has that preset, else `batch2` (--set batch=2).
      The minimum is what `remat compile --budget 1` names in its error
      ("minimum feasible budget: N"), as tests/e2e/checks_common.py finds it; half is
      persistent + activations // 2 from the store-all report
      (persistent = planned_peak_bytes - activations - grads), raised to the
      minimum where it is below it (as the e2e budgets-bitwise check does;
      at `tiny` it is below for every model, hence the second configs).
  models/NAME/CONFIG/BUDGET.report.json   the --report of each compile
  models/NAME/CONFIG/BUDGET.losses.json   the losses of `remat-run PLAN
      --steps 5 --log LOG.jsonl` (`remat run` without --run): a JSON list
      of the `loss` values exactly as the log prints them
  models/NAME/CONFIG/BUDGET.grads.json    sha256 of step 1's parameter
      gradients (the same run's `--dump-grads` safetensors file)
  models/NAME/CONFIG/budgets.json   the three budgets and the minimum
  models/NAME/CONFIG/sweep.json     `remat plan MODEL ARGS --sweep --json F`
  graphs/GRAPH/frac-F.json     `remat plan --graph FILE --budget-frac F --json`
      for every graph in --graphs (default models/checkmate-graphs;
      skipped with a note when absent) at F = 0.9, 0.7, 0.5 and min. An infeasible budget exits 1 and
      still writes its JSON (status, error); the exit code is compared too.
  manifest.json   every command run (argv, exit code, seconds), the items
      (file, command, exit code), the binaries and the capture's duration.

A command that fails where it should not is recorded as an item holding its
exit code and the last lines of its stderr, so compare reports the change.

compare loads both manifests and, for every item of either, prints
`same  ITEM` or `DIFF  ITEM: first difference` (a JSON path and both values),
then `N same, M differ`. Exit status 1 when anything differs (or an item is
missing on one side), 0 otherwise. Exit codes of the commands are compared
with the items. JSON numbers are compared as parsed (floats as doubles: the
same value printed differently is the same; every bit of a double counts).

Normalized away before comparing (nondeterministic: timings and the
process's memory), at any depth of any JSON item:
  - keys named `solve_seconds`, `seconds`, `ms`, `tok_s`, `tokens_per_s`,
    `samples_per_s`, `peak_rss_bytes`, `rss_growth_bytes`,
    `device_peak_bytes`, `device_context_bytes`, `device_memory`;
  - keys ending in `_seconds` or `_ms`, and keys starting with `wall` or
    `time`;
  except the modeled, deterministic `modeled_step_seconds` and
  `launch_seconds` (the roofline step time and the device profile's launch
  cost: outputs of the cost model, not measurements), which are compared.
The losses files hold only `loss` values, so the logs' per-step timings
(`ms`, `samples_per_s`, `tokens_per_s`) and RSS figures never reach them.
"""
import argparse
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
DEFAULT_MODELS = os.path.join(ROOT, "models")
DEFAULT_GRAPHS = os.path.join(ROOT, "models", "checkmate-graphs")
FRACTIONS = ["0.9", "0.7", "0.5", "min"]
STEPS = 5

# Normalization (see the docstring).
IGNORED_KEYS = {"solve_seconds", "seconds", "ms", "tok_s", "tokens_per_s",
                "samples_per_s", "peak_rss_bytes", "rss_growth_bytes",
                "device_peak_bytes", "device_context_bytes", "device_memory"}
IGNORED_SUFFIXES = ("_seconds", "_ms")
IGNORED_PREFIXES = ("wall", "time")
KEPT_KEYS = {"modeled_step_seconds", "launch_seconds"}


def ignored(key):
    if key in KEPT_KEYS:
        return False
    return (key in IGNORED_KEYS or key.endswith(IGNORED_SUFFIXES) or
            key.startswith(IGNORED_PREFIXES))


def normalize(value):
    if isinstance(value, dict):
        return {k: normalize(v) for k, v in value.items() if not ignored(k)}
    if isinstance(value, list):
        return [normalize(v) for v in value]
    return value


# ---------------------------------------------------------------- capture


class Capture:
    def __init__(self, out):
        self.out = out
        self.commands = []
        self.items = {}
        self.notes = []

    def path(self, item):
        p = os.path.join(self.out, item)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        return p

    def run(self, argv):
        """Runs argv; returns (exit code, stdout, stderr, command index)."""
        start = time.monotonic()
        r = subprocess.run(argv, capture_output=True, text=True)
        seconds = time.monotonic() - start
        self.commands.append({"argv": argv, "returncode": r.returncode,
                              "seconds": round(seconds, 3)})
        shown = " ".join(os.path.relpath(a, self.out)
                         if a.startswith(self.out) else os.path.basename(a)
                         if os.path.isabs(a) else a for a in argv)
        print(f"  [{seconds:6.2f} s] rc {r.returncode}  {shown}", flush=True)
        return r.returncode, r.stdout, r.stderr, len(self.commands) - 1

    def item(self, name, command, returncode):
        """Records an item whose file `name` exists under the capture."""
        self.items[name] = {"file": name, "command": command,
                            "returncode": returncode}

    def failed(self, name, command, returncode, stderr):
        """Records a command that produced no output as an item."""
        tail = [line for line in stderr.splitlines() if line.strip()][-5:]
        write_json(self.path(name), {"failed": True,
                                     "returncode": returncode,
                                     "stderr_tail": tail})
        self.item(name, command, returncode)

    def json_item(self, name, value, command=None, returncode=0):
        write_json(self.path(name), value)
        self.item(name, command, returncode)


def write_json(path, value):
    with open(path, "w") as f:
        json.dump(value, f, indent=1, sort_keys=True)
        f.write("\n")


# Configurations compiled per model (tag, arguments). Small enough that a
# whole capture takes about a minute on 2 cores; the second configuration
# of gpt2 and mlp_deep is one where half the activation memory is above the
# minimum feasible budget (at `tiny` it is below, so half = min there).
# seed_mlp's minimum is its store-all arena at any size (nothing to
# recompute), so its three plans differ only in the report's budget.
CONFIGS = {
    "gpt2": [("tiny", ["--preset", "tiny"]), ("small", ["--preset", "small"])],
    "mlp_deep": [("tiny", ["--preset", "tiny"]),
                 ("tiny-b64", ["--preset", "tiny", "--set", "batch=64"])],
    "seed_mlp": [("tiny", ["--preset", "tiny"])],
}


def model_configs(path):
    """The (tag, arguments) a model is captured at: CONFIGS, else the tiny
    preset where it has one, else batch 2 where it has a batch variable."""
    name = os.path.splitext(os.path.basename(path))[0]
    if name in CONFIGS:
        return CONFIGS[name]
    with open(path) as f:
        model = json.load(f)
    if "tiny" in model.get("presets", {}):
        return [("tiny", ["--preset", "tiny"])]
    if "batch" in model.get("config", {}):
        return [("batch2", ["--set", "batch=2"])]
    return [("default", [])]


def minimum_budget(cap, remat, args, scratch):
    """The minimum feasible budget: the error of a 1-byte budget names it."""
    rc, _, err, cmd = cap.run([remat, "compile"] + args + [
        "--emit=plan", "-o", os.path.join(scratch, "x.plan"),
        "--budget", "1"])
    marker = "minimum feasible budget: "
    if rc == 0 or marker not in err:
        return None, cmd, rc, err
    return int(err.split(marker)[1].split()[0]), cmd, rc, err


def compile_item(cap, remat, args, prefix):
    plan_item, report_item = prefix + ".plan", prefix + ".report.json"
    plan, report = cap.path(plan_item), cap.path(report_item)
    rc, _, err, cmd = cap.run([remat, "compile"] + args + [
        "--emit=plan", "-o", plan, "--report", report])
    if rc != 0 or not os.path.exists(plan) or not os.path.exists(report):
        cap.failed(plan_item, cmd, rc, err)
        return None, None
    cap.item(plan_item, cmd, rc)
    cap.item(report_item, cmd, rc)
    with open(report) as f:
        return plan, json.load(f)


def run_item(cap, runner, plan, prefix, scratch):
    log = os.path.join(scratch, os.path.basename(prefix) + ".jsonl")
    grads = os.path.join(scratch, os.path.basename(prefix) + ".grads")
    for p in (log, grads):
        if os.path.exists(p):
            os.remove(p)
    rc, _, err, cmd = cap.run(runner + [plan, "--steps", str(STEPS), "--log",
                                        log, "--dump-grads", grads])
    if rc != 0 or not os.path.exists(log):
        cap.failed(prefix + ".losses.json", cmd, rc, err)
        return
    # The loss as printed: keep each number's text (parse_float=str).
    losses = []
    with open(log) as f:
        for line in f:
            if not line.strip():
                continue
            entry = json.loads(line, parse_float=str, parse_int=str)
            losses.append(entry["loss"])
    name = prefix + ".losses.json"
    with open(cap.path(name), "w") as f:
        f.write("[" + ", ".join(losses) + "]\n")
    cap.item(name, cmd, rc)
    if os.path.exists(grads):
        with open(grads, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        cap.json_item(prefix + ".grads.json",
                      {"sha256": digest, "of": "step 1 --dump-grads"},
                      cmd, rc)


def capture_model(cap, remat, runner, path, tag, config, scratch):
    name = os.path.splitext(os.path.basename(path))[0]
    args = [path] + config
    base = f"models/{name}/{tag}/"
    print(f"model {name} {tag} ({' '.join(config) or 'defaults'})", flush=True)
    plans = {}
    plan, report = compile_item(cap, remat, args, base + "store-all")
    if plan:
        plans["store-all"] = plan
    minimum, cmd, rc, err = minimum_budget(cap, remat, args, scratch)
    budgets = {"config": config, "minimum_feasible_bytes": minimum}
    if minimum is None:
        cap.failed(base + "min.plan", cmd, rc, err)
    if report is not None:
        b = report["breakdown"]
        persistent = report["planned_peak_bytes"] - b["activations"] - b["grads"]
        half = persistent + b["activations"] // 2
        budgets["store_all_arena_bytes"] = report["arena_bytes"]
        budgets["half_activations_bytes"] = half
        if minimum is not None:
            budgets["half"] = max(half, minimum)
    if minimum is not None:
        budgets["min"] = minimum
    cap.json_item(base + "budgets.json", budgets, cmd, rc)
    for tag in ("half", "min"):
        if tag in budgets:
            plan, _ = compile_item(cap, remat,
                                   args + ["--budget", str(budgets[tag])],
                                   base + tag)
            if plan:
                plans[tag] = plan
    for tag, plan in plans.items():
        run_item(cap, runner, plan, base + tag, scratch)
    sweep = cap.path(base + "sweep.json")
    rc, _, err, cmd = cap.run([remat, "plan"] + args + ["--sweep", "--json",
                                                       sweep])
    if rc != 0 or not os.path.exists(sweep):
        cap.failed(base + "sweep.json", cmd, rc, err)
    else:
        cap.item(base + "sweep.json", cmd, rc)


def capture_graph(cap, remat, path):
    name = os.path.splitext(os.path.basename(path))[0]
    print(f"graph {name}", flush=True)
    for frac in FRACTIONS:
        item = f"graphs/{name}/frac-{frac}.json"
        out = cap.path(item)
        rc, _, err, cmd = cap.run([remat, "plan", "--graph", path,
                                   "--budget-frac", frac, "--json", out])
        if not os.path.exists(out):
            cap.failed(item, cmd, rc, err)
        else:
            cap.item(item, cmd, rc)


def capture(args):
    remat = os.path.abspath(args.remat)
    runner = [os.path.abspath(args.run)] if args.run else [remat, "run"]
    for exe in [remat] + runner[:1]:
        if not os.access(exe, os.X_OK):
            sys.exit(f"capture: {exe} is not an executable")
    out = os.path.abspath(args.out)
    if os.path.exists(out) and os.listdir(out):
        sys.exit(f"capture: {out} exists and is not empty")
    os.makedirs(out, exist_ok=True)
    cap = Capture(out)
    start = time.monotonic()
    models = sorted(os.path.join(args.models, f)
                    for f in os.listdir(args.models) if f.endswith(".json"))
    scratch = tempfile.mkdtemp(prefix="compare_baseline.")
    try:
        for path in models:
            for tag, config in model_configs(path):
                capture_model(cap, remat, runner, os.path.abspath(path), tag,
                              config, scratch)
        if os.path.isdir(args.graphs):
            graphs = sorted(os.path.join(args.graphs, f)
                            for f in os.listdir(args.graphs)
                            if f.endswith(".json"))
            for path in graphs:
                capture_graph(cap, remat, os.path.abspath(path))
        else:
            note = f"no graphs folder {args.graphs}: graphs skipped"
            print("note: " + note)
            cap.notes.append(note)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    seconds = time.monotonic() - start
    write_json(os.path.join(out, "manifest.json"), {
        "remat": remat, "run": runner, "models": models,
        "graphs": args.graphs, "fractions": FRACTIONS, "steps": STEPS,
        "capture_seconds": round(seconds, 1), "notes": cap.notes,
        "commands": cap.commands, "items": cap.items})
    failed = sum(1 for c in cap.commands if c["returncode"] != 0)
    print(f"captured {len(cap.items)} items from {len(cap.commands)} commands "
          f"({failed} exited non-zero) in {seconds:.1f} s into {out}")
    return 0


# ---------------------------------------------------------------- compare


def first_difference(a, b, path=""):
    """A description of the first difference of two JSON values, or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in b:
                return f"{path}/{k}: only in base"
            if k not in a:
                return f"{path}/{k}: only in new"
            d = first_difference(a[k], b[k], f"{path}/{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}/{i}")
            if d:
                return d
        if len(a) != len(b):
            return f"{path}: length {len(a)} != {len(b)}"
        return None
    same_type = (type(a) is type(b) or
                 (isinstance(a, (int, float)) and isinstance(b, (int, float))
                  and not isinstance(a, bool) and not isinstance(b, bool)))
    if same_type and (a == b or (isinstance(a, float) and isinstance(b, float)
                                 and math.isnan(a) and math.isnan(b))):
        return None
    return f"{path or '/'}: {short(a)} != {short(b)}"


def short(value):
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def load_manifest(folder):
    path = os.path.join(folder, "manifest.json")
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"compare: cannot read {path}: {e}")


def load_item(folder, entry):
    with open(os.path.join(folder, entry["file"])) as f:
        return normalize(json.load(f))


def compare(args):
    base, new = load_manifest(args.base), load_manifest(args.new)
    names = list(base["items"]) + [n for n in new["items"]
                                   if n not in base["items"]]
    same = differ = 0
    for name in names:
        a, b = base["items"].get(name), new["items"].get(name)
        if a is None or b is None:
            diff = "missing in " + ("base" if a is None else "new")
        elif a["returncode"] != b["returncode"]:
            diff = f"exit code {a['returncode']} != {b['returncode']}"
        else:
            try:
                diff = first_difference(load_item(args.base, a),
                                        load_item(args.new, b))
            except (OSError, ValueError) as e:
                diff = f"unreadable: {e}"
        if diff:
            differ += 1
            print(f"DIFF  {name}: {diff}")
        else:
            same += 1
            print(f"same  {name}")
    print(f"{same} same, {differ} differ")
    return 1 if differ else 0


def main():
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="mode", required=True)
    c = sub.add_parser("capture", help="run the binaries, write DIR")
    c.add_argument("--remat", required=True, help="the remat binary")
    c.add_argument("--run", help="the remat-run binary (default: remat run)")
    c.add_argument("--out", required=True, help="empty or new folder")
    c.add_argument("--graphs", default=DEFAULT_GRAPHS,
                   help="Checkmate graphs folder (default %(default)s)")
    c.add_argument("--models", default=DEFAULT_MODELS,
                   help="models folder (default %(default)s)")
    p = sub.add_parser("compare", help="compare two captures item by item")
    p.add_argument("base", metavar="BASE_DIR")
    p.add_argument("new", metavar="NEW_DIR")
    p.add_argument("--ignore", action="append", default=[], metavar="KEY",
                   help="also drop this key at any depth (a difference the "
                        "change states and explains); repeatable")
    args = parser.parse_args()
    if args.mode == "compare":
        IGNORED_KEYS.update(args.ignore)
    return capture(args) if args.mode == "capture" else compare(args)


if __name__ == "__main__":
    sys.exit(main())

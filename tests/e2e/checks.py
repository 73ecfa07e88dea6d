#!/usr/bin/env python3
"""End-to-end checks of `remat` on the CPU (run by ctest; stdlib only).

  checks.py REMAT train-falls      gpt2 tiny trains: loss falls well below its start
  checks.py REMAT forum-plan       seed_mlp at batch 100000 plans ~3 activation buffers
  checks.py REMAT dropout-replay   same seed: identical losses with dropout on;
                                   the masks change the result (vs dropout 0)
  checks.py REMAT cli-errors       usage and input errors exit non-zero with a message
  checks.py REMAT budgets-bitwise  gpt2 tiny (dropout on) and seed_mlp: loss and
                                   every gradient bitwise equal at store-all, half
                                   the activation memory and the minimum budget;
                                   arenas within budget; recompute steps present
  checks.py REMAT sweeps-in-budget every model (tiny): each budget of a sweep has
                                   planned peak and arena within it, and the
                                   compiled plans agree
  checks.py REMAT check-bounds     every model (tiny) at its minimum budget runs
                                   under remat run --check-bounds on the cpu
  checks.py REMAT device-profile   --device-profile names and files reach the
                                   planner and its report; bad ones are usage errors
  checks.py REMAT dump-values      run --dump-values/--dump-names all: gpt2 tiny's
                                   step-1 values bitwise equal at store-all and
                                   the minimum budget (values freed early and
                                   recomputed); name errors
  checks.py REMAT graph-reorder    plan --graph keeps the given order by default
                                   (proven optimum for it); --reorder moves an op
                                   and needs no recomputation
  checks.py REMAT data-memory      --data of a 32 MiB file: the run holds less
                                   than a quarter of it beside the arena
Exit 0 on success, 1 with a message on failure.
"""
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def model(name):
    return os.path.join(ROOT, "models", name)


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def safetensors_entries(path):
    """(name, header entry, raw bytes) of every tensor of a safetensors file."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
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


def train_falls(remat, work):
    """The default synthetic data is learnable: gpt2 tiny (sequence rule) and
    the classifier example (teacher labels) at its default config."""
    for name, args in (("gpt2 tiny", [model("gpt2.json"), "--preset", "tiny"]),
                       ("classifier", [model("classifier.json")])):
        values = losses(remat, args + ["--steps", "300"], work, "train")
        first, last = values[0], sum(values[-10:]) / 10
        print(f"{name}: loss {first:.4f} at step 1, {last:.4f} averaged "
              f"over steps 291-300")
        if not last < 0.5 * first:
            fail(f"{name}: the loss did not fall below half its start")


def forum_plan(remat, work):
    report = os.path.join(work, "forum.json")
    subprocess.run([remat, "compile", model("seed_mlp.json"), "--set",
                    "batch=100000", "--emit=plan", "-o",
                    os.path.join(work, "forum.plan"), "--report", report],
                   check=True, capture_output=True)
    with open(report) as f:
        r = json.load(f)
    buffer = 100000 * 1024 * 4
    persistent = sum(r["breakdown"].get(k, 0)
                     for k in ("params", "grads", "optimizer", "state"))
    activations = (r["planned_peak_bytes"] - persistent) / buffer
    print(f"forum model: planned peak = {activations:.3f} activation buffers "
          f"(input x included) + {persistent} bytes of params, grads, state")
    if not 2.9 < activations < 3.2:
        fail("expected about 3 activation buffers")
    if r["arena_bytes"] > 1.01 * r["planned_peak_bytes"]:
        fail("the arena is more than 1% above the planned peak")


def dropout_replay(remat, work):
    args = [model("gpt2.json"), "--preset", "tiny", "--set", "dropout=0.2",
            "--steps", "5", "--seed", "7"]
    a = losses(remat, args, work, "a")
    b = losses(remat, args, work, "b")
    if a != b:
        fail(f"two runs with the same seed differ: {a} vs {b}")
    c = losses(remat, [model("gpt2.json"), "--preset", "tiny", "--set",
                       "dropout=0", "--steps", "5", "--seed", "7"], work, "c")
    if a == c:
        fail("dropout 0.2 gave the same losses as dropout 0")
    print(f"dropout 0.2: identical losses in two runs {a[:2]}...; "
          f"dropout 0: {c[:2]}...")


def cli_errors(remat, work):
    bad = os.path.join(work, "bad.json")
    with open(bad, "w") as f:
        f.write('{"format": "remat-model", "version": 1, "name": "b", '
                '"ops": [{"name": "y", "op": "relu", "inputs": ["x"]}], '
                '"loss": "y"}')
    cases = [
        ([remat, "compile", bad], 1, "/ops/0 'y': 'x' is not defined"),
        ([remat, "compile", model("gpt2.json"), "--emit=nope"], 2,
         "unknown --emit stage 'nope'"),
        ([remat, "compile", model("gpt2.json"), "--set", "n_layr=2"], 2,
         "unknown config variable 'n_layr'"),
        ([remat, "compile", model("gpt2.json"), "--budget", "lots"], 2,
         "is not a byte size"),
        ([remat, "compile", os.path.join(work, "missing.json")], 1,
         "cannot open"),
        ([remat, "frobnicate"], 2, "unknown command 'frobnicate'"),
        ([remat, "compile", work], 1, "is a directory, not a model file"),
        ([remat, "compile", model("gpt2.json"), "--budget", "1KB"], 2,
         "--budget needs --emit=planned or --emit=plan"),
        ([remat, "compile", model("gpt2.json"), "--preset", "tiny",
          "--emit=plan", "-o", os.path.join(work, "p.plan"), "--budget",
          "1KB"], 1, "minimum feasible budget: "),
        ([remat, "run", os.path.join(work, "missing.plan")], 1, "missing.plan"),
    ]
    for argv, code, text in cases:
        r = subprocess.run(argv, capture_output=True, text=True)
        if r.returncode != code or text not in r.stderr:
            fail(f"{' '.join(argv[1:])}: exit {r.returncode} (want {code}), "
                 f"stderr {r.stderr!r} lacks {text!r}")
    out = os.path.join(work, "never.mlir")
    subprocess.run([remat, "compile", bad, "-o", out], capture_output=True)
    if os.path.exists(out) or os.path.exists(out + ".tmp"):
        fail("a failed compile left an output file behind")
    for argv in ([remat, "--help"], [remat, "compile", "--help"],
                 [remat, "run", "--help"], [remat, "train", "--help"]):
        r = subprocess.run(argv, capture_output=True, text=True)
        if r.returncode != 0 or "usage" not in r.stdout:
            fail(f"{' '.join(argv[1:])} printed no usage")
    print(f"{len(cases)} error cases and 4 --help texts as expected")


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


def budgets_bitwise(remat, work):
    for name, config in (("gpt2", ["--preset", "tiny", "--set", "dropout=0.1"]),
                         ("seed_mlp", ["--preset", "tiny"])):
        args = [model(name + ".json")] + config
        plan, rep = compile_plan(remat, args, work, name + "-all")
        if plan is None:
            fail(rep)
        b = rep["breakdown"]
        persistent = rep["planned_peak_bytes"] - b["activations"] - b["grads"]
        half = persistent + b["activations"] // 2
        minimum = minimum_budget(remat, args, work)
        ref_losses, ref_grads = run_plan(remat, plan, work, name + "-all")
        budgets = [("half", max(half, minimum)), ("minimum", minimum)]
        for tag, budget in budgets:
            plan_b, rep_b = compile_plan(remat, args + ["--budget", str(budget)],
                                         work, f"{name}-{tag}")
            if plan_b is None:
                fail(f"{name} at budget {budget} ({tag}): {rep_b}")
            if rep_b["arena_bytes"] > budget:
                fail(f"{name}: arena {rep_b['arena_bytes']} > budget {budget}")
            with open(plan_b) as f:
                recomputes = sum(1 for s in json.load(f)["steps"]
                                 if s.get("recompute"))
            losses, grads = run_plan(remat, plan_b, work, f"{name}-{tag}")
            if losses != ref_losses or grads != ref_grads:
                fail(f"{name} at budget {budget} ({tag}): results differ from "
                     f"store-all: {losses} vs {ref_losses}")
            print(f"{name}: {tag} budget {budget} B (store-all arena "
                  f"{rep['arena_bytes']} B): arena {rep_b['arena_bytes']} B, "
                  f"{recomputes} recompute steps, overhead "
                  f"{rep_b['recompute_overhead']:.1%}, losses and gradients "
                  f"bitwise equal")
            if tag == "minimum" and name == "gpt2" and recomputes == 0:
                fail("the minimum budget recomputed nothing")


def sweeps_in_budget(remat, work):
    for name in ("seed_mlp", "mlp_deep", "gpt2"):
        out = os.path.join(work, name + "-sweep.json")
        r = subprocess.run([remat, "plan", model(name + ".json"), "--preset",
                            "tiny", "--sweep", "--points", "6", "--json", out],
                           capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"{name}: remat plan --sweep failed:\n{r.stderr}")
        with open(out) as f:
            sweep = json.load(f)
        for row in sweep["sweep"]:
            if row["arena_bytes"] is None or row["arena_bytes"] > row["budget_bytes"]:
                fail(f"{name}: sweep row over budget or infeasible: {row}")
        # The compile path under the same budgets.
        for row in sweep["sweep"][:3]:
            plan, rep = compile_plan(remat, [model(name + ".json"), "--preset",
                                             "tiny", "--budget",
                                             str(row["budget_bytes"])],
                                     work, name + "-b")
            if plan is None:
                fail(f"{name} at {row['budget_bytes']}: {rep}")
            if (rep["planned_peak_bytes"] > row["budget_bytes"] or
                    rep["arena_bytes"] > row["budget_bytes"]):
                fail(f"{name}: compiled plan over budget: {rep}")
        print(f"{name}: {len(sweep['sweep'])} sweep budgets from "
              f"{sweep['min_feasible_bytes']} to {sweep['store_all_arena_bytes']} "
              f"bytes, all within budget")


def graph_reorder(remat, work):
    """remat plan --graph in the given order and with --reorder: a value
    read only at the end (100 bytes) computed first; at 116 bytes the given
    order recomputes it (+5 of 10 cost units, proven optimal for that
    order), the moved order computes everything once."""
    nodes = [{"id": 0, "name": "early", "cost_cpu": 5, "cost_ram": 100}]
    nodes += [{"id": i, "name": f"c{i}", "cost_cpu": 1, "cost_ram": 10}
              for i in range(1, 5)]
    nodes.append({"id": 5, "name": "join", "cost_cpu": 1, "cost_ram": 6})
    links = [{"source": i, "target": i + 1} for i in range(1, 4)]
    links += [{"source": 0, "target": 5}, {"source": 4, "target": 5}]
    path = os.path.join(work, "late.json")
    with open(path, "w") as f:
        json.dump({"graph": {"name": "late-use"}, "nodes": nodes,
                   "links": links}, f)
    reports = {}
    for flag in ("--no-reorder", "--reorder"):
        r = subprocess.run([remat, "plan", "--graph", path, "--budget-frac",
                            "0.97", flag], capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"plan --graph {flag}: exit {r.returncode}: {r.stderr}")
        report = json.loads(r.stdout)
        if report["store_all_peak_bytes"] != 120 or report["budget_bytes"] != 116:
            fail(f"unexpected budget in {report}")
        if report["planned_peak_bytes"] > report["budget_bytes"]:
            fail(f"{flag}: peak over budget: {report}")
        reports[flag] = report
    fixed, moved = reports["--no-reorder"], reports["--reorder"]
    if fixed["order"] != "given" or abs(fixed["recompute_overhead"] - 0.5) > 1e-9:
        fail(f"given order: want overhead 0.5, got {fixed}")
    if fixed["optimality_gap"] is None or fixed["optimality_gap"] > 1e-4:
        fail(f"given order: the MILP should prove 0.5 optimal: {fixed}")
    if moved["order"] == "given" or moved["recompute_overhead"] != 0.0:
        fail(f"--reorder: want no recomputation in a moved order: {moved}")
    print(f"given order: overhead {fixed['recompute_overhead']:.2f} "
          f"(proven); --reorder ({moved['order']}): "
          f"{moved['recompute_overhead']:.2f}")


def workspace_reserve(remat, work):
    """--workspace-reserve R plans the arena under budget - R, records R in
    the report, and needs a budget larger than R."""
    tiny = [model("gpt2.json"), "--preset", "tiny"]
    budget, reserve = 560000, 30000
    plan, report = compile_plan(remat, tiny + ["--budget", str(budget)],
                                work, "plain")
    if plan is None:
        fail("compile at %d failed: %s" % (budget, report))
    # Without a reserve nothing is kept beside the arena: the cpu kernels'
    # scratch is in it, the largest attention_grad's, 2*S*S floats (S = 16
    # in tiny).
    scratch = 2 * 16 * 16 * 4
    if report["workspace_reserve_bytes"] != 0 or \
            report["workspace_bytes"] != 0 or \
            report["arena_scratch_bytes"] != scratch or \
            report["backend"] != "cpu":
        fail("no reserve given: want no reserve, no workspace and %d B of "
             "scratch in the arena; the report says reserve %r, workspace "
             "%r, scratch %r, backend %r"
             % (scratch, report["workspace_reserve_bytes"],
                report["workspace_bytes"], report["arena_scratch_bytes"],
                report["backend"]))
    if report["step_bytes"] != report["arena_bytes"] or \
            report["step_bytes"] > budget:
        fail("step_bytes %r: want the arena %d <= budget %d"
             % (report["step_bytes"], report["arena_bytes"], budget))
    if sum(report["breakdown"].values()) != report["planned_peak_bytes"]:
        fail("the breakdown %r does not add up to the planned peak %r"
             % (report["breakdown"], report["planned_peak_bytes"]))
    # remat run refuses a plan whose arena and workspace exceed its budget,
    # before it allocates anything, and says by how much.
    with open(plan) as f:
        over = json.load(f)
    over["report"]["budget_bytes"] = report["arena_bytes"] - 1
    over_path = os.path.join(work, "over.plan")
    with open(over_path, "w") as f:
        json.dump(over, f)
    r = subprocess.run([remat, "run", over_path, "--steps", "1"],
                       capture_output=True, text=True)
    if r.returncode != 1 or "1 B over" not in r.stderr or \
            "--backend cpu" not in r.stderr or "step 1" in r.stdout:
        fail("remat run did not refuse a plan 1 B over its budget: exit %d, "
             "%s" % (r.returncode, r.stderr))
    plan, reserved = compile_plan(
        remat, tiny + ["--budget", str(budget), "--workspace-reserve",
                       str(reserve)], work, "reserved")
    if plan is None:
        fail("compile with a reserve failed: %s" % reserved)
    if reserved["budget_bytes"] != budget or \
            reserved["workspace_reserve_bytes"] != reserve:
        fail("report budget/reserve %r/%r, want %d/%d" % (
            reserved["budget_bytes"], reserved["workspace_reserve_bytes"],
            budget, reserve))
    if reserved["arena_bytes"] > budget - reserve:
        fail("arena %d exceeds budget - reserve %d"
             % (reserved["arena_bytes"], budget - reserve))
    if report["arena_bytes"] <= budget - reserve:
        fail("the check cannot fail: without a reserve the arena (%d) already "
             "fits budget - reserve" % report["arena_bytes"])
    r = subprocess.run([remat, "run", plan, "--steps", "1"],
                       capture_output=True, text=True)
    if r.returncode != 0 or "budget %d B" % budget not in r.stderr or \
            "(within)" not in r.stderr:
        fail("remat run did not report the budget as met: " + r.stderr)
    cases = [
        (tiny + ["--emit=plan", "--workspace-reserve", "1KB"],
         "--workspace-reserve needs --budget"),
        (tiny + ["--emit=plan", "--budget", "100000", "--workspace-reserve",
                 "100000"], "leaves nothing of --budget"),
        (tiny + ["--emit=plan", "--budget", "100000", "--workspace-reserve",
                 "some"], "is not a byte size"),
    ]
    for args, text in cases:
        r = subprocess.run([remat, "compile"] + args, capture_output=True,
                           text=True)
        if r.returncode != 2 or text not in r.stderr:
            fail("compile %s: exit %d, stderr %r lacks %r"
                 % (" ".join(args[3:]), r.returncode, r.stderr, text))
    print("arena %d <= %d - %d (without the reserve: %d)" % (
        reserved["arena_bytes"], budget, reserve, report["arena_bytes"]))


def conv_workspace(remat, work):
    """The cpu backend's convolutions through oneDNN (docs/cli.md "CPU
    convolutions") with their scratch in the arena: the compiler lays out
    oneDNN's scratchpad and copies (more than im2col's block, which
    REMAT_CPU_CONV=im2col lays out) in the arena and keeps no workspace
    beside it; the minimum-budget plan computes the same bits as store-all,
    and so does the scratch moved beside the arena (REMAT_CPU_SCRATCH=beside)
    or checked by --check-bounds; a plan laid out for im2col's scratch runs
    within its budget with oneDNN on, and a oneDNN plan runs with
    REMAT_CPU_CONV=im2col; an unknown REMAT_CPU_CONV value warns and means
    auto. Skipped (77) where the build has no oneDNN."""
    conv = [os.path.join(ROOT, "tests", "e2e", "models", "conv.json")]
    im2col = dict(os.environ, REMAT_CPU_CONV="im2col")
    plan, report = compile_plan(remat, conv, work, "all")
    if plan is None:
        fail("compile conv.json: " + report)
    wanted = report["arena_scratch_bytes"]
    _, im2col_report = compile_plan(remat, conv, work, "im2col", env=im2col)
    if not isinstance(im2col_report, dict):
        fail("compile with REMAT_CPU_CONV=im2col: " + im2col_report)
    least = im2col_report["arena_scratch_bytes"]
    if wanted == least:
        print("oneDNN is off or not built: the scratch is im2col's (%d B) "
              "either way; skipped" % least)
        sys.exit(77)
    for tag, rep in (("oneDNN", report), ("im2col", im2col_report)):
        if rep["workspace_bytes"] != 0 or \
                rep["step_bytes"] != rep["arena_bytes"]:
            fail("%s: want no workspace beside the arena: %r" % (tag, rep))
    if wanted < least:
        fail("scratch %d B with oneDNN, %d B without" % (wanted, least))
    # A value REMAT_CPU_CONV does not know warns and means auto.
    r = subprocess.run([remat, "compile"] + conv + [
        "--emit=plan", "-o", os.path.join(work, "bogus.plan"), "--report",
        os.path.join(work, "bogus.json")], capture_output=True, text=True,
        env=dict(os.environ, REMAT_CPU_CONV="bogus"))
    if r.returncode != 0 or "REMAT_CPU_CONV='bogus' is not auto, im2col " \
            "or plain; using auto" not in r.stderr:
        fail("compile with REMAT_CPU_CONV=bogus: exit %d, stderr %r"
             % (r.returncode, r.stderr))
    with open(os.path.join(work, "bogus.json")) as f:
        if json.load(f)["arena_scratch_bytes"] != wanted:
            fail("REMAT_CPU_CONV=bogus did not lay out auto's scratch")
    minimum = minimum_budget(remat, conv, work)
    tight, tight_report = compile_plan(remat, conv + ["--budget",
                                                      str(minimum)],
                                       work, "tight")
    if tight is None or tight_report["workspace_bytes"] != 0 or \
            tight_report["arena_scratch_bytes"] != wanted or \
            tight_report["step_bytes"] > minimum or \
            tight_report["recompute_overhead"] <= 0:
        fail("at the minimum feasible budget %d: %r" % (minimum, tight_report))
    base_losses, base_grads = run_plan(remat, plan, work, "all", steps=3)
    tight_losses, tight_grads = run_plan(remat, tight, work, "tight", steps=3)
    if base_losses != tight_losses or base_grads != tight_grads:
        fail("store-all and the minimum's plan differ: %r vs %r"
             % (base_losses, tight_losses))
    # The same kernels with their scratch beside the arena: the same bits,
    # in a workspace of the largest scratch.
    said = []
    beside = run_plan(remat, plan, work, "beside", steps=3,
                      env=dict(os.environ, REMAT_CPU_SCRATCH="beside"),
                      stderr=said)
    if beside != (base_losses, base_grads) or \
            "workspace %d B" % wanted not in said[0]:
        fail("REMAT_CPU_SCRATCH=beside: losses %r against %r; %s"
             % (beside[0], base_losses, said[0]))
    # Every step keeps to its operands, results and scratch, and reads no
    # scratch before writing it (its results would differ).
    checked = run_plan(remat, tight, work, "bounds", steps=1,
                       extra=["--check-bounds"])
    if checked[0] != tight_losses[:1]:
        fail("--check-bounds: loss %r against %r" % (checked[0],
                                                     tight_losses[:1]))
    # A plan laid out for im2col's scratch, at its own minimum, runs within
    # its budget with oneDNN on (the convolutions whose scratchpad does not
    # fit run through im2col); a oneDNN plan runs with im2col.
    small = minimum_budget(remat, conv, work, env=im2col)
    reserved, reserved_report = compile_plan(
        remat, conv + ["--budget", str(small)], work, "small", env=im2col)
    if reserved is None or small >= minimum:
        fail("im2col's minimum %d is not below oneDNN's %d: %r"
             % (small, minimum, reserved_report))
    for tag, path, env in (("small", reserved, None),
                           ("im2col-run", plan, im2col)):
        log = os.path.join(work, tag + ".jsonl")
        r = subprocess.run([remat, "run", path, "--steps", "3", "--seed", "3",
                            "--log", log], capture_output=True, text=True,
                           env=env)
        if r.returncode != 0 or (tag == "small" and
                                 ("(within)" not in r.stderr or
                                  "workspace 0 B" not in r.stderr)):
            fail("remat run (%s): exit %d, %s" % (tag, r.returncode,
                                                  r.stderr))
        with open(log) as f:
            values = [json.loads(line)["loss"] for line in f]
        worst = max(abs(a - b) / abs(b) for a, b in zip(values, base_losses))
        if len(values) != 3 or worst > 1e-4:
            fail("%s: losses %r against oneDNN's %r" % (tag, values,
                                                        base_losses))
    print("scratch %d B with oneDNN, %d B with im2col, in the arena; the "
          "minimum's plan (budget %d) bitwise equal to store-all, beside the "
          "arena and bounds-checked; im2col's plan at its minimum %d runs "
          "within it with oneDNN on, losses within 1e-4"
          % (wanted, least, minimum, small))


def max_batch(remat, work):
    """plan --max-batch names the largest batch that compiles under the
    budget: that batch compiles, the next does not; a budget no batch meets
    exits 1."""
    for name, budget in (("gpt2.json", 600000), ("gpt2.json", 1500000),
                         ("seed_mlp.json", 40000)):
        base = [model(name), "--preset", "tiny"]
        r = subprocess.run([remat, "plan"] + base + ["--max-batch", "--budget",
                                                     str(budget)],
                           capture_output=True, text=True)
        found = re.search(r"largest batch that fits \d+ bytes: (\d+)",
                          r.stdout)
        if r.returncode != 0 or not found:
            fail("%s at %d: exit %d, stdout %r" % (name, budget, r.returncode,
                                                   r.stdout))
        batch = int(found.group(1))
        if batch < 2:
            fail("%s at %d: batch %d cannot show the next one failing"
                 % (name, budget, batch))
        for b, want in ((batch, True), (batch + 1, False)):
            plan, report = compile_plan(
                remat, base + ["--set", "batch=%d" % b, "--budget",
                               str(budget)], work, "b%d" % b)
            if (plan is not None) != want:
                fail("%s at %d: batch %d %s but --max-batch said %d" % (
                    name, budget, b, "compiles" if plan else "fails", batch))
        print("%s under %d bytes: batch %d compiles, %d does not"
              % (name, budget, batch, batch + 1))
    r = subprocess.run([remat, "plan", model("gpt2.json"), "--preset", "tiny",
                        "--max-batch", "--budget", "300000"],
                       capture_output=True, text=True)
    if r.returncode != 1 or "no batch fits" not in r.stdout:
        fail("a budget below batch 1's minimum: exit %d, stdout %r"
             % (r.returncode, r.stdout))
    # With --ranks 2 the search is over the per-rank batch: the answer is a
    # global batch, twice it, that compiles for 2 ranks while the next
    # multiple of 2 does not; sharding the optimizer state
    # (--shard-optimizer) leaves each rank at least as much room.
    per_rank = {}
    for shard in ([], ["--shard-optimizer"]):
        base = [model("gpt2.json"), "--preset", "tiny", "--ranks", "2"] + shard
        r = subprocess.run([remat, "plan"] + base + ["--max-batch", "--budget",
                                                     "600000"],
                           capture_output=True, text=True)
        found = re.search(r"largest global batch that fits 600000 bytes per "
                          r"rank on 2 ranks: (\d+) \((\d+) per rank\)",
                          r.stdout)
        if r.returncode != 0 or not found:
            fail("--ranks 2 %s: exit %d, stdout %r" % (shard, r.returncode,
                                                       r.stdout))
        batch, each = int(found.group(1)), int(found.group(2))
        if batch != 2 * each or each < 1:
            fail("--ranks 2: global batch %d, %d per rank" % (batch, each))
        for b, want in ((batch, True), (batch + 2, False)):
            plan, _ = compile_plan(
                remat, base + ["--set", "batch=%d" % b, "--budget", "600000"],
                work, "r2-%d-%d" % (len(shard), b))
            if (plan is not None) != want:
                fail("--ranks 2 %s: global batch %d %s but --max-batch said "
                     "%d" % (shard, b, "compiles" if plan else "fails",
                             batch))
        per_rank[bool(shard)] = each
        print("gpt2 tiny on 2 ranks%s under 600000 bytes per rank: global "
              "batch %d compiles, %d does not" % (
                  " (sharded optimizer)" if shard else "", batch, batch + 2))
    if per_rank[True] < per_rank[False]:
        fail("sharding the optimizer state lowered the batch per rank: %s"
             % per_rank)


def loss_grad_in_place(remat, work):
    """cross_entropy_grad writes dlogits over the logits that die there (the
    largest tensor of a language model's step), and the step still matches:
    budgets-bitwise and torch-parity run such plans."""
    plan, report = compile_plan(remat, [model("gpt2.json"), "--preset",
                                        "tiny"], work, "lm")
    if plan is None:
        fail("compile failed: %s" % report)
    with open(plan) as f:
        p = json.load(f)
    steps = [s for s in p["steps"] if s["op"] == "cross_entropy_grad"]
    if len(steps) != 1:
        fail("%d cross_entropy_grad steps" % len(steps))
    logits = p["buffers"][steps[0]["inputs"][0]]
    dlogits = p["buffers"][steps[0]["outputs"][0]]
    if (logits["offset"], logits["bytes"]) != (dlogits["offset"],
                                               dlogits["bytes"]):
        fail("dlogits at %d (%d B), logits at %d (%d B): not in place" % (
            dlogits["offset"], dlogits["bytes"], logits["offset"],
            logits["bytes"]))
    losses_ = run_plan(remat, plan, work, "lm", steps=3)[0]
    if not all(l == l and l > 0 for l in losses_):
        fail("losses %r" % losses_)
    print("dlogits share logits' %d bytes at offset %d; losses %s" % (
        logits["bytes"], logits["offset"], losses_))


def check_bounds(remat, work):
    """Every model (tiny) at the minimum budget: each step reads only its
    operands and writes only its results on the cpu (`--check-bounds`)."""
    for name in ("seed_mlp", "mlp_deep", "gpt2"):
        args = [model(name + ".json"), "--preset", "tiny"]
        if name == "gpt2":
            args += ["--set", "dropout=0.1"]
        minimum = minimum_budget(remat, args, work)
        plan, rep = compile_plan(remat, args + ["--budget", str(minimum)],
                                 work, name)
        if plan is None:
            fail(f"{name} at its minimum {minimum}: {rep}")
        r = subprocess.run([remat, "run", plan, "--steps", "2",
                            "--check-bounds"], capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"{name}: remat run --check-bounds failed:\n{r.stderr}")
        print(f"{name}: {len(json.load(open(plan))['steps'])} steps at the "
              f"minimum budget {minimum} B keep to their buffers")


def measured_profile(remat, work):
    """remat profile times every op call of a step: one entry per distinct
    call of the store-all plan, each a positive number of seconds; planning
    with the profile (a file, or --device-profile measure) uses them: the
    report counts them and the modeled step time changes."""
    tiny = [model("gpt2.json"), "--preset", "tiny"]
    path = os.path.join(work, "measured.json")
    r = subprocess.run([remat, "profile"] + tiny + ["--steps", "2", "-o", path],
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail("remat profile failed: " + r.stderr)
    with open(path) as f:
        profile = json.load(f)
    ops = profile["ops"]
    plan, _ = compile_plan(remat, tiny, work, "profiled")
    with open(plan) as f:
        steps = json.load(f)["steps"]
    kinds = {s["op"] for s in steps}
    timed = {key.split(" ")[0] for key in ops}
    if timed != kinds or not all(v > 0 for v in ops.values()):
        fail("profile ops %r do not cover the plan's %r with positive times"
             % (sorted(timed), sorted(kinds)))
    # `calls`: every plan step in plan order, each with its own median.
    calls = profile["calls"]
    if [c["op"] for c in calls] != [s["op"] for s in steps] or \
            [c["step"] for c in calls] != list(range(len(steps))) or \
            any(c["recompute"] for c in calls) or \
            not all(c["seconds"] >= 0 for c in calls):
        fail("profile calls do not list the plan's %d steps in order: %r"
             % (len(steps), calls[:4]))
    for spec in (path, "measure"):
        r = subprocess.run([remat, "plan"] + tiny + ["--device-profile", spec],
                           capture_output=True, text=True)
        if r.returncode != 0:
            fail("plan --device-profile %s failed: %s" % (spec, r.stderr))
        report = json.loads(r.stdout)
        dp = report["device_profile"]
        if dp.get("measured_ops", 0) < len(kinds) or \
                not dp["name"].startswith("measured"):
            fail("plan --device-profile %s: %r" % (spec, dp))
    # The measured table, not the roofline, costs the ops.
    measured = json.loads(subprocess.run(
        [remat, "plan"] + tiny + ["--device-profile", path],
        capture_output=True, text=True, check=True).stdout)
    roofline = json.loads(subprocess.run(
        [remat, "plan"] + tiny, capture_output=True, text=True,
        check=True).stdout)
    if measured["modeled_step_seconds"] == roofline["modeled_step_seconds"]:
        fail("the measured profile did not change the modeled step (%r s)"
             % roofline["modeled_step_seconds"])
    report = measured
    print("profile: %d op calls timed; plan models a step of %.3f ms"
          % (len(ops), 1000 * report["modeled_step_seconds"]))


def measured_recompute(remat, work):
    """Recomputations priced where they run: `remat profile PLAN` of a
    plan that recomputes gives them their own table (recompute_ops, one
    key per recomputed call); a profile whose recompute_ops make one op's
    recomputations dear steers the planner off them; `--device-profile
    measure` under a budget times its candidate plans and keeps the one
    with the fastest measured step; a bad recompute_ops entry is a usage
    error."""
    # A budget where tiny recomputes several ops, some of them many times.
    budget = 557952
    tiny = [model("gpt2.json"), "--preset", "tiny", "--budget", str(budget)]
    plan, rep = compile_plan(remat, tiny, work, "recomputes")
    if plan is None:
        fail("tiny at %d B: %s" % (budget, rep))
    with open(plan) as f:
        steps = json.load(f)["steps"]
    recomputed = {s["op"] for s in steps if s["recompute"]}
    if not recomputed:
        fail("tiny at %d B recomputes nothing; pick a lower budget" % budget)
    path = os.path.join(work, "in-situ.json")
    r = subprocess.run([remat, "profile", plan, "--steps", "2", "-o", path],
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail("remat profile PLAN failed: " + r.stderr)
    with open(path) as f:
        profile = json.load(f)
    table = profile.get("recompute_ops", {})
    if {key.split(" ")[0] for key in table} != recomputed or \
            not all(v >= 0 for v in table.values()):
        fail("recompute_ops %r do not cover the recomputed ops %r"
             % (sorted(table), sorted(recomputed)))
    # remat-run profile (no compiler: a GPU machine) writes the same tables.
    runner = os.environ.get("REMAT_RUN")
    if runner:
        path_run = os.path.join(work, "in-situ-run.json")
        r = subprocess.run([runner, "profile", plan, "--steps", "2", "-o",
                            path_run], capture_output=True, text=True)
        if r.returncode != 0:
            fail("remat-run profile PLAN failed: " + r.stderr)
        with open(path_run) as f:
            by_run = json.load(f)
        if set(by_run["ops"]) != set(profile["ops"]) or \
                set(by_run.get("recompute_ops", {})) != set(table) or \
                by_run["source"].get("budget_bytes") != budget:
            fail("remat-run profile's tables differ from remat profile's: "
                 "%r" % by_run["source"])
        r = subprocess.run([runner, "profile", plan, "--steps", "0"],
                           capture_output=True, text=True)
        if r.returncode != 2 or "--steps needs an integer >= 1" not in r.stderr:
            fail("remat-run profile --steps 0: exit %d, %r"
                 % (r.returncode, r.stderr))
    else:
        print("(REMAT_RUN not set: remat-run profile not checked)")
    # The op recomputed most, made a second per recomputation.
    counts = {}
    for s in steps:
        if s["recompute"]:
            counts[s["op"]] = counts.get(s["op"], 0) + 1
    dear = max(counts, key=counts.get)
    profile["recompute_ops"] = {k: (1.0 if k.split(" ")[0] == dear else v)
                                for k, v in table.items()}
    dear_path = os.path.join(work, "dear.json")
    with open(dear_path, "w") as f:
        json.dump(profile, f)
    plan2, rep2 = compile_plan(remat, tiny + ["--device-profile", dear_path],
                               work, "dear")
    if plan2 is None:
        fail("planning with recompute_ops failed: " + rep2)
    with open(plan2) as f:
        after = sum(1 for s in json.load(f)["steps"]
                    if s["recompute"] and s["op"] == dear)
    if after >= counts[dear] or \
            rep2["device_profile"].get("measured_recompute_ops") != len(table):
        fail("a dear %s recomputation: %d of them before, %d after; "
             "report %r" % (dear, counts[dear], after, rep2["device_profile"]))
    # --device-profile measure under a budget: candidates timed.
    plan3, rep3 = compile_plan(remat, tiny + ["--device-profile", "measure"],
                               work, "measure")
    if plan3 is None:
        fail("--device-profile measure with a budget failed: " + rep3)
    dp = rep3["device_profile"]
    cands = dp.get("candidates", [])
    timed = [c["measured_step_seconds"] for c in cands]
    chosen = [c for c in cands if c["costs"] == dp.get("chosen")]
    if len(cands) < 2 or not all(t > 0 for t in timed) or len(chosen) != 1 \
            or chosen[0]["measured_step_seconds"] != min(timed) or \
            chosen[0]["planned_peak_bytes"] != rep3["planned_peak_bytes"] or \
            not rep3["recompute_overhead"] > 0:
        fail("--device-profile measure: %r, overhead %r"
             % (dp, rep3["recompute_overhead"]))
    # A plan for 2 ranks: one rank's step, timed alone (sharded too).
    for extra in (["--budget", "440000"],
                  ["--budget", "340000", "--shard-optimizer"]):
        plan4, rep4 = compile_plan(
            remat, tiny[:3] + ["--ranks", "2"] + extra +
            ["--device-profile", "measure"], work, "ranks2")
        if plan4 is None or "chosen" not in rep4["device_profile"]:
            fail("--ranks 2 %s--device-profile measure: %s"
                 % (" ".join(extra), rep4 if plan4 is None
                    else rep4["device_profile"]))
    profile["recompute_ops"] = {next(iter(table)): "slow"}
    with open(dear_path, "w") as f:
        json.dump(profile, f)
    r = subprocess.run([remat, "compile"] + tiny +
                       ["--device-profile", dear_path],
                       capture_output=True, text=True)
    if r.returncode != 2 or "recompute_ops['" not in r.stderr or \
            "must be a non-negative number of seconds" not in r.stderr:
        fail("a bad recompute_ops entry: exit %d, %r"
             % (r.returncode, r.stderr))
    print("recompute_ops: %d keys; %s recomputed %d times, %d when dear; "
          "measure chose %s of %d candidates"
          % (len(table), dear, counts[dear], after, dp["chosen"],
             len(cands)))


def device_profile(remat, work):
    """--device-profile: the named rooflines and a JSON file reach the
    planner (the report records them; the modeled step time follows), and
    a bad name or file is a usage error."""
    tiny = [model("gpt2.json"), "--preset", "tiny", "--budget", "560000"]
    # (The small preset: tiny's ops are all launch cost.)
    small = [model("gpt2.json"), "--preset", "small"]
    seconds = {}
    for name in ("cpu", "h200", "h200-tf32"):
        plan, rep = compile_plan(remat, small + ["--device-profile", name],
                                 work, name)
        if plan is None:
            fail(f"--device-profile {name}: {rep}")
        if rep["device_profile"]["name"] != name:
            fail(f"--device-profile {name}: report says {rep['device_profile']}")
        seconds[name] = rep["modeled_step_seconds"]
    if not seconds["h200"] < seconds["cpu"] / 10:
        fail(f"an H200 step modeled no faster than the cpu's: {seconds}")
    path = os.path.join(work, "slow.json")
    with open(path, "w") as f:
        json.dump({"name": "slow", "flops_per_second": 1e9,
                   "bytes_per_second": 1e9, "launch_seconds": 0}, f)
    plan, rep = compile_plan(remat, tiny + ["--device-profile", path], work,
                             "slow")
    if plan is None or rep["device_profile"] != {
            "name": "slow", "flops_per_second": 1e9, "bytes_per_second": 1e9,
            "launch_seconds": 0.0}:
        fail(f"a profile file was not used: {rep}")
    _, cpu_tiny = compile_plan(remat, tiny, work, "cpu-tiny")
    if not rep["modeled_step_seconds"] > cpu_tiny["modeled_step_seconds"]:
        fail("a 1 GFLOP/s profile modeled a faster step than the cpu's")
    with open(path, "w") as f:
        json.dump({"flops_per_second": 1e9, "bytes_per_second": "fast"}, f)
    for spec, text in (("nope", "neither a built-in profile (cpu, h200, "
                                "h200-tf32) nor a readable JSON file"),
                       (path, "'bytes_per_second' must be a positive number")):
        r = subprocess.run([remat, "compile", model("gpt2.json"),
                            "--device-profile", spec], capture_output=True,
                           text=True)
        if r.returncode != 2 or text not in r.stderr:
            fail(f"--device-profile {spec}: exit {r.returncode}, {r.stderr!r}")
    # remat run notes a plan costed for another kind of device.
    for name, noted in (("h200", True), ("cpu", False)):
        r = subprocess.run([remat, "run", os.path.join(work, name + ".plan"),
                            "--steps", "1"], capture_output=True, text=True)
        says = "the plan's costs were modeled for 'h200'" in r.stderr
        if r.returncode != 0 or says != noted or (
                not noted and "note:" in r.stderr):
            fail(f"remat run of the {name} plan on the cpu: {r.stderr!r}")
    r = subprocess.run([remat, "plan", model("gpt2.json"), "--preset", "tiny",
                        "--budget", "560000", "--device-profile", "h200"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"remat plan --device-profile h200: {r.stderr}")
    print(f"modeled step seconds by profile: {seconds}; a file profile "
          f"{rep['modeled_step_seconds']:.3g} s")


def plans_deterministic(remat, work):
    """The same model, options and budget give a byte-identical plan file:
    every model (tiny) at store-all and at its minimum budget, compiled
    twice. The solve time and the time-limited MILP's gap stay in the
    report file."""
    for name in ("gpt2.json", "mlp_deep.json", "seed_mlp.json"):
        args = [model(name), "--preset", "tiny"]
        for budget in ([], ["--budget", str(minimum_budget(remat, args,
                                                           work))]):
            texts = []
            for tag in ("first", "second"):
                plan, report = compile_plan(remat, args + budget, work, tag)
                if plan is None:
                    fail(f"compile {name} {budget} failed: {report}")
                if "solve_seconds" not in report:
                    fail("the report file lost solve_seconds")
                with open(plan, "rb") as f:
                    texts.append(f.read())
            if texts[0] != texts[1]:
                fail(f"two compiles of {name} {budget} differ")
            for key in (b"solve_seconds", b"optimality_gap"):
                if key in texts[0]:
                    fail(f"the plan of {name} {budget} holds {key.decode()}")
    print("3 models x 2 budgets: plan files byte-identical across compiles")


def recompute_reads_latest(remat, work):
    """A recomputation cloned from an op computed earlier reads the copies
    live at the clone, not the ones its original read (docs/planner.md):
    the GPT-2 of tools/bench/budget_memory.py at its minimum feasible
    budget, planned with a measured CPU profile (a fixture: the schedule it
    gives recomputes an op whose first computation read a recomputed
    copy), gets an arena within its budget; a clone that read its
    original's copies would keep them alive, and the compile would stop with
    "internal error: arena of 126797888 bytes exceeds the arena's budget of
    123480127"."""
    config = ["--set", "n_layer=4", "--set", "d_model=256", "--set",
              "n_head=4", "--set", "seq=256", "--set", "vocab=4096",
              "--set", "batch=8"]
    profile = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           "profiles", "gpt2_budget_memory_cpu.json")
    budget = 124004415
    for extra in (["--solver", "heuristic", "--no-reorder"], []):
        plan, report = compile_plan(
            remat, [model("gpt2.json")] + config +
            ["--budget", str(budget), "--device-profile", profile] + extra,
            work, "latest")
        if plan is None:
            fail(f"compile {' '.join(extra)} at {budget}: {report}")
        if report["planned_peak_bytes"] > budget or report[
                "recompute_overhead"] <= 0:
            fail(f"planned peak {report['planned_peak_bytes']} over "
                 f"{budget} or nothing recomputed")
        print(f"{' '.join(extra) or 'auto'}: arena {report['arena_bytes']} "
              f"B, planned peak {report['planned_peak_bytes']} B within "
              f"{budget} B, overhead {report['recompute_overhead']:.3f}")


def dump_values(remat, work):
    """--dump-values captures each value when its step produces it: at the
    minimum budget, where most activations share bytes with later ones and
    are recomputed, step 1's values equal store-all's bit for bit."""
    args = [model("gpt2.json"), "--preset", "tiny", "--set", "dropout=0.1"]
    dumps = {}
    for tag, extra in (("all", []),
                       ("minimum", ["--budget",
                                    str(minimum_budget(remat, args, work))])):
        plan, rep = compile_plan(remat, args + extra, work, "dv-" + tag)
        if plan is None:
            fail(rep)
        with open(plan) as f:
            p = json.load(f)
        values = [b for b in p["buffers"]
                  if b["role"] in ("input", "activation", "temporary")]
        out = os.path.join(work, tag + ".values")
        r = subprocess.run([remat, "run", plan, "--steps", "2", "--seed", "3",
                            "--dump-values", out, "--dump-names", "all"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"remat run --dump-values failed:\n{r.stderr}")
        entries = {n: (info, data) for n, info, data in
                   safetensors_entries(out)}
        written = {i for s in p["steps"] for i in s["outputs"]}
        expected = {b["name"] for i, b in enumerate(p["buffers"])
                    if b in values and (b["role"] == "input" or i in written)}
        if set(entries) != expected:
            fail(f"{tag}: dumped {sorted(set(entries) ^ expected)} "
                 f"differently from the plan's values")
        for b in values:
            if b["name"] in entries and \
                    entries[b["name"]][0]["shape"] != b["shape"]:
                fail(f"{tag}: '{b['name']}' has shape "
                     f"{entries[b['name']][0]['shape']}, not {b['shape']}")
        recomputes = sum(1 for s in p["steps"] if s.get("recompute"))
        dumps[tag] = (entries, recomputes)
    (ref, _), (low, recomputes) = dumps["all"], dumps["minimum"]
    if recomputes == 0:
        fail("the minimum budget recomputed nothing")
    common = set(ref) & set(low)
    if len(common) < len(ref) // 2:
        fail(f"only {len(common)} of {len(ref)} values named in both plans")
    differ = sorted(n for n in common if ref[n][1] != low[n][1])
    if differ:
        fail(f"{len(differ)} values differ between store-all and the minimum "
             f"budget, e.g. {differ[:3]}")
    if all(not any(data) for _, data in ref.values()):
        fail("every dumped value is zero")
    print(f"gpt2 tiny: {len(common)} step-1 values bitwise equal at store-all "
          f"and the minimum budget ({recomputes} recompute steps)")
    plan = os.path.join(work, "dv-all.plan")
    for names, code, message in (
            ("no_such_value", 1, "no buffer 'no_such_value'"),
            (next(b["name"] for b in json.load(open(plan))["buffers"]
                  if b["role"] == "param"), 1, "is a param buffer")):
        r = subprocess.run([remat, "run", plan, "--dump-values",
                            os.path.join(work, "x.values"), "--dump-names",
                            names], capture_output=True, text=True)
        if r.returncode != code or message not in r.stderr:
            fail(f"--dump-names {names}: exit {r.returncode}, {r.stderr}")
    r = subprocess.run([remat, "run", plan, "--dump-values",
                        os.path.join(work, "x.values")],
                       capture_output=True, text=True)
    if r.returncode != 2 or "--dump-names" not in r.stderr:
        fail(f"--dump-values alone: exit {r.returncode}, {r.stderr}")
    print("unknown names, parameters and a missing --dump-names are errors")


def write_npy_f32(path, shape, pattern, repeat):
    """A little-endian float32 .npy of `shape` whose data is the float list
    `pattern` repeated `repeat` times (stdlib only)."""
    header = ("{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" %
              "".join(f"{d}, " for d in shape))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) +
                header.encode())
        f.write(struct.pack(f"<{len(pattern)}f", *pattern) * repeat)


def data_memory(remat, work):
    """remat run --data reads each step's batch from the .npy file into the
    arena in bounded pieces: mlp_deep tiny (x: 8 x 16 floats a batch) fed
    from a 32 MiB file of 65536 batches grows beside its arena and
    workspace by less than a quarter of the file (holding the file, as
    remat run did before, takes all of it) and within the report's
    runtime allowance."""
    args = [model("mlp_deep.json"), "--preset", "tiny"]
    plan, report = compile_plan(remat, args, work, "data")
    if plan is None:
        fail(f"compile failed: {report}")
    batches, rows, width = 65536, 8, 16
    npy = os.path.join(work, "x.npy")
    pattern = [((i * 37) % 101) / 101.0 - 0.5 for i in range(rows * width * 64)]
    write_npy_f32(npy, (batches * rows, width), pattern, batches // 64)
    file_bytes = batches * rows * width * 4
    log = os.path.join(work, "data.jsonl")
    r = subprocess.run([remat, "run", plan, "--steps", "3", "--log", log,
                        "--data", "x=" + npy], capture_output=True,
                       text=True)
    if r.returncode != 0:
        fail(f"remat run --data failed:\n{r.stderr}")
    with open(log) as f:
        growth = max(json.loads(line)["rss_growth_bytes"] for line in f)
    beside = growth - report["step_bytes"]
    allowance = report["runtime_allowance_bytes"]
    print(f"--data file {file_bytes} B; arena + workspace "
          f"{report['step_bytes']} B, RSS growth {growth} B: {beside} B "
          f"beside them; runtime allowance {allowance} B")
    if beside >= file_bytes // 4:
        fail("the run held a quarter of the --data file or more beside the "
             "arena")
    if beside > allowance:
        fail("the run grew beyond the runtime allowance")


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    remat, check = sys.argv[1], sys.argv[2]
    checks = {"train-falls": train_falls, "forum-plan": forum_plan,
              "dropout-replay": dropout_replay, "cli-errors": cli_errors,
              "budgets-bitwise": budgets_bitwise,
              "sweeps-in-budget": sweeps_in_budget,
              "graph-reorder": graph_reorder,
              "workspace-reserve": workspace_reserve,
              "conv-workspace": conv_workspace,
              "max-batch": max_batch,
              "loss-grad-in-place": loss_grad_in_place,
              "check-bounds": check_bounds,
              "device-profile": device_profile,
              "measured-profile": measured_profile,
              "measured-recompute": measured_recompute,
              "plans-deterministic": plans_deterministic,
              "recompute-reads-latest": recompute_reads_latest,
              "dump-values": dump_values,
              "data-memory": data_memory}
    if check not in checks:
        print(f"unknown check {check}; one of {', '.join(checks)}")
        return 2
    with tempfile.TemporaryDirectory() as work:
        checks[check](remat, work)
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())

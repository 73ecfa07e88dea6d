"""e2e checks of plans under budgets (checks.py): bitwise results, sweeps,
--graph orders, --max-batch, bounds, deterministic plans, recomputations
that read the latest copies, --dump-values."""
import json
import os
import re
import subprocess

from checks_common import (compile_plan, fail, minimum_budget, model,
                           run_plan, safetensors_entries)


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


def max_batch(remat, work):
    """plan --max-batch names the largest batch whose unsplit step compiles
    under the budget: that batch compiles with --microbatches 1, the next
    does not; and the largest split into --max-microbatches (16) slices:
    that batch compiles with --microbatches 16, the next multiple of 16
    does not; a budget no batch meets either way exits 1."""
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
                               str(budget), "--microbatches", "1"],
                work, "b%d" % b)
            if (plan is not None) != want:
                fail("%s at %d: batch %d %s but --max-batch said %d" % (
                    name, budget, b, "compiles" if plan else "fails", batch))
        print("%s under %d bytes: batch %d compiles, %d does not"
              % (name, budget, batch, batch + 1))
        # The split answer: k micro-batches of the largest slice whose
        # step, accumulators included, fits; one more sample a slice not.
        found = re.search(r"split into (\d+) micro-batches "
                          r"\(--max-microbatches\): (\d+) \(micro-batches "
                          r"of (\d+)\)", r.stdout)
        if not found:
            fail("%s at %d: no split answer in %r" % (name, budget, r.stdout))
        k, split, each = (int(v) for v in found.groups())
        if k != 16 or split != k * each or split < batch:
            fail("%s at %d: split %d = %d x %d against unsplit %d"
                 % (name, budget, split, k, each, batch))
        for b, want in ((split, True), (split + k, False)):
            plan, _ = compile_plan(
                remat, base + ["--set", "batch=%d" % b, "--budget",
                               str(budget), "--microbatches", str(k)],
                work, "s%d" % b)
            if (plan is not None) != want:
                fail("%s at %d: batch %d in %d micro-batches %s but "
                     "--max-batch said %d" % (name, budget, b, k,
                                              "compiles" if plan else "fails",
                                              split))
        print("%s under %d bytes: batch %d in %d micro-batches compiles, "
              "%d does not (%.1fx the unsplit batch)"
              % (name, budget, split, k, split + k, split / batch))
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
                remat, base + ["--set", "batch=%d" % b, "--budget", "600000",
                               "--microbatches", "1"],
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


def ladder_plateau(remat, work):
    """A budget the forum model misses by one sample (batch 86,247 under
    1 GiB): the exact MILP's schedule at the first planner target is proven
    optimal and overflows after layout, so the pass skips the grid's
    targets above that schedule's peak (docs/planner.md, the plateau rule):
    a handful of auto's solves in the given order, not one for each of the
    33 grid points. --time-limit 10 gives the first target's MILP time to
    prove it on a loaded machine."""
    r = subprocess.run([remat, "plan", model("seed_mlp.json"), "--set",
                        "batch=86247", "--budget", "1GiB", "--progress",
                        "--time-limit", "10"], capture_output=True, text=True)
    solves = [line for line in r.stderr.splitlines()
              if line.startswith("[planner] auto")]
    if r.returncode != 1 or "no schedule fits" not in r.stderr:
        fail("seed_mlp batch 86247 under 1 GiB: want the budget missed, "
             "exit %d, stderr tail %r" % (r.returncode, r.stderr[-400:]))
    if not solves or "optimal" not in solves[0] or len(solves) > 8:
        fail("seed_mlp batch 86247 under 1 GiB: %d solves of auto in the "
             "given order (want 1 to 8, the first proven optimal):\n%s"
             % (len(solves), "\n".join(solves[:12])))
    print("seed_mlp batch 86247 under 1 GiB: missed after %d of auto's "
          "solves (%s)" % (len(solves), solves[0][:60]))


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

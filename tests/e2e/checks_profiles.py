"""e2e checks of device profiles (checks.py): --device-profile, remat profile
and measured recomputations."""
import json
import os
import subprocess

from checks_common import compile_plan, fail, model


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

"""e2e checks of memory beside the arena (checks.py): --workspace-reserve,
the cpu convolutions' scratch, --data streamed from its file."""
import json
import os
import struct
import subprocess
import sys

from checks_common import (ROOT, compile_plan, fail, minimum_budget, model,
                           run_plan)


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

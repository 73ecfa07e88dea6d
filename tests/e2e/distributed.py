#!/usr/bin/env python3
"""Data-parallel runs on MPI (docs/distributed.md, issue #14).

  distributed.py REMAT parity MODEL PRESET [--budget-frac F]
                  [--shard-optimizer] [--set NAME=VALUE]...
                  [--microbatches K] [--bf16]
      2 ranks (mpirun -np 2) with the global batch B against 1 rank with
      batch B, 50 steps: every step's loss within 1e-4 relative (the first
      within 1e-6), and every parameter after the last step likewise. With
      --budget-frac F each plan is compiled at F of the way from its
      minimum feasible budget to its store-all peak (per rank), so that
      the planner recomputes (checked). Step 1's averaged gradients match
      one rank's within 1e-5. With --shard-optimizer the 2-rank plan keeps
      half of the optimizer state per rank (ZeRO-1): its optimizer buffers
      are [ceil(numel/2)] slices and its report's optimizer bytes their
      sum (checked against the 1-rank plan's); the 50-step checkpoint holds
      the whole state (compared as above); and both plans resumed from the
      1-rank checkpoint (--weights, with its optimizer state) agree after
      3 more steps, so each rank loads its slice. --set configures the
      model further (an odd width: slices of uneven size). With
      --microbatches K the 2-rank plan also splits each rank's batch into
      K micro-batches (accumulated, then averaged across the ranks once a
      step), against the same unsplit 1-rank plan. With --bf16 both plans
      are --precision bf16: later losses within 1e-3 and step-1 gradients
      within 1e-2 (bf16's resolution; the first loss still within 1e-6);
      the parameters after 50 steps are reported, not judged (AdamW turns
      bf16-sized gradient differences into full steps on small biases).
  distributed.py REMAT errors
      a rank count that does not divide the batch, a plan run on another
      rank count, different plans on the ranks: clear errors, exit 1.
  distributed.py REMAT data
      --data files on 2 ranks: each rank reads its rows of every global
      batch (4 steps' losses as on 1 rank); a file that is not whole global
      batches is an error.
  distributed.py REMAT onnx
      the 2-layer nn.TransformerEncoder language model of
      transformer_budget.py (batch 16, sequence 128), exported from PyTorch
      with a dynamic batch, compiled with --ranks 2 --input-shape x=16,128
      and with --ranks 1, in float32, and with --ranks 1 in float64 as the
      reference: on the same tokens (--data), step 1's averaged gradients
      and the parameters after 3 SGD steps of 2 ranks are per tensor
      within max(1e-5, 4 x E) relative of float64, E the largest float32
      error on that tensor of one rank summing in three orders (GEMMs on
      oneDNN with REMAT_CPU_GEMM=onednn, on OpenBLAS with
      REMAT_CPU_GEMM=blas, and the batch in 2 micro-batches): 2 ranks add the same samples' gradients in another
      order, which float32 rounds differently, and a ReLU input within
      float32's rounding of 0 can flip and move a gradient by 1e-3 on any
      of the runs. Analytically zero gradients, float noise in all three,
      are left out and named. Skips (77) without PyTorch.
  distributed.py REMAT rank-killed
      rank 1 killed mid-run: the run stops within 30 s with an error that
      names rank 1.

Exit 0 on success, 1 with a message on failure, 77 (skipped) without
mpirun or without MPI in this remat.
"""
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

SKIP = 77
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np"]


def run(argv, timeout=600, env=None):
    return subprocess.run(argv, capture_output=True, text=True,
                          timeout=timeout, env=env)


def must(r, what):
    if r.returncode != 0:
        raise SystemExit(f"FAIL: {what}: exit {r.returncode}\n{r.stdout}\n"
                         f"{r.stderr}")
    return r


def mpi_available(remat, work):
    """Skips unless mpirun exists and this remat runs two ranks."""
    if not shutil.which("mpirun"):
        print("SKIP: no mpirun (openmpi-bin)")
        return False
    plan = os.path.join(work, "probe.plan")
    must(run([remat, "compile", model_path("mlp_deep"), "--preset", "tiny",
              "--ranks", "2", "--emit=plan", "-o", plan]), "compile --ranks 2")
    r = run(MPIRUN + ["2", remat, "run", plan, "--steps", "1"], timeout=120)
    if "built without MPI" in r.stderr:
        print("SKIP: this remat was built without MPI")
        return False
    must(r, "mpirun -np 2 remat run (probe)")
    return True


def model_path(name):
    return os.path.join(ROOT, "models", name + ".json")


def read_safetensors(path):
    """{name: tuple of floats} of an F32 or F64 safetensors file."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = data[8 + n + begin:8 + n + end]
        code, width = {"F32": ("f", 4), "F64": ("d", 8)}[info["dtype"]]
        out[name] = struct.unpack(f"<{len(raw) // width}{code}", raw)
    return out


def norm(a):
    return sum(x * x for x in a) ** 0.5


def relative(a, b):
    num = sum((x - y) ** 2 for x, y in zip(a, b)) ** 0.5
    den = sum(y * y for y in b) ** 0.5
    return num / den if den > 0 else num


def losses(log):
    with open(log) as f:
        return [json.loads(line) for line in f]


def optimizer_slices(plan_path):
    """{state buffer: (its shape, its param's element count)} of a plan,
    and the plan's alignment."""
    with open(plan_path) as f:
        plan = json.load(f)
    shapes = {b["name"]: b["shape"] for b in plan["buffers"]}
    out = {}
    for b in plan["buffers"]:
        if b["role"] == "optimizer":
            n = 1
            for d in shapes[b["name"].split(":", 1)[1]]:
                n *= d
            out[b["name"]] = (b["shape"], n)
    return out, plan["alignment"]


def check_sharded_plans(plans, reports):
    """The 2-rank plan's optimizer state is one rank's half of the 1-rank
    plan's: each buffer [ceil(numel/2)], the report's bytes their sum (each
    buffer rounded up to the plan's alignment, as the report counts)."""
    (whole, _), (half, align) = (optimizer_slices(plans[1]),
                                 optimizer_slices(plans[2]))
    if sorted(whole) != sorted(half) or not whole:
        raise SystemExit(f"FAIL: optimizer buffers {sorted(half)} vs "
                         f"{sorted(whole)}")
    for name, (shape, n) in half.items():
        if shape != [(n + 1) // 2]:
            raise SystemExit(f"FAIL: sharded state {name} has shape {shape}"
                             f", not [{(n + 1) // 2}] (half of {n})")
    one = reports[1]["breakdown"]["optimizer"]
    two = reports[2]["breakdown"]["optimizer"]
    expected = sum(-(-4 * ((n + 1) // 2) // align) * align
                   for _, n in half.values())
    if reports[2].get("optimizer_shards") != 2 or two != expected:
        raise SystemExit(f"FAIL: the sharded report says optimizer {two} B "
                         f"(shards {reports[2].get('optimizer_shards')}), "
                         f"expected {expected} B over 2 shards")
    if not one / 2 <= two <= one / 2 + align * len(half):
        raise SystemExit(f"FAIL: per-rank optimizer bytes {two} are not "
                         f"half of one rank's {one}")
    print(f"optimizer state per rank: {two} B sharded over 2 ranks vs "
          f"{one} B on 1 rank ({len(half)} tensors, "
          f"{sum(1 for _, n in half.values() if n % 2)} of odd size)")


def parity(remat, work, model, preset, budget_frac, shard=False, sets=(),
           microbatches=1, bf16=False):
    base = [model_path(model), "--preset", preset]
    if bf16:
        base += ["--precision", "bf16"]
    # (first loss, later losses, step-1 gradients, parameters after 50
    # steps). In bf16 each rank's bias gradients are its half of the
    # batch's sum rounded to bf16 before the float32 average (one rank
    # rounds the whole sum once), and bf16 values summed in another order
    # can round the other way: the gradients differ within bf16's resolution
    # (2^-7 = 7.8e-3 apart at most per value), and so, through AdamW, the
    # later losses (the parameters are reported, below).
    tol = (1e-6, 1e-3, 1e-2, None) if bf16 else (1e-6, 1e-4, 1e-5, 1e-4)
    for value in sets:
        base += ["--set", value]
    # --shard-optimizer and --microbatches: the 2-rank plan only (the
    # 1-rank plan is the reference, unsplit).
    sharding = {1: [], 2: ["--shard-optimizer"] if shard else []}
    if microbatches > 1:
        sharding[2] += ["--microbatches", str(microbatches)]
    budget = []
    if budget_frac:
        # F of the way from each plan's minimum feasible budget up to its
        # store-all peak (per rank): the planner must recompute.
        for ranks in (1, 2):
            args = base + ["--ranks", str(ranks)] + sharding[ranks]
            report = os.path.join(work, f"storeall{ranks}.json")
            must(run([remat, "compile"] + args + ["--emit=plan", "-o",
                      os.devnull, "--report", report]), "store-all compile")
            with open(report) as f:
                full = json.load(f)["planned_peak_bytes"]
            r = run([remat, "compile"] + args + ["--budget", "1",
                                                 "--emit=plan", "-o",
                                                 os.devnull])
            marker = "minimum feasible budget: "
            if marker not in r.stderr:
                raise SystemExit(f"FAIL: no minimum in: {r.stderr}")
            least = int(r.stderr.split(marker)[1].split()[0])
            budget.append(int(least + budget_frac * (full - least)))
    plans, reports = {}, {}
    for ranks in (1, 2):
        plan = os.path.join(work, f"r{ranks}.plan")
        report = os.path.join(work, f"r{ranks}.json")
        extra = ["--budget", str(budget[ranks - 1])] if budget else []
        must(run([remat, "compile"] + base + ["--ranks", str(ranks),
                  "--emit=plan", "-o", plan, "--report", report] + extra +
                 sharding[ranks]),
             f"compile --ranks {ranks}")
        with open(report) as f:
            rep = json.load(f)
        reports[ranks] = rep
        recomputed = rep.get("recompute_overhead", 0)
        print(f"{ranks} rank(s): planned peak {rep['planned_peak_bytes']} B"
              f" per rank, recompute overhead {recomputed:.3f}")
        if budget and not recomputed > 0:
            raise SystemExit(f"FAIL: the budget {budget[ranks - 1]} did not "
                             f"make the {ranks}-rank plan recompute")
        plans[ranks] = plan
    if shard:
        check_sharded_plans(plans, reports)
    steps = "50"
    one_log, two_log = (os.path.join(work, n) for n in ("1.jsonl", "2.jsonl"))
    one_save, two_save = (os.path.join(work, n)
                          for n in ("1.safetensors", "2.safetensors"))
    one_grads, two_grads = (os.path.join(work, n)
                            for n in ("1g.safetensors", "2g.safetensors"))
    must(run([remat, "run", plans[1], "--steps", steps, "--log", one_log,
              "--save", one_save, "--dump-grads", one_grads]), "1-rank run")
    r = must(run(MPIRUN + ["2", remat, "run", plans[2], "--steps", steps,
                           "--log", two_log, "--save", two_save,
                           "--dump-grads", two_grads]),
             "2-rank run")
    if not r.stdout.strip():
        raise SystemExit("FAIL: rank 0 printed no step lines")
    a, b = losses(one_log), losses(two_log)
    if len(a) != 50 or len(b) != 50:
        raise SystemExit(f"FAIL: {len(a)} and {len(b)} log lines, not 50")
    worst = 0
    for k, (x, y) in enumerate(zip(a, b)):
        rel = abs(x["loss"] - y["loss"]) / max(abs(x["loss"]), 1e-30)
        limit = tol[0] if k == 0 else tol[1]
        worst = max(worst, rel)
        if rel > limit:
            raise SystemExit(f"FAIL: step {k + 1}: loss {y['loss']} on 2 "
                             f"ranks, {x['loss']} on 1 (relative {rel:.2e} "
                             f"> {limit})")
        if y.get("ranks") != 2 or len(y.get("rank_ms", [])) != 2:
            raise SystemExit(f"FAIL: step {k + 1}: the log has no per-rank "
                             f"timings: {y}")
    print(f"losses: 50 steps, first {a[0]['loss']:.6f} -> last "
          f"{a[-1]['loss']:.6f}; worst relative difference {worst:.2e}")
    # Step 1's gradients (rank 0 dumps the averaged ones). A gradient that
    # is analytically zero (attention's key bias: softmax ignores a shift
    # of every logit of a row) is float noise in both runs; AdamW turns
    # noise into full-size steps, so those parameters and their optimizer
    # state cannot agree and are left out, named.
    g1, g2 = read_safetensors(one_grads), read_safetensors(two_grads)
    largest = max(norm(g) for g in g1.values())
    noise = {k for k, g in g1.items() if norm(g) < 1e-5 * largest}
    worst_grad = max(relative(g2[k], g1[k]) for k in g1 if k not in noise)
    print(f"step-1 gradients: {len(g1)} tensors, worst relative difference "
          f"{worst_grad:.2e}" + (f"; float noise (norm < 1e-5 x the largest, "
                                 f"left out): {sorted(noise)}" if noise
                                 else ""))
    if worst_grad > tol[2]:
        raise SystemExit(f"FAIL: the averaged gradients differ by more than "
                         f"{tol[2]:g}")
    p1, p2 = read_safetensors(one_save), read_safetensors(two_save)
    if sorted(p1) != sorted(p2):
        raise SystemExit(f"FAIL: saved tensors differ: {sorted(p1)} vs "
                         f"{sorted(p2)}")
    compared = [k for k in p1 if k.split(":")[-1] not in noise]
    worst, worst_name = max((relative(p2[k], p1[k]), k) for k in compared)
    print(f"parameters and optimizer state after 50 steps: {len(compared)} "
          f"of {len(p1)} tensors, worst relative difference {worst:.2e} "
          f"({worst_name})")
    # In bf16 the two runs' gradients differ by bf16 roundings every step,
    # and AdamW turns a small gradient's difference into a full-size step:
    # a bias that starts at zero (h.0.bq) ends 1.4e-2 apart relative to its
    # small size. The losses and step-1 gradients above are the judged
    # parity there; the parameters are reported.
    if not bf16 and worst > tol[3]:
        raise SystemExit(f"FAIL: the parameters differ by more than "
                         f"{tol[3]:g}")
    if shard:
        # Resume both from the 1-rank checkpoint (nonzero optimizer state):
        # each rank of the sharded run must load its slice of every state.
        resumed = {}
        for ranks in (1, 2):
            out = os.path.join(work, f"resumed{ranks}.safetensors")
            launch = MPIRUN + ["2"] if ranks == 2 else []
            must(run(launch + [remat, "run", plans[ranks], "--steps", "3",
                               "--weights", one_save, "--save", out]),
                 f"{ranks}-rank run resumed from the checkpoint")
            resumed[ranks] = read_safetensors(out)
        worst = max(relative(resumed[2][k], resumed[1][k]) for k in compared)
        print(f"resumed from the 1-rank checkpoint, 3 steps: worst relative "
              f"difference {worst:.2e} over {len(compared)} tensors")
        if worst > 1e-4:
            raise SystemExit("FAIL: the resumed runs differ by more than "
                             "1e-4")
    print("OK")
    return 0


def expect_error(r, *texts):
    if r.returncode == 0 or any(t not in r.stderr for t in texts):
        raise SystemExit(f"FAIL: expected an error with {texts}, got exit "
                         f"{r.returncode}:\n{r.stderr}")
    print("ok: " + texts[0])


def errors(remat, work):
    tiny = [model_path("mlp_deep"), "--preset", "tiny"]
    expect_error(run([remat, "compile"] + tiny + ["--ranks", "3"]),
                 "--ranks 3 does not divide the global batch 8")
    expect_error(run([remat, "compile"] + tiny + ["--ranks", "0"]),
                 "--ranks needs a rank count")
    two = os.path.join(work, "two.plan")
    must(run([remat, "compile"] + tiny + ["--ranks", "2", "--emit=plan",
              "-o", two]), "compile --ranks 2")
    expect_error(run([remat, "run", two, "--steps", "1"]),
                 "the plan is for 2 ranks", "mpirun -np 2")
    expect_error(run(MPIRUN + ["3", remat, "run", two, "--steps", "1"],
                     timeout=120),
                 "the plan is for 2 ranks", "this run has 3")
    # Different plans on the ranks: rank 1 reads another file.
    other = os.path.join(work, "other.plan")
    must(run([remat, "compile"] + tiny + ["--ranks", "2", "--set",
              "width=32", "--emit=plan", "-o", other]), "compile other")
    script = os.path.join(work, "per_rank.sh")
    with open(script, "w") as f:
        f.write("#!/bin/sh\nif [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then "
                f"exec {remat} run {other} --steps 1; else exec {remat} run "
                f"{two} --steps 1; fi\n")
    os.chmod(script, 0o755)
    expect_error(run(MPIRUN + ["2", script], timeout=120),
                 "the ranks run different plans")
    return 0


def rank_killed(remat, work):
    plan = os.path.join(work, "long.plan")
    must(run([remat, "compile", model_path("mlp_deep"), "--preset", "tiny",
              "--ranks", "2", "--emit=plan", "-o", plan]), "compile")
    log = os.path.join(work, "long.jsonl")
    proc = subprocess.Popen(MPIRUN + ["2", remat, "run", plan, "--steps",
                                      "100000000", "--log", log],
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    # Wait until the ranks train, then kill rank 1.
    deadline = time.time() + 60
    while time.time() < deadline and not (os.path.exists(log) and
                                          os.path.getsize(log) > 0):
        time.sleep(0.2)
    victim = None
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if b"OMPI_COMM_WORLD_RANK=1" in env and plan.encode() in cmd:
            victim = int(pid)
    if victim is None:
        proc.kill()
        raise SystemExit("FAIL: found no process of rank 1")
    killed = time.time()
    os.kill(victim, signal.SIGKILL)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise SystemExit("FAIL: the run did not stop within 60 s of rank 1's "
                         "death")
    took = time.time() - killed
    print(f"stopped {took:.1f} s after rank 1 was killed, exit "
          f"{proc.returncode}")
    if proc.returncode == 0 or took > 30:
        raise SystemExit(f"FAIL: exit {proc.returncode} after {took:.1f} s")
    if "rank 1" not in err:
        raise SystemExit(f"FAIL: the error does not name rank 1:\n{err}")
    print("ok: the error names rank 1: " +
          next(l for l in err.splitlines() if "rank 1" in l).strip())
    return 0


def update_lag(remat, work):
    """--update-lag (compile only, no MPI needed): with 2 ranks each
    optimizer update runs at least the kept lag of other plan steps after
    the last write of the gradient it reads, without a budget at no arena
    bytes over 1.01 x the unlagged plan, and under the minimum feasible budget
    within it; one rank's report has no lag; a bad lag is a usage error."""
    base = [model_path("gpt2"), "--preset", "tiny"]

    def compile_(extra, tag):
        plan = os.path.join(work, tag + ".plan")
        report = os.path.join(work, tag + ".json")
        must(run([remat, "compile"] + base + extra + ["--emit=plan", "-o",
                  plan, "--report", report]), "compile " + " ".join(extra))
        with open(plan) as f, open(report) as g:
            return json.load(f), json.load(g)

    def shortest_lag(plan):
        last_write = {}
        lags = []
        steps = plan["steps"]
        for i, step in enumerate(steps):
            if step["phase"] == "optimizer":
                grads = [b for b in step["inputs"] if b in last_write]
                start = max(last_write[b] for b in grads)
                between = sum(1 for s in steps[start + 1:i]
                              if s["phase"] != "optimizer")
                after = sum(1 for s in steps[i + 1:]
                            if s["phase"] != "optimizer")
                lags.append(between if after else None)
            for b in step["outputs"]:
                last_write[b] = i
        return min(x for x in lags if x is not None)

    for bad in ("-1", "four"):
        r = run([remat, "compile"] + base + ["--ranks", "2", "--update-lag",
                                             bad, "--emit=plan", "-o",
                                             os.devnull])
        if r.returncode != 2 or \
                f"--update-lag '{bad}' is not a count of ops" not in r.stderr:
            raise SystemExit("FAIL: --update-lag %s: exit %d, %r"
                             % (bad, r.returncode, r.stderr))
    _, one = compile_(["--ranks", "1"], "one")
    if "update_lag" in one:
        raise SystemExit("FAIL: a one-rank report has update_lag")
    plain, plain_rep = compile_(["--ranks", "2", "--update-lag", "0"], "l0")
    lagged, rep = compile_(["--ranks", "2"], "l4")
    if rep["update_lag"] < 1 or plain_rep["update_lag"] != 0:
        raise SystemExit("FAIL: update_lag %r (default), %r (0)"
                         % (rep["update_lag"], plain_rep["update_lag"]))
    if rep["arena_bytes"] > 1.01 * plain_rep["arena_bytes"]:
        raise SystemExit("FAIL: the lag grew the arena over 1%: "
                         "%d > %d" % (rep["arena_bytes"],
                                      plain_rep["arena_bytes"]))
    got = shortest_lag(lagged)
    if got < rep["update_lag"] or shortest_lag(plain) >= got:
        raise SystemExit("FAIL: shortest distance from a gradient's last "
                         "write to its update: %d with lag %d, %d without"
                         % (got, rep["update_lag"], shortest_lag(plain)))
    r = run([remat, "compile"] + base + ["--ranks", "2", "--budget", "1",
                                         "--emit=plan", "-o", os.devnull])
    least = int(r.stderr.split("minimum feasible budget: ")[1].split()[0])
    _, tight = compile_(["--ranks", "2", "--budget", str(least)], "tight")
    if tight["step_bytes"] > least:
        raise SystemExit("FAIL: at the minimum budget %d the step takes %d"
                         % (least, tight["step_bytes"]))
    print("update lag %d: shortest gradient-to-update distance %d (%d "
          "without), arena %d B (%d without); at the minimum budget %d B "
          "lag %d" % (rep["update_lag"], got, shortest_lag(plain),
                      rep["arena_bytes"], plain_rep["arena_bytes"], least,
                      tight["update_lag"]))
    return 0


def data_parity(remat, work):
    """--data on 2 ranks: each rank reads its rows of every global batch
    from the .npy files (streamed, docs/distributed.md). mlp_deep tiny
    (global batch 8) fed x and target from files of 3 global batches: 4
    steps on 2 ranks against 1 rank (the batches cycle), every loss within
    1e-6 relative on step 1 and 1e-4 after; a file of 12 rows (not a
    multiple of the global batch) is an error naming the shape it needs."""
    base = [model_path("mlp_deep"), "--preset", "tiny"]
    plans = {}
    for ranks in (1, 2):
        plans[ranks] = os.path.join(work, f"d{ranks}.plan")
        must(run([remat, "compile"] + base + ["--ranks", str(ranks),
                  "--emit=plan", "-o", plans[ranks]]),
             f"compile --ranks {ranks}")

    def npy(name, rows, seed):
        path = os.path.join(work, name + ".npy")
        header = ("{'descr': '<f4', 'fortran_order': False, "
                  f"'shape': ({rows}, 16), }}")
        header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
        values = [((i * 7919 + seed) % 1009) / 1009.0 - 0.5
                  for i in range(rows * 16)]
        with open(path, "wb") as f:
            f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) +
                    header.encode() + struct.pack(f"<{len(values)}f",
                                                  *values))
        return path

    data = ["--data", "x=" + npy("x", 24, 1),
            "--data", "target=" + npy("target", 24, 2)]
    logs = {r: os.path.join(work, f"d{r}.jsonl") for r in (1, 2)}
    must(run([remat, "run", plans[1], "--steps", "4", "--log", logs[1]] +
             data), "1-rank run --data")
    must(run(MPIRUN + ["2", remat, "run", plans[2], "--steps", "4", "--log",
                       logs[2]] + data), "2-rank run --data")
    a, b = losses(logs[1]), losses(logs[2])
    if len(a) != 4 or len(b) != 4:
        raise SystemExit(f"FAIL: {len(a)} and {len(b)} log lines, not 4")
    for k, (x, y) in enumerate(zip(a, b)):
        rel = abs(x["loss"] - y["loss"]) / max(abs(x["loss"]), 1e-30)
        limit = 1e-6 if k == 0 else 1e-4
        if rel > limit:
            raise SystemExit(f"FAIL: --data step {k + 1}: loss {y['loss']} "
                             f"on 2 ranks, {x['loss']} on 1 (relative "
                             f"{rel:.2e} > {limit})")
    if a[0]["loss"] == a[1]["loss"] or a[0]["loss"] == a[3]["loss"]:
        raise SystemExit("FAIL: the 3 batches did not cycle: losses "
                         f"{[x['loss'] for x in a]}")
    print(f"--data on 2 ranks: 4 losses as on 1 rank "
          f"({[round(x['loss'], 6) for x in a]})")
    r = run(MPIRUN + ["2", remat, "run", plans[2], "--steps", "1",
                      "--data", "x=" + npy("short", 12, 3)])
    expect = "2 ranks need global batches of input 'x': shape [8,16]"
    if r.returncode == 0 or expect not in r.stderr:
        raise SystemExit(f"FAIL: a 12-row file on 2 ranks: exit "
                         f"{r.returncode}, wanted '{expect}' in:\n{r.stderr}")
    return 0


def onnx_parity(remat, work):
    """An ONNX transformer on 2 ranks against 1 (module docstring)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    try:
        import numpy as np
        import transformer_budget
        transformer_budget.export(os.path.join(work, "lm.onnx"), 16, 128,
                                  dynamic_batch=True)
    except ImportError as e:
        print(f"SKIP: {e}")
        return SKIP
    rng = np.random.default_rng(5)
    for name in ("x", "labels"):
        np.save(os.path.join(work, name + ".npy"),
                rng.integers(0, 512, size=(16, 128)).astype(np.int64))
    data = ["--data", "x=" + os.path.join(work, "x.npy"),
            "--data", "labels=" + os.path.join(work, "labels.npy")]
    grads, saved = {}, {}
    # One rank in float32 three ways, each summing in its own order: GEMMs
    # on oneDNN, on OpenBLAS, and the batch in 2 micro-batches (GEMMs where
    # the rule puts them: docs/cli.md, "CPU GEMMs").
    for ranks, precision, extra, env in (
            (1, "fp64", [], {}),
            (1, "fp32", [], {"REMAT_CPU_GEMM": "onednn"}),
            (1, "fp32-blas", [], {"REMAT_CPU_GEMM": "blas"}),
            (1, "fp32-split", ["--microbatches", "2"], {}),
            (2, "fp32", [], {})):
        tag = f"{ranks}-{precision}"
        plan = os.path.join(work, f"lm{tag}.plan")
        must(run([remat, "compile", os.path.join(work, "lm.onnx"),
                  "--ranks", str(ranks), "--input-shape", "x=16,128",
                  "--precision", precision[:4], "--emit=plan", "-o", plan]
                 + extra, env=dict(os.environ, **env)),
             f"compile --ranks {ranks} --precision {precision}")
        g = os.path.join(work, f"g{tag}.safetensors")
        out = os.path.join(work, f"s{tag}.safetensors")
        launch = MPIRUN + ["2"] if ranks == 2 else []
        must(run(launch + [remat, "run", plan, "--steps", "3",
                           "--dump-grads", g, "--save", out] + data,
                 env=dict(os.environ, **env)),
             f"{ranks}-rank {precision} run")
        grads[tag], saved[tag] = read_safetensors(g), read_safetensors(out)
    ref = grads["1-fp64"]
    largest = max(norm(g) for g in ref.values())
    noise = {k for k, g in ref.items() if norm(g) < 1e-5 * largest}
    failed, worst = [], {}
    for what, runs in (("step-1 gradient", grads), ("after 3 steps", saved)):
        names = [k for k in runs["1-fp64"] if k.split(":")[-1] not in noise]
        for k in names:
            one = max(relative(runs[t][k], runs["1-fp64"][k])
                      for t in ("1-fp32", "1-fp32-blas", "1-fp32-split"))
            two = relative(runs["2-fp32"][k], runs["1-fp64"][k])
            tol = max(1e-5, 4 * one)
            if two / tol > worst.get(what, (0,))[0]:
                worst[what] = (two / tol, k, two, one)
            if two > tol:
                failed.append(f"{what} {k}: 2 ranks {two:.2e} from float64, "
                              f"beyond {tol:.2e} (1 rank {one:.2e})")
    print("ONNX transformer, 2 ranks against 1 (global batch 16), float32 "
          "against float64 per tensor; worst of each (error / tolerance, "
          "tensor, 2 ranks' error, 1 rank's): "
          + "; ".join(f"{what}: {r:.2f} {k} {two:.2e} {one:.2e}"
                      for what, (r, k, two, one) in worst.items())
          + (f"; float noise left out: {sorted(noise)}" if noise else ""))
    if failed:
        raise SystemExit("FAIL: " + "; ".join(failed[:4]))
    print("OK")
    return 0


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    remat, check = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="remat-mpi-") as work:
        if check == "update-lag":
            return update_lag(remat, work)
        if not mpi_available(remat, work):
            return SKIP
        if check == "parity":
            frac = None
            if "--budget-frac" in sys.argv:
                frac = float(sys.argv[sys.argv.index("--budget-frac") + 1])
            sets = [sys.argv[i + 1] for i, a in enumerate(sys.argv[:-1])
                    if a == "--set"]
            k = 1
            if "--microbatches" in sys.argv:
                k = int(sys.argv[sys.argv.index("--microbatches") + 1])
            return parity(remat, work, sys.argv[3], sys.argv[4], frac,
                          "--shard-optimizer" in sys.argv, sets, k,
                          "--bf16" in sys.argv)
        if check == "errors":
            return errors(remat, work)
        if check == "rank-killed":
            return rank_killed(remat, work)
        if check == "data":
            return data_parity(remat, work)
        if check == "onnx":
            return onnx_parity(remat, work)
    raise SystemExit(__doc__)


if __name__ == "__main__":
    sys.exit(main())

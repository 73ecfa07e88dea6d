"""e2e checks of training through `remat` (checks.py): losses fall, the forum
model's plan, dropout replays, CLI errors, the loss gradient in place."""
import json
import os
import subprocess

from checks_common import compile_plan, fail, losses, model, run_plan


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

#!/usr/bin/env python3
"""Error messages of `remat` as a new user meets them (run by ctest; stdlib only).

Each check runs the CLI on one mistake and checks the exit code and that
stderr says where (file:line:column and JSON pointer, or the command and
flag), what is wrong, and what to do:

  errors.py REMAT undefined-name   a misspelled value: line:column, pointer, suggestion
  errors.py REMAT number-overflow  1e999 in a model: line:column and pointer
  errors.py REMAT unknown-op       'layernorm': suggests 'layer_norm'
  errors.py REMAT matmul-shapes    a matmul mismatch names operands and shapes
  errors.py REMAT broadcast-param  a broadcast error says where the param was
                                   declared and with which shape
  errors.py REMAT missing-loss     no 'loss': a pointer and what it must be
  errors.py REMAT unused-param     a parameter no op reads: a located warning, exit 0
  errors.py REMAT train-flags      train checks its and run's flags before compiling
  errors.py REMAT train-tmpdir     train's temporary plan under $TMPDIR, removed;
                                   a missing $TMPDIR named in the error
  errors.py REMAT plan-as-model    compile/train on a plan file say to use remat run
  errors.py REMAT exit-codes       usage errors exit 2 with suggestions, input
                                   errors 1, in every command
  errors.py REMAT version          remat --version / remat version
Exit 0 on success, 1 with a message on failure.
"""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPT2 = os.path.join(ROOT, "models", "gpt2.json")

# A small valid model the checks edit: linear layer, bias, tanh, loss.
BASE = """{
  "format": "remat-model", "version": 1, "name": "m",
  "config": { "batch": 4, "d": 8 },
  "inputs": [ { "name": "x", "shape": ["batch", "d"] } ],
  "params": [
    { "name": "w_o", "shape": ["d", "d"] },
    { "name": "b", "shape": ["d"] }
  ],
  "ops": [
    { "name": "xw", "op": "matmul", "inputs": ["x", "w_o"] },
    { "name": "h", "op": "add", "inputs": ["xw", "b"] },
    { "name": "t", "op": "tanh", "inputs": ["h"] },
    { "name": "loss", "op": "reduce_mean", "inputs": ["t"], "attrs": { "axes": [0, 1] } }
  ],
  "loss": "loss"
}
"""


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def position(text, needle):
    """'LINE:COLUMN' (1-based) of the first occurrence of needle in text."""
    at = text.index(needle)
    line = text.count("\n", 0, at) + 1
    column = at - (text.rfind("\n", 0, at) + 1) + 1
    return f"{line}:{column}"


def at_name(text, name):
    """'LINE:COLUMN' of the object that starts with {"name": NAME}."""
    return position(text, '{ "name": "%s"' % name)


def edited(old, new, text=BASE):
    if old not in text:
        fail(f"the base model lacks {old!r}")
    return text.replace(old, new, 1)


def write(work, name, text):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def expect(argv, code, *texts, stream="stderr", absent=(), env=None):
    r = subprocess.run(argv, capture_output=True, text=True, env=env)
    out = r.stderr if stream == "stderr" else r.stdout
    shown = " ".join(os.path.basename(a) for a in argv[1:])
    if r.returncode != code:
        fail(f"{shown}: exit {r.returncode} (want {code}); stderr {r.stderr!r}")
    for t in texts:
        if t not in out:
            fail(f"{shown}: {stream} {out!r} lacks {t!r}")
    for t in absent:
        if t in out:
            fail(f"{shown}: {stream} {out!r} has {t!r}")
    print(f"ok: {shown}: exit {code}: {out.strip().splitlines()[0] if out.strip() else ''}")
    return r


def undefined_name(remat, work):
    text = edited('"inputs": ["xw", "b"]', '"inputs": ["xw", "w_out"]')
    path = write(work, "x.json", text)
    expect([remat, "compile", path], 1,
           f"error: {path}:{at_name(text, 'h')}: /ops/1 'h': "
           "'w_out' is not defined; did you mean 'w_o'?")


def number_overflow(remat, work):
    text = edited('"batch": 4', '"batch": 1e999')
    path = write(work, "x.json", text)
    expect([remat, "compile", path], 1,
           f"{path}:{position(text, '1e999')}: /config/batch: malformed JSON: "
           "number overflow parsing '1e999'")
    # A syntax error carries line and column too.
    text = edited('"loss": "loss"\n}', '"loss": "loss",\n}')
    path = write(work, "y.json", text)
    closing = int(position(text, ',\n}').split(":")[0]) + 1
    expect([remat, "compile", path], 1, f"{path}:{closing}:1: malformed JSON")


def unknown_op(remat, work):
    text = edited('"op": "tanh"', '"op": "layernorm"')
    path = write(work, "x.json", text)
    expect([remat, "compile", path], 1,
           f"{path}:{at_name(text, 't')}: /ops/2 't': unknown "
           "op 'layernorm'; did you mean 'layer_norm'?")


def matmul_shapes(remat, work):
    text = edited('{ "name": "w_o", "shape": ["d", "d"] }',
                  '{ "name": "w_o", "shape": [256, "d"] }')
    path = write(work, "x.json", text)
    expect([remat, "compile", path], 1,
           f"{path}:{at_name(text, 'xw')}: /ops/0 'xw': matmul: "
           "operand b 'w_o' has shape [256,8] but expects K=8 (the first of its "
           "last two dims) to match operand a 'x' [4,8]",
           f"param 'w_o' is declared with shape [256,8] at "
           f"{path}:{position(text, '[256')} (/params/0/shape)")


def broadcast_param(remat, work):
    text = edited('{ "name": "b", "shape": ["d"] }', '{ "name": "b", "shape": [3] }')
    path = write(work, "x.json", text)
    expect([remat, "compile", path], 1,
           f"{path}:{at_name(text, 'h')}: /ops/1 'h': add: "
           "operand a 'xw' [4,8] and operand b 'b' [3] do not broadcast",
           f"; param 'b' is declared with shape [3] at "
           f"{path}:{position(text, '[3]')} (/params/1/shape)")


def missing_loss(remat, work):
    text = edited(',\n  "loss": "loss"', "")
    path = write(work, "x.json", text)
    expect([remat, "compile", path], 1,
           f"{path}:1:1: /loss: missing field 'loss': the name of the float "
           "scalar (shape []) an op computes, which the training step "
           "minimizes, e.g. \"loss\": \"loss\"")


def unused_param(remat, work):
    text = edited('{ "name": "b", "shape": ["d"] }',
                  '{ "name": "b", "shape": ["d"] },\n'
                  '    { "name": "w_spare", "shape": ["d", 2] }')
    path = write(work, "x.json", text)
    expect([remat, "compile", path, "--emit=flat"], 0,
           f"warning: {path}:{at_name(text, 'w_spare')}: "
           "/params/2 'w_spare': parameter 'w_spare' is not read by any op")
    # The docs say so.
    with open(os.path.join(ROOT, "docs", "model-format.md")) as f:
        if "is not read by any op" not in f.read():
            fail("docs/model-format.md does not document the unused-parameter "
                 "warning")


def train_flags(remat, work):
    # Each is a usage error of `remat train`, found before the compile (which
    # would print the plan's summary, "planned peak").
    for args, text in (
            (["--step", "5"], "remat train: unknown option '--step'; did you "
                              "mean '--steps'?"),
            (["--steps", "five"], "remat train: --steps needs a non-negative "
                                  "integer, got 'five'"),
            (["--steps", "1", "--backend", "cpuu"],
             "remat train: unknown backend 'cpuu'; did you mean 'cpu'?"),
            (["--steps", "1", "--solver", "heurstic"],
             "remat train: --solver: unknown solver 'heurstic'; did you mean "
             "'heuristic'?")):
        expect([remat, "train", GPT2, "--preset", "tiny"] + args, 2,
               text, "(see remat train --help)", absent=("planned peak",
                                                          "remat run"))


def train_tmpdir(remat, work):
    # train's temporary plan goes under $TMPDIR, and is gone after the run.
    tmp = os.path.join(work, "tmp")
    os.mkdir(tmp)
    train = [remat, "train", GPT2, "--preset", "tiny", "--steps", "1"]
    expect(train, 0, "step 1", stream="stdout",
           env=dict(os.environ, TMPDIR=tmp))
    if os.listdir(tmp):
        fail(f"remat train left {os.listdir(tmp)} in $TMPDIR")
    missing = os.path.join(work, "missing")
    expect(train, 1, f"remat train: cannot create a temporary plan file in "
           f"'{missing}' ($TMPDIR): No such file or directory",
           absent=("planned peak",), env=dict(os.environ, TMPDIR=missing))


def plan_as_model(remat, work):
    plan = os.path.join(work, "m.plan")
    expect([remat, "compile", write(work, "m.json", BASE), "--emit=plan", "-o",
            plan], 0)
    for command in ("compile", "train"):
        expect([remat, command, plan], 1,
               f"{plan}:", "this is a remat plan", f"run it with `remat run {plan}`",
               absent=("unknown field",))
    # And the other way round, as before.
    model = os.path.join(work, "m.json")
    expect([remat, "run", model], 1, "this is a remat model, not a plan",
           f"`remat train {model} --steps N`")


def exit_codes(remat, work):
    model = write(work, "m.json", BASE)
    plan = os.path.join(work, "m.plan")
    expect([remat, "compile", model, "--emit=plan", "-o", plan], 0)
    usage = [
        ([remat, "compile", model, "--solver", "heurstic", "--emit=plan",
          "--budget", "1MB"], "did you mean 'heuristic'?"),
        ([remat, "compile", model, "--emit=plans"],
         "unknown --emit stage 'plans'; did you mean 'plan'?"),
        ([remat, "compile", GPT2, "--preset", "tinyy"],
         "unknown preset 'tinyy'; did you mean 'tiny'?"),
        ([remat, "compile", GPT2, "--set", "n_layr=2"],
         "unknown config variable 'n_layr'; did you mean 'n_layer'?"),
        ([remat, "compile", model, "--device-profile", "h20"],
         "did you mean 'h200'?"),
        ([remat, "compile", model, "--precision", "fp46"],
         "--precision: unknown precision 'fp46'; did you mean 'fp64'?"),
        ([remat, "compile", model, "--budgte", "1MB"],
         "remat compile: unknown option '--budgte'; did you mean '--budget'?"),
        ([remat, "plan", model, "--sweeep"],
         "remat plan: unknown option '--sweeep'; did you mean '--sweep'?"),
        ([remat, "plan", model, "--budget", "1MB", "--solver", "dpp"],
         "unknown solver 'dpp'; did you mean 'dp'?"),
        ([remat, "plan", model, "--sweep", "--points", "many"],
         "--points 'many' is not a positive integer"),
        ([remat, "run", plan, "--seeds", "3"],
         "remat run: unknown option '--seeds'; did you mean '--seed'?"),
        ([remat, "explain", plan, "--jsn", "x"],
         "remat explain: unknown option '--jsn'; did you mean '--json'?"),
        ([remat, "complie", model], "unknown command 'complie'; did you mean "
                                    "'compile'?"),
    ]
    for argv, text in usage:
        expect(argv, 2, text)
    bad_input = [
        ([remat, "compile", os.path.join(work, "missing.json")], "cannot open"),
        ([remat, "plan", model, "--budget", "100"], "minimum feasible budget"),
        ([remat, "explain", model], "remat explain: error:"),
    ]
    for argv, text in bad_input:
        expect(argv, 1, text)
    with open(os.path.join(ROOT, "docs", "cli.md")) as f:
        cli = f.read()
    if not re.search(r"## Exit codes", cli):
        fail("docs/cli.md has no 'Exit codes' section")


def version(remat, work):
    for argv in ([remat, "--version"], [remat, "version"]):
        r = expect(argv, 0, "remat ", stream="stdout")
        if not re.match(r"remat \d+\.\d+\.\d+( \(git [0-9a-f]+\))?\n$", r.stdout):
            fail(f"{argv[1]} printed {r.stdout!r}")
    expect([remat, "--help"], 0, "--version", stream="stdout")
    expect([remat, "--verison"], 2, "did you mean '--version'?")


def graph_file(remat, work):
    missing = os.path.join(work, "missing.json")
    expect([remat, "plan", "--graph", missing, "--budget-frac", "0.9"], 1,
           f"remat plan: error: {missing}: cannot open the graph file: "
           "No such file or directory")
    expect([remat, "plan", "--graph", work, "--budget-frac", "0.9"], 1,
           f"{work}: is a directory, not a graph file (--graph takes one "
           "networkx node-link JSON file")


CHECKS = {"undefined-name": undefined_name, "number-overflow": number_overflow,
          "unknown-op": unknown_op, "matmul-shapes": matmul_shapes,
          "broadcast-param": broadcast_param, "missing-loss": missing_loss,
          "unused-param": unused_param, "train-flags": train_flags,
          "train-tmpdir": train_tmpdir,
          "plan-as-model": plan_as_model, "exit-codes": exit_codes,
          "version": version, "graph-file": graph_file}


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in CHECKS:
        print(__doc__)
        return 2
    remat, check = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as work:
        CHECKS[check](remat, work)
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""`remat` on ONNX files: error messages and training (docs/onnx.md).

  onnx_cli.py REMAT errors       truncated file, unsupported op, unsupported
                                 opset, dynamic dim without --input-shape,
                                 graph without an output, bad flags: each
                                 one message, the right exit code, no crash
  onnx_cli.py REMAT fuzz-found   mutants tests/fuzz/fuzz_onnx.py found
                                 (external data fields, huge dims, bad
                                 UTF-8, an undefined input type): each a
                                 clear error (skips without the onnx
                                 Python module)
  onnx_cli.py REMAT train-falls  remat train on the exported classifier MLP
                                 for 200 steps: the loss falls below half
                                 its start
  onnx_cli.py REMAT lm-train-falls
                                 the same for the transformer language model
                                 (--frozen mask) on its default next-token
                                 task
  onnx_cli.py REMAT resnet18-train-falls
                                 torchvision's resnet18 at 32 x 32 for 200
                                 steps on 4 fixed batches of 4 (--data): the
                                 loss of a pass over them falls below half
                                 its start (skips without torchvision)
  onnx_cli.py REMAT weights-memory
                                 remat run of an exported MLP with 33.6 MB
                                 of weights: its RSS growth beside arena
                                 and workspace is under half the weights
                                 file and within the runtime allowance
  onnx_cli.py REMAT running-stats  the `norm` model (BatchNorm): 3 steps
                                 of SGD give PyTorch's parameters and
                                 running statistics; --save holds the
                                 statistics and a run resumed from it with
                                 --weights continues bitwise
Exit 0 on success, 1 with a message on failure, 77 (skipped) without
PyTorch or without ONNX support in this remat.
"""
import json
import os
import resource
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, HERE)
SKIP = 77


def run(remat, *args):
    r = subprocess.run([remat, *args], capture_output=True, text=True)
    if r.returncode < 0 or "terminate called" in r.stderr:
        raise SystemExit(f"FAIL: remat {' '.join(args)} crashed:\n{r.stderr}")
    return r


def expect(r, code, *needles):
    """Checks the exit code and that stderr holds every needle."""
    for needle in needles:
        if needle not in r.stderr:
            raise SystemExit(f"FAIL: expected {needle!r} in stderr "
                             f"(exit {r.returncode}):\n{r.stderr}")
    if r.returncode != code:
        raise SystemExit(f"FAIL: exit {r.returncode}, expected {code}:\n"
                         f"{r.stderr}")
    first = (r.stderr.strip().splitlines() or ["(no message)"])[0]
    print(f"ok (exit {code}): {first}")


# A minimal protobuf writer, enough for ModelProto (no onnx Python module).
def varint(n):
    out = b""
    while True:
        byte, n = n & 0x7F, n >> 7
        out += bytes([byte | (0x80 if n else 0)])
        if not n:
            return out


def field(number, value):
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    data = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(data)) + data


def tensor_value_info(name, dims):
    shape = b"".join(field(1, field(1, d)) for d in dims)
    tensor_type = field(1, 1) + field(2, shape)      # elem_type FLOAT, shape
    return field(1, name) + field(2, field(1, tensor_type))


def model_without_output():
    """x -> Relu -> y, but the graph lists no output."""
    node = field(1, "x") + field(2, "y") + field(3, "relu") + field(4, "Relu")
    graph = field(1, node) + field(2, "g") + field(11, tensor_value_info(
        "x", [2, 3]))
    opset = field(1, "") + field(2, 17)
    return field(1, 8) + field(8, opset) + field(7, graph)


def errors(remat, work):
    import export_onnx
    import torch

    good = os.path.join(work, "classifier.onnx")
    export_onnx.export("classifier", good, batch=4)

    with open(good, "rb") as f:
        data = f.read()
    truncated = os.path.join(work, "truncated.onnx")
    with open(truncated, "wb") as f:
        f.write(data[:len(data) // 2])
    expect(run(remat, "compile", truncated), 1, "truncated.onnx",
           "not a valid ONNX model")

    class EluModel(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 3)

        def forward(self, x):
            return torch.nn.functional.elu(self.fc(x))

    bad_op = os.path.join(work, "elu.onnx")
    torch.onnx.export(EluModel(), torch.randn(2, 4), bad_op,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, opset_version=13)
    expect(run(remat, "compile", bad_op), 1, "node '/Elu'",
           "(Elu, opset 13)", "unsupported op 'Elu'",
           "supported: Add,")

    # --ranks needs a dynamic batch and a global batch it divides.
    expect(run(remat, "compile", good, "--ranks", "2"), 2,
           "--ranks 2 needs the batch dimension of input 'x' dynamic",
           "dynamic_axes={'x': {0: 'batch'}}")
    dynamic = os.path.join(work, "dynamic.onnx")
    export_onnx.export("classifier", dynamic, batch=4, dynamic_batch=True)
    expect(run(remat, "compile", dynamic, "--ranks", "3", "--input-shape",
               "x=4,4"), 2,
           "--ranks 3 does not divide the global batch of --input-shape x=4,4")

    # A 1-D convolution: the node, its op type and opset, and why.
    conv1d = os.path.join(work, "conv1d.onnx")
    torch.onnx.export(torch.nn.Conv1d(2, 3, 3), torch.randn(2, 2, 8), conv1d,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, opset_version=17)
    expect(run(remat, "compile", conv1d), 1, "(Conv, opset 17)",
           "has shape [2,2,8]", "supports 2-D Conv only")

    old = os.path.join(work, "opset12.onnx")
    export_onnx.export("classifier", old, batch=4, opset=12)
    expect(run(remat, "compile", old), 1, "opset 12 is not supported",
           "13 to 17")

    dynamic = os.path.join(work, "dynamic.onnx")
    export_onnx.export("classifier", dynamic, batch=4, dynamic_batch=True)
    expect(run(remat, "compile", dynamic), 1, "input 'x'",
           "dynamic dimension 0 ('batch')", "--input-shape x=N,4")
    expect(run(remat, "compile", dynamic, "--input-shape", "x=4,4",
               "--emit=graph", "-o", os.devnull), 0)
    expect(run(remat, "compile", dynamic, "--input-shape", "x=4,5"), 2,
           "dimension 1 of input 'x' is fixed at 4")
    expect(run(remat, "compile", dynamic, "--input-shape", "z=4,4"), 2,
           "the model has no input 'z'")
    expect(run(remat, "compile", dynamic, "--input-shape", "x=4,-1"), 2,
           "--input-shape needs NAME=D0,D1,...")

    no_output = os.path.join(work, "no_output.onnx")
    with open(no_output, "wb") as f:
        f.write(model_without_output())
    expect(run(remat, "compile", no_output), 1, "no_output.onnx",
           "no output")

    expect(run(remat, "compile", good, "--loss", "hinge"), 2,
           "unknown loss 'hinge'", "available: cross_entropy, mse")
    expect(run(remat, "train", good, "--optimizer", "adam"), 2,
           "did you mean 'adamw'")
    expect(run(remat, "compile", good, "--set", "batch=2"), 2,
           "--preset and --set configure JSON models")
    expect(run(remat, "compile", os.path.join(ROOT, "models", "seed_mlp.json"),
               "--loss", "mse"), 2, "are for ONNX models")
    expect(run(remat, "compile", good, "--emit=plan"), 1, "needs -o FILE")
    missing = os.path.join(work, "missing.onnx")
    expect(run(remat, "compile", missing), 1, "missing.onnx",
           "cannot open")

    # A transformer's buffers: the float mask (-inf above the diagonal)
    # cannot be trained, so it is frozen without a flag, and said so in the
    # output and the report; --frozen names float initializers only.
    lm = os.path.join(work, "lm.onnx")
    export_onnx.export("transformer", lm, batch=2, width=8, classes=10,
                       side=4)
    lm_plan = os.path.join(work, "lm.plan")
    lm_report = os.path.join(work, "lm.json")
    expect(run(remat, "compile", lm, "--emit=plan", "-o", lm_plan,
               "--report", lm_report), 0,
           "not trained (frozen): 'mask' (holds inf or NaN")
    with open(lm_report) as f:
        frozen = json.load(f).get("frozen")
    if not frozen or "inf" not in frozen.get("mask", "") or len(frozen) != 1:
        raise SystemExit(f"FAIL: the report's frozen is {frozen!r}, want the "
                         f"mask alone")
    with open(lm_plan) as f:
        plan = json.load(f)
    if any(b["name"] == "mask" and b["role"] == "param"
           for b in plan["buffers"]):
        raise SystemExit("FAIL: the mask is a trained parameter of the plan")
    expect(run(remat, "compile", lm, "--frozen", "mask", "--emit=plan",
               "-o", lm_plan, "--report", lm_report), 0,
           "not trained (frozen): 'mask' (--frozen)")
    # A float initializer read only where no gradient flows (its Shape) is
    # frozen too; the one the MatMul reads is trained.
    import onnx
    from onnx import helper, numpy_helper
    import numpy as np
    shaped = os.path.join(work, "shape_only.onnx")
    rng = np.random.default_rng(0)
    graph = helper.make_graph(
        [helper.make_node("Shape", ["ref"], ["s"]),
         helper.make_node("MatMul", ["x", "W"], ["h"]),
         helper.make_node("Reshape", ["h", "s"], ["y"])],
        "shape_only",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 4])],
        [numpy_helper.from_array(
            rng.standard_normal((8, 4)).astype(np.float32), "W"),
         numpy_helper.from_array(
            rng.standard_normal((2, 4)).astype(np.float32), "ref")])
    onnx.save(helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)]), shaped)
    r = run(remat, "compile", shaped, "--loss", "mse", "--emit=plan", "-o",
            lm_plan, "--report", lm_report)
    expect(r, 0, "not trained (frozen): 'ref' (read only where no gradient "
           "flows (Shape))")
    if "'W'" in r.stderr:
        raise SystemExit(f"FAIL: W is frozen: {r.stderr}")
    expect(run(remat, "compile", lm, "--frozen", "mask,maks"), 2,
           "--frozen maks: the model has no initializer 'maks'",
           "did you mean 'mask'")
    expect(run(remat, "compile", lm, "--frozen", "positions"), 2,
           "initializer 'positions' is INT64, which is never trained")
    expect(run(remat, "compile", lm, "--frozen", ""), 2,
           "--frozen needs NAME[,NAME...]")

    # Dropout in training mode keeps its rate (and trains); at ratio 0 it
    # is the identity (the parity tests).
    dropped = os.path.join(work, "lm_dropout.onnx")
    export_onnx.export("transformer", dropped, batch=2, width=8, classes=10,
                       side=4, dropout=0.25)
    graph = os.path.join(work, "lm_dropout.mlir")
    expect(run(remat, "compile", dropped, "--frozen", "mask", "--emit=graph",
               "-o", graph), 0)
    with open(graph) as f:
        rates = f.read().count("graph.dropout")
    expect(run(remat, "compile", lm, "--frozen", "mask", "--emit=graph",
               "-o", graph), 0)
    with open(graph) as f:
        without = f.read().count("graph.dropout")
    # Per block: attention weights, the attention output, the MLP output.
    if rates != 6 or without != 0:
        raise SystemExit(f"FAIL: {rates} dropout ops at rate 0.25 (expected "
                         f"6), {without} at rate 0 (expected 0)")
    print(f"ok: {rates} dropout ops at rate 0.25, none at rate 0")
    expect(run(remat, "train", dropped, "--frozen", "mask", "--steps", "2"),
           0)

    class WideNorm(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = torch.nn.LayerNorm((3, 4))

        def forward(self, x):
            return self.norm(x)

    wide = os.path.join(work, "wide_norm.onnx")
    torch.onnx.export(WideNorm(), torch.randn(2, 3, 4), wide,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, opset_version=17)
    expect(run(remat, "compile", wide), 1, "(LayerNormalization, opset 17)",
           "normalization from axis -2 is not supported")
    # BatchNormalization in inference mode and Resize other than nearest.
    class EvalNorm(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 3)
            self.bn = torch.nn.BatchNorm1d(3)

        def forward(self, x):
            return self.bn(self.fc(x))

    eval_bn = os.path.join(work, "eval_bn.onnx")
    torch.onnx.export(EvalNorm().eval(), torch.randn(2, 4), eval_bn,
                      training=torch.onnx.TrainingMode.PRESERVE,
                      do_constant_folding=False, opset_version=17)
    expect(run(remat, "compile", eval_bn), 1, "node '/bn/BatchNormalization'",
           "(BatchNormalization, opset 17)", "inference mode",
           "TrainingMode.TRAINING")
    # The traces of an eval-mode export that remat can still see: batch
    # norms folded into convolutions (weights named onnx::Conv_N), and a
    # Dropout left in inference mode. A training-mode export warns of
    # neither.
    class ConvNorm(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3)
            self.bn = torch.nn.BatchNorm2d(4)

        def forward(self, x):
            return self.bn(self.conv(x)).mean(dim=(2, 3))

    folded = os.path.join(work, "folded.onnx")
    torch.onnx.export(ConvNorm().eval(), torch.randn(2, 3, 8, 8), folded,
                      opset_version=17)
    expect(run(remat, "compile", folded, "--loss", "mse", "--emit=graph",
               "-o", os.devnull), 0, "1 convolution weight(s) have names "
           "the exporter made ('onnx::Conv_", "Eval-mode exports")
    kept = os.path.join(work, "kept.onnx")
    torch.onnx.export(ConvNorm().train(), torch.randn(2, 3, 8, 8), kept,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, opset_version=17)
    r = run(remat, "compile", kept, "--loss", "mse", "--emit=graph", "-o",
            os.devnull)
    expect(r, 0)
    if "exporter made" in r.stderr:
        raise SystemExit(f"FAIL: a training-mode export warned: {r.stderr}")
    import onnx
    from onnx import helper, numpy_helper
    import numpy as np
    dropped = os.path.join(work, "eval_dropout.onnx")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["h"]),
         helper.make_node("Dropout", ["h", "ratio", "mode"], ["y"],
                          name="drop")],
        "eval_dropout",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 4])],
        [numpy_helper.from_array(np.ones((8, 4), np.float32), "W"),
         numpy_helper.from_array(np.array(0.3, np.float32), "ratio"),
         numpy_helper.from_array(np.array(False), "mode")])
    onnx.save(helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)]), dropped)
    expect(run(remat, "compile", dropped, "--loss", "mse", "--emit=graph",
               "-o", os.devnull), 0, "node 'drop' (Dropout, ratio 0.3",
           "is in inference mode, so the step runs without it")

    class Resized(torch.nn.Module):
        def __init__(self, mode, size=None):
            super().__init__()
            self.fc = torch.nn.Linear(4, 4)
            self.mode, self.size = mode, size

        def forward(self, x):
            h = self.fc(x).reshape(-1, 1, 2, 2)
            if self.size:
                h = torch.nn.functional.interpolate(h, size=self.size,
                                                    mode=self.mode)
            else:
                h = torch.nn.functional.interpolate(h, scale_factor=2,
                                                    mode=self.mode)
            return h.flatten(1)

    def resized(name, *args):
        path = os.path.join(work, name + ".onnx")
        torch.onnx.export(Resized(*args), torch.randn(2, 4), path,
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, opset_version=13)
        return path

    # Bilinear resizing compiles (to a size of 1 too: the exporter writes
    # half_pixel there); bicubic, and a size of 1 under pytorch_half_pixel
    # (which ONNX and torch place differently), are refused.
    expect(run(remat, "compile", resized("bilinear", "bilinear"), "--emit",
               "graph", "-o", os.devnull), 0)
    expect(run(remat, "compile", resized("bicubic", "bicubic")), 1,
           "(Resize, opset 13)",
           "mode 'cubic' is not supported ('nearest' or 'linear')")
    to_one = resized("to_one", "bilinear", (1, 2))
    expect(run(remat, "compile", to_one, "--emit", "graph", "-o",
               os.devnull), 0)
    model = onnx.load(to_one)
    for node in model.graph.node:
        for a in node.attribute:
            if a.name == "coordinate_transformation_mode":
                a.s = b"pytorch_half_pixel"
    onnx.save(model, to_one)
    expect(run(remat, "compile", to_one), 1, "(Resize, opset 13)",
           "mode 'linear' to a size of 1 with 'pytorch_half_pixel' is not "
           "supported")
    return 0


def expect_loss_halves(r, log, start, end):
    """`remat train` (result r) ran 200 steps, logged to `log`: the mean loss
    of the last `end` steps is below half the mean of the first `start`."""
    if r.returncode != 0:
        raise SystemExit(f"FAIL: remat train exit {r.returncode}:\n{r.stderr}")
    with open(log) as f:
        losses = [json.loads(line)["loss"] for line in f]
    first = sum(losses[:start]) / start
    last = sum(losses[-end:]) / end
    print(f"loss {first:.4f} averaged over steps 1-{start}, {last:.4f} over "
          f"steps {201 - end}-200")
    if len(losses) != 200 or not last < first / 2:
        raise SystemExit("FAIL: the loss did not fall below half its start")
    return 0


def train_falls(remat, work):
    import export_onnx
    model = os.path.join(work, "classifier.onnx")
    export_onnx.export("classifier", model, batch=64, width=32, classes=4,
                       side=16)
    log = os.path.join(work, "log.jsonl")
    r = run(remat, "train", model, "--steps", "200", "--optimizer", "adamw",
            "--lr", "0.01", "--log", log)
    return expect_loss_halves(r, log, start=1, end=10)


def lm_train_falls(remat, work):
    import export_onnx
    model = os.path.join(work, "lm.onnx")
    export_onnx.export("transformer", model, batch=16, width=32, classes=16,
                       side=8)
    log = os.path.join(work, "log.jsonl")
    r = run(remat, "train", model, "--frozen", "mask", "--steps", "200",
            "--optimizer", "adamw", "--lr", "0.01", "--log", log)
    return expect_loss_halves(r, log, start=1, end=10)


def resnet18_batches(work):
    """torchvision's resnet18 exported at batch 4, 32 x 32, and 4 batches of
    random images and labels to cycle: (model path, --data arguments), or
    None (having said SKIP) without torchvision."""
    import numpy as np
    import export_onnx
    model = os.path.join(work, "resnet18.onnx")
    try:
        export_onnx.export("resnet18", model, batch=4, classes=10, side=32)
    except ImportError as e:
        print(f"SKIP: {e}")
        return None
    rng = np.random.default_rng(7)
    x = rng.standard_normal((16, 3, 32, 32)).astype(np.float32)
    labels = rng.integers(0, 10, size=16).astype(np.int64)
    np.save(os.path.join(work, "x.npy"), x)
    np.save(os.path.join(work, "labels.npy"), labels)
    return model, ["--data", "x=" + os.path.join(work, "x.npy"),
                   "--data", "labels=" + os.path.join(work, "labels.npy")]


def missing_support(remat):
    """SKIP (having said why) without PyTorch, export_onnx or ONNX support
    in this remat; else None."""
    try:
        import torch  # noqa: F401
        import export_onnx  # noqa: F401
    except ImportError as e:
        print(f"SKIP: {e}")
        return SKIP
    r = run(remat, "compile", "missing.onnx")
    if "no ONNX support" in r.stderr:
        print("SKIP: " + r.stderr.strip())
        return SKIP
    return None


def resnet18_train_falls(remat, work):
    """torchvision's resnet18 (BatchNorm in training mode) on 32 x 32
    images: 4 fixed batches of 4 random images with random labels, fed with
    --data and cycled; 200 steps of adamw memorize them."""
    setup = resnet18_batches(work)
    if setup is None:
        return SKIP
    model, data = setup
    log = os.path.join(work, "log.jsonl")
    r = run(remat, "train", model, "--steps", "200", "--optimizer", "adamw",
            "--lr", "0.001", *data, "--log", log)
    # One pass over the 4 batches at the start and at the end.
    return expect_loss_halves(r, log, start=4, end=4)


def weights_memory(remat, work):
    """remat run reads an ONNX plan's weights file a tensor at a time into
    the arena: the forum's MLP at width 2048 (33.6 MB of weights, the
    largest tensor 16.8 MB) grows by less than half the file beside its
    arena and workspace, and within the report's runtime allowance."""
    import export_onnx
    model = os.path.join(work, "forum.onnx")
    export_onnx.export("forum", model, batch=8, width=2048)
    plan = os.path.join(work, "forum.plan")
    report = os.path.join(work, "forum.json")
    r = run(remat, "compile", model, "--emit=plan", "-o", plan, "--report",
            report)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: remat compile exit {r.returncode}:\n"
                         f"{r.stderr}")
    log = os.path.join(work, "log.jsonl")
    r = run(remat, "run", plan, "--steps", "1", "--log", log)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: remat run exit {r.returncode}:\n{r.stderr}")
    with open(report) as f:
        rep = json.load(f)
    with open(log) as f:
        growth = json.loads(f.readline())["rss_growth_bytes"]
    weights = os.path.getsize(os.path.join(work, "forum.weights.safetensors"))
    beside = growth - rep["step_bytes"]
    print(f"arena + workspace {rep['step_bytes']} B, RSS growth {growth} B: "
          f"{beside} B beside them; weights file {weights} B, runtime "
          f"allowance {rep['runtime_allowance_bytes']} B")
    if beside >= weights // 2:
        raise SystemExit("FAIL: the run held half the weights file or more "
                         "beside the arena")
    if beside > rep["runtime_allowance_bytes"]:
        raise SystemExit("FAIL: the run grew beyond the runtime allowance")
    return 0


def running_stats(remat, work):
    import copy

    import numpy as np
    import torch
    import torch.nn.functional as F

    import export_onnx
    from torch_parity import read_safetensors, relative_error

    model = os.path.join(work, "norm.onnx")
    module = export_onnx.export("norm", model, batch=16, width=16, classes=4,
                                side=4)
    plan = os.path.join(work, "norm.plan")
    r = run(remat, "compile", model, "--emit=plan", "-o", plan)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: remat compile exit {r.returncode}:\n"
                         f"{r.stderr}")
    rng = np.random.default_rng(7)
    x = rng.standard_normal((16, 4)).astype(np.float32)
    labels = rng.integers(0, 4, size=(16,)).astype(np.int64)
    np.save(os.path.join(work, "x.npy"), x)
    np.save(os.path.join(work, "labels.npy"), labels)
    data = ["--data", "x=" + os.path.join(work, "x.npy"),
            "--data", "labels=" + os.path.join(work, "labels.npy")]

    def remat_run(steps, save, *extra):
        r = run(remat, "run", plan, "--steps", str(steps), "--save", save,
                *data, *extra)
        if r.returncode != 0:
            raise SystemExit(f"FAIL: remat run exit {r.returncode}:\n"
                             f"{r.stderr}")
        return read_safetensors(save)

    s3 = remat_run(3, os.path.join(work, "s3.safetensors"))
    stats = [f"bn{k}.running_{s}" for k in (1, 2) for s in ("mean", "var")]
    missing = [name for name in stats if name not in s3]
    if missing:
        raise SystemExit(f"FAIL: --save holds no {missing} (it has "
                         f"{sorted(s3)})")

    # PyTorch: 3 steps of SGD (lr 0.01, remat's default) on the same batch.
    def torch_steps(dtype):
        m = copy.deepcopy(module).to(dtype)
        opt = torch.optim.SGD(m.parameters(), lr=0.01)
        for _ in range(3):
            opt.zero_grad()
            F.cross_entropy(m(torch.from_numpy(x).to(dtype)),
                            torch.from_numpy(labels)).backward()
            opt.step()
        return {k: v.detach().to(torch.float64).numpy()
                for k, v in m.state_dict().items()
                if not k.endswith("num_batches_tracked")}

    t64, t32 = torch_steps(torch.float64), torch_steps(torch.float32)
    failed = []
    for name in sorted(t64):
        err = relative_error(s3[name], t64[name])
        tolerance = max(1e-4, 4 * relative_error(t32[name], t64[name]))
        print(f"{name:<20} after 3 steps: relative error {err:.3e} "
              f"(tolerance {tolerance:.3e})")
        if err > tolerance:
            failed.append(name)
    if failed:
        raise SystemExit(f"FAIL: {failed} differ from PyTorch")

    # Resuming from --save continues the same run: 2 steps, then 1 step
    # from the saved parameters and running statistics, equals 3 steps.
    s2 = os.path.join(work, "s2.safetensors")
    remat_run(2, s2)
    resumed = remat_run(1, os.path.join(work, "s21.safetensors"),
                        "--weights", s2)
    for name in sorted(s3):
        if not np.array_equal(resumed[name], s3[name]):
            raise SystemExit(f"FAIL: '{name}' after 2 + 1 resumed steps "
                             f"differs from 3 steps")
    initial = read_safetensors(os.path.join(work, "norm.weights.safetensors"))
    for name in stats:
        if np.array_equal(initial[name], s3[name]):
            raise SystemExit(f"FAIL: '{name}' did not change in 3 steps")
    print(f"OK: {len(t64)} tensors match PyTorch after 3 steps; the running "
          f"statistics change, are saved, and resume bitwise")
    return 0


def fuzz_found(remat, work):
    """Mutants that tests/fuzz/fuzz_onnx.py found to crash remat or to give
    an unclear error, each now one clear error naming the file."""
    try:
        import onnx
    except ImportError as e:
        print(f"SKIP: {e} (needs python3-onnx)")
        return SKIP
    import export_onnx

    good = os.path.join(work, "classifier.onnx")
    export_onnx.export("classifier", good, batch=4)

    def mutant(name, change, data=None):
        m = onnx.load(good)
        change(m)
        path = os.path.join(work, name)
        blob = m.SerializeToString()
        with open(path, "wb") as f:
            f.write(data(blob) if data else blob)
        return path

    def external(offset):
        def change(m):
            t = m.graph.initializer[0]
            t.ClearField("raw_data")
            t.data_location = onnx.TensorProto.EXTERNAL
            for k, v in (("location", "w.bin"), ("offset", offset)):
                e = t.external_data.add()
                e.key, e.value = k, v
        return change

    # External-data fields are parsed and checked: a bad offset, a file
    # that ends before it.
    with open(os.path.join(work, "w.bin"), "wb") as f:
        f.write(b"\0" * 64)
    expect(run(remat, "compile", mutant("offset.onnx", external("abc"))), 1,
           "offset.onnx", "has offset 'abc', not a non-negative integer")
    expect(run(remat, "compile", mutant("short.onnx", external("0"))), 1,
           "short.onnx", "w.bin' ends before offset 0")

    def dims(values):
        def change(m):
            t = m.graph.initializer[0]
            del t.dims[:]
            t.dims.extend(values)
        return change

    # An initializer's dims are checked against its data before anything is
    # allocated.
    expect(run(remat, "compile", mutant("huge.onnx", dims([2**40, 4]))), 1,
           "huge.onnx", "raw data of", "expected 17592186044416")
    expect(run(remat, "compile", mutant("overflow.onnx",
                                        dims([3, 2**62]))), 1,
           "overflow.onnx", "product overflows")

    def huge_input(m):
        for d in m.graph.input[0].type.tensor_type.shape.dim:
            d.dim_value = 2**40
        m.graph.output[0].type.tensor_type.shape.dim[0].dim_value = 2**40
    expect(run(remat, "compile", mutant("input.onnx", huge_input)), 1,
           "input.onnx", "input 'x'", "more than 2^62")

    # A huge input dim reaching a shape computation (fuzzing the zoo's
    # swin): data folded at import stays bounded (a mask of 2^40 elements
    # is refused, not allocated), and a slice of a huge computed tensor
    # needs no memory of the dim's size (2 GiB of address space suffice).
    from onnx import TensorProto, helper, numpy_helper
    import numpy as np

    def graph_model(name, nodes, inputs, outputs, inits=()):
        path = os.path.join(work, name)
        onnx.save(helper.make_model(
            helper.make_graph(nodes, name, inputs, outputs, list(inits)),
            opset_imports=[helper.make_opsetid("", 17)]), path)
        return path
    shape = numpy_helper.from_array(np.array([2**20, 2**20], np.int64),
                                    "shape")
    mask = graph_model(
        "mask.onnx",
        [helper.make_node("ConstantOfShape", ["shape"], ["zeros"]),
         helper.make_node("Add", ["x", "zeros"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                       [2**20, 2**20])], [shape])
    expect(run(remat, "compile", mask), 1, "mask.onnx",
           "(ConstantOfShape, opset 17)", "more than 2^24 elements")
    bounds = [numpy_helper.from_array(np.array([v], np.int64), n)
              for n, v in (("b", 0), ("e", 4), ("a", 1))]
    sliced = graph_model(
        "sliced.onnx", [helper.make_node("Slice", ["x", "b", "e", "a"],
                                         ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2**31])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        bounds)
    r = subprocess.run([remat, "compile", sliced, "--loss", "mse",
                        "--emit=graph", "-o", os.devnull],
                       capture_output=True, text=True,
                       preexec_fn=lambda: resource.setrlimit(
                           resource.RLIMIT_AS, (2 << 30, 2 << 30)))
    expect(r, 0)

    # A plan far past the machine's memory: the run refuses it, with an
    # error that names the model (not remat train's temporary plan).
    def big_batch(m):
        m.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 2**34
        m.graph.output[0].type.tensor_type.shape.dim[0].dim_value = 2**34
    expect(run(remat, "train", mutant("big.onnx", big_batch), "--steps", "1"),
           1, "big.onnx", "more than this machine's memory")

    def undefined(m):
        m.graph.input[0].type.tensor_type.elem_type = 0
    expect(run(remat, "compile", mutant("undefined.onnx", undefined)), 1,
           "undefined.onnx", "input 'x' is UNDEFINED")

    # A name that is not valid UTF-8 is an importer error.
    def placeholder(m):
        m.graph.node[0].name = "/ZZZZ"
    expect(run(remat, "compile", mutant(
        "utf8.onnx", placeholder,
        lambda b: b.replace(b"/ZZZZ", b"/\x86ZZZ"))), 1,
        "utf8.onnx", "node 0 is not valid UTF-8")
    return 0


CHECKS = {"errors": errors, "train-falls": train_falls,
          "lm-train-falls": lm_train_falls, "running-stats": running_stats,
          "resnet18-train-falls": resnet18_train_falls,
          "fuzz-found": fuzz_found, "weights-memory": weights_memory}


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in CHECKS:
        raise SystemExit(__doc__)
    remat, check = sys.argv[1], sys.argv[2]
    if missing_support(remat):
        return SKIP
    with tempfile.TemporaryDirectory(prefix="remat-onnx-cli-") as work:
        return CHECKS[check](remat, work)


if __name__ == "__main__":
    sys.exit(main())

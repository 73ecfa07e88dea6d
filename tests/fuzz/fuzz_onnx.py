#!/usr/bin/env python3
"""Mutation fuzzer for remat's ONNX importer (docs/onnx.md#fuzzing).

Exports small seed models with tools/export_onnx.py (InstanceNorm and
GroupNorm, Einsum among them) and five models of the zoo
(tools/zoo_models.py: vit, swin, gpt2_like, mobilenet_v3_small and the
masked_fill attention pattern; PyTorch and torchvision), mutates
them with the onnx Python module (python3-onnx) in these classes:

  flip       1 to 16 random bytes of the file changed
  truncate   the file cut short (anywhere, or inside its last field)
  dtype      an initializer's data_type (with its data kept, or converted
             consistently), an input's or output's elem_type, a Cast's `to`
  dangling   a node input, a graph output or a node output renamed to a
             name nothing defines; an initializer or input removed
  huge       an input, output, value_info or initializer dimension set to
             2^31, 2^40, 2^62, 2^63-1, 0 or a negative number; an extra
             huge dimension; a huge Reshape target or attribute value
  structure  graph outputs removed, duplicate node names, a cycle (a node
             reads a later node's output), nodes reordered, removed or
             duplicated, the opset or ir_version changed, an attribute's
             type or value changed, an unknown attribute or op, a node's
             domain changed, duplicate initializers
  external   an initializer moved to external data with a bad location,
             offset or length (outside the folder, missing, not a number)

runs `remat compile MODEL --emit=plan` on each mutant with a timeout and,
for those that compile, `remat train MODEL --steps 1`, and classes each
outcome (the judging is tests/fuzz/run_target.py's, made stricter):

  error    exit 1 or 2 with a short message (at most a few lines) that
           names the file and is no "internal error"
  ok       compiled and trained one step (exit 0)
  unclear  exit 1 or 2 whose message does not name the file, is empty,
           long, or says "internal error" or "std::"
  crash    a signal, an exit code >= 3, a sanitizer report, "terminate
           called", an escaping std::bad_alloc
  hang     the timeout (default 20 s) expired
  resource the memory guard stopped the run (huge sizes must be refused
           before anything is allocated, so this is a failure too)

It prints the outcomes per class, and the errors per class by the check
that refused the mutant (parse, checker, inference: libonnx's; importer:
remat's; train: the training step).

Every failing input is saved in OUT_DIR (one per distinct signature, with
the mutation and stderr next to it in .stderr) to reproduce:
`remat compile OUT_DIR/crash-<hash>.onnx`. Exit 0 when nothing failed,
1 otherwise.

  tests/fuzz/fuzz_onnx.py --binary build/tools/remat/remat --count 1000 \\
      --out /tmp/fuzz-onnx --seed 1

Needs /usr/bin/python3 with torch (python3-torch) and onnx (python3-onnx);
exits 77 without them.
"""

import argparse
import collections
import os
import random
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))  # export_onnx
import run_target  # noqa: E402  (run_one, classify, signature, save_finding)

SKIP = 77
CLASSES = ["flip", "truncate", "dtype", "dangling", "huge", "structure",
           "external"]

# Seed models: (file stem, export_onnx model, export kwargs, remat flags).
SEEDS = [
    ("classifier", "classifier", dict(batch=2, width=8, side=4, opset=17),
     []),
    ("cnn", "cnn", dict(batch=2, width=4, side=12, opset=13), []),
    ("norm", "norm", dict(batch=2, width=8, side=4, opset=17), []),
    ("transformer", "transformer",
     dict(batch=2, width=8, classes=8, side=4, opset=17), ["--frozen", "mask"]),
    ("mixed", "mixed", dict(batch=2, width=8, side=4, opset=15,
                            dynamic_batch=True), ["--input-shape", "x=2,4"]),
    ("groupnorm", "groupnorm", dict(batch=2, width=8, side=6, opset=17), []),
    ("einsum", "einsum", dict(batch=2, width=8, side=4, opset=17), []),
    # Models of the zoo (tools/zoo_models.py), at batch 2: attention with a
    # mask buffer, Gather by constant indices, the shifted-window mask's
    # folded ScatterND/Range/Not, HardSwish and squeeze-excitation.
    ("vit", "zoo:vit", dict(batch=2), []),
    ("swin", "zoo:swin", dict(batch=2), []),
    ("gpt2_like", "zoo:gpt2_like", dict(batch=2), []),
    ("mobilenet_v3_small", "zoo:mobilenet_v3_small", dict(batch=2), []),
    # nanoGPT's attention: Where by a constant mask, fused attention.
    ("masked_fill", "zoo:attention_masked_fill", dict(batch=2), []),
]

HUGE = [2**31, 2**32 + 1, 2**40, 2**62, 2**63 - 1, -1, -2, -2**63, 0]
ELEM_TYPES = [0, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 14, 16, 17, 99, -1]


def export_seeds(folder, names=None):
    """Exports the seed models; returns [(name, bytes, flags)]."""
    import warnings
    warnings.filterwarnings("ignore")   # torch.onnx's export notes
    import export_onnx
    seeds = []
    for stem, model, kwargs, flags in SEEDS:
        if names and stem not in names:
            continue
        path = os.path.join(folder, stem + ".onnx")
        if model.startswith("zoo:"):
            name = model[len("zoo:"):]
            try:
                import zoo_models
                zoo_models.export(name, path, zoo_models.build(name),
                                  kwargs["batch"])
            except ImportError as e:  # no torchvision: the other seeds
                print(f"fuzz_onnx: seed {stem} left out: {e}")
                continue
        else:
            export_onnx.export(model, path, **kwargs)
        with open(path, "rb") as f:
            seeds.append((stem, f.read(), flags))
    return seeds


class OnnxMutator:
    """Mutations of a serialized ModelProto; each returns (bytes, detail)."""

    def __init__(self, rng):
        import onnx
        self.onnx = onnx
        self.rng = rng

    # Helpers -------------------------------------------------------------

    def load(self, data):
        m = self.onnx.ModelProto()
        m.ParseFromString(data)
        return m

    def defined_names(self, m):
        g = m.graph
        names = [v.name for v in g.input] + [t.name for t in g.initializer]
        for n in g.node:
            names += [o for o in n.output if o]
        return names

    def pick(self, seq):
        return self.rng.choice(list(seq)) if len(seq) else None

    def nodes_with_attributes(self, m):
        return [n for n in m.graph.node if len(n.attribute)]

    # Classes ---------------------------------------------------------------

    def flip(self, data):
        r = self.rng
        data = bytearray(data)
        k = r.choice([1, 1, 2, 4, 8, 16])
        for _ in range(k):
            i = r.randrange(len(data))
            data[i] = r.choice([data[i] ^ (1 << r.randrange(8)),
                                r.randrange(256), 0xFF, 0x00])
        return bytes(data), "flip %d" % k

    def truncate(self, data):
        r = self.rng
        if r.random() < 0.3:
            n = len(data) - r.randint(1, 16)   # inside the last field
        else:
            n = r.randrange(len(data))
        return data[:max(n, 0)], "truncate to %d of %d" % (n, len(data))

    def dtype(self, data):
        r = self.rng
        m = self.load(data)
        g = m.graph
        choice = r.randrange(5)
        t = self.pick(g.initializer)
        if choice == 0 and t is not None:
            old = t.data_type
            t.data_type = r.choice(ELEM_TYPES)
            detail = "initializer %s data_type %d -> %d (data kept)" % (
                t.name, old, t.data_type)
        elif choice == 1 and t is not None:
            from onnx import numpy_helper
            import numpy as np
            arr = numpy_helper.to_array(t)
            to = r.choice([np.float64, np.float16, np.int64, np.int32,
                           np.int8, np.bool_, np.uint8])
            new = numpy_helper.from_array(arr.astype(to), t.name)
            t.CopyFrom(new)
            detail = "initializer %s converted to %s" % (t.name, to.__name__)
        elif choice == 2 and len(g.output):
            o = self.pick(g.output)
            o.type.tensor_type.elem_type = r.choice(ELEM_TYPES)
            detail = "output %s elem_type -> %d" % (
                o.name, o.type.tensor_type.elem_type)
        elif choice == 3:
            casts = [a for n in g.node if n.op_type == "Cast"
                     for a in n.attribute if a.name == "to"]
            if casts:
                a = self.pick(casts)
                a.i = r.choice(ELEM_TYPES)
                detail = "Cast to -> %d" % a.i
            else:
                i = self.pick(g.input)
                i.type.tensor_type.elem_type = r.choice(ELEM_TYPES)
                detail = "input %s elem_type -> %d" % (
                    i.name, i.type.tensor_type.elem_type)
        else:
            i = self.pick(g.input)
            i.type.tensor_type.elem_type = r.choice(ELEM_TYPES)
            detail = "input %s elem_type -> %d" % (
                i.name, i.type.tensor_type.elem_type)
        return m.SerializeToString(), detail

    def dangling(self, data):
        r = self.rng
        m = self.load(data)
        g = m.graph
        choice = r.randrange(5)
        ghost = r.choice(["ghost", "", "x ", "/fc1/Gemm_output_9", "y"]) \
            if r.random() < 0.3 else "ghost%d" % r.randrange(100)
        if choice == 0:
            n = self.pick([n for n in g.node if len(n.input)])
            k = r.randrange(len(n.input))
            detail = "node %s input %d %r -> %r" % (n.name, k, n.input[k],
                                                    ghost)
            n.input[k] = ghost
        elif choice == 1 and len(g.output):
            o = self.pick(g.output)
            detail = "graph output %r -> %r" % (o.name, ghost)
            o.name = ghost
        elif choice == 2:
            n = self.pick([n for n in g.node if len(n.output)])
            k = r.randrange(len(n.output))
            detail = "node %s output %d %r -> %r" % (n.name, k, n.output[k],
                                                     ghost)
            n.output[k] = ghost
        elif choice == 3 and len(g.initializer):
            k = r.randrange(len(g.initializer))
            detail = "initializer %s removed" % g.initializer[k].name
            del g.initializer[k]
        else:
            k = r.randrange(len(g.input))
            detail = "input %s removed" % g.input[k].name
            del g.input[k]
        return m.SerializeToString(), detail

    def set_dim(self, shape, value):
        """Sets one dim of a TensorShapeProto (or appends one)."""
        r = self.rng
        if len(shape.dim) == 0 or r.random() < 0.15:
            d = shape.dim.add()
            where = "new dim"
        else:
            k = r.randrange(len(shape.dim))
            d = shape.dim[k]
            where = "dim %d" % k
        d.dim_value = value
        return where

    def huge(self, data):
        r = self.rng
        m = self.load(data)
        g = m.graph
        value = r.choice(HUGE)
        choice = r.randrange(6)
        if choice == 0:
            i = self.pick(g.input)
            where = self.set_dim(i.type.tensor_type.shape, value)
            detail = "input %s %s = %d" % (i.name, where, value)
        elif choice == 1 and len(g.initializer):
            t = self.pick(g.initializer)
            if len(t.dims) == 0 or r.random() < 0.15:
                t.dims.append(value)
                where = "new dim"
            else:
                k = r.randrange(len(t.dims))
                t.dims[k] = value
                where = "dim %d" % k
            if r.random() < 0.3:
                t.ClearField("raw_data")      # a size with no data at all
                where += ", no data"
            detail = "initializer %s %s = %d" % (t.name, where, value)
        elif choice == 2 and (len(g.value_info) or len(g.output)):
            vi = self.pick(list(g.value_info) + list(g.output))
            where = self.set_dim(vi.type.tensor_type.shape, value)
            detail = "value_info/output %s %s = %d" % (vi.name, where, value)
        elif choice == 3:
            # A shape-carrying constant: Reshape's target, a Constant node's
            # value, or an int64 initializer.
            consts = [t for t in g.initializer if t.data_type == 7]
            consts += [a.t for n in g.node if n.op_type == "Constant"
                       for a in n.attribute if a.name == "value" and
                       a.t.data_type == 7]
            if consts:
                from onnx import numpy_helper
                t = self.pick(consts)
                arr = numpy_helper.to_array(t).copy().reshape(-1)
                if arr.size:
                    arr[r.randrange(arr.size)] = value
                new = numpy_helper.from_array(
                    arr.reshape(numpy_helper.to_array(t).shape), t.name)
                t.CopyFrom(new)
                detail = "int64 constant %s element = %d" % (t.name, value)
            else:
                i = self.pick(g.input)
                where = self.set_dim(i.type.tensor_type.shape, value)
                detail = "input %s %s = %d" % (i.name, where, value)
        elif choice == 4:
            nodes = self.nodes_with_attributes(m)
            ints = [a for n in nodes for a in n.attribute
                    if a.type in (2, 7)]          # INT, INTS
            if ints:
                a = self.pick(ints)
                if a.type == 2:
                    a.i = value
                elif len(a.ints):
                    a.ints[r.randrange(len(a.ints))] = value
                else:
                    a.ints.append(value)
                detail = "attribute %s = %d" % (a.name, value)
            else:
                i = self.pick(g.input)
                where = self.set_dim(i.type.tensor_type.shape, value)
                detail = "input %s %s = %d" % (i.name, where, value)
        else:
            # Consistent huge sizes: every dim of an input huge, so the
            # product overflows.
            i = self.pick(g.input)
            for d in i.type.tensor_type.shape.dim:
                d.dim_value = r.choice([2**31, 2**40, 2**62])
            detail = "input %s every dim huge" % i.name
        return m.SerializeToString(), detail

    def structure(self, data):
        r = self.rng
        m = self.load(data)
        g = m.graph
        choice = r.randrange(16)
        nodes = list(g.node)
        if choice == 0:
            del g.output[:]
            detail = "all graph outputs removed"
        elif choice == 1 and len(nodes) >= 2:
            a, b = r.sample(nodes, 2)
            b.name = a.name
            detail = "node %s renamed to %s (duplicate)" % (b.name, a.name)
        elif choice == 2 and len(nodes) >= 2:
            # A cycle: node i reads the output of node j >= i.
            i = r.randrange(len(nodes))
            j = r.randrange(i, len(nodes))
            if len(nodes[i].input) and len(nodes[j].output):
                k = r.randrange(len(nodes[i].input))
                nodes[i].input[k] = nodes[j].output[0]
            detail = "cycle: node %d reads node %d's output" % (i, j)
        elif choice == 3:
            order = list(range(len(nodes)))
            r.shuffle(order)
            copies = [type(nodes[0])() for _ in nodes]
            for c, k in zip(copies, order):
                c.CopyFrom(nodes[k])
            del g.node[:]
            g.node.extend(copies)
            detail = "nodes shuffled"
        elif choice == 4:
            v = r.choice([1, 7, 11, 12, 18, 19, 99, 0, -1, 2**40])
            for s in m.opset_import:
                if s.domain in ("", "ai.onnx"):
                    s.version = v
            detail = "opset -> %d" % v
        elif choice == 5:
            sub = r.randrange(3)
            if sub == 0:
                s = m.opset_import.add()
                s.domain, s.version = "", r.choice([13, 15, 17, 18])
                detail = "second default opset %d" % s.version
            elif sub == 1:
                for s in m.opset_import:
                    s.domain = r.choice(["com.microsoft", "ai.onnx.ml", "x"])
                detail = "opset domain changed"
            else:
                m.ir_version = r.choice([0, 1, 3, 99, -1, 2**40])
                detail = "ir_version -> %d" % m.ir_version
        elif choice in (6, 7, 8):
            with_attrs = self.nodes_with_attributes(m)
            if not with_attrs:
                return self.structure(data)
            n = self.pick(with_attrs)
            a = self.pick(n.attribute)
            sub = r.randrange(5)
            if sub == 0:   # the declared type changes, the value stays
                a.type = r.choice([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13,
                                   99])
                detail = "attribute %s.%s type -> %d" % (n.name, a.name,
                                                         a.type)
            elif sub == 1:  # a consistent value of another type
                import onnx.helper as h
                value = r.choice([1.5, 7, "text", [1, 2, 3], [0.5, 2.0],
                                  ["a", "b"], []])
                try:
                    new = h.make_attribute(a.name, value)
                except (ValueError, TypeError):
                    new = h.make_attribute(a.name, 3)
                a.CopyFrom(new)
                detail = "attribute %s.%s = %r" % (n.name, a.name, value)
            elif sub == 2:  # a duplicate
                b = n.attribute.add()
                b.CopyFrom(a)
                detail = "attribute %s.%s duplicated" % (n.name, a.name)
            elif sub == 3:  # a graph-valued attribute
                import onnx.helper as h
                sub_graph = h.make_graph([], "sub", [], [])
                a.CopyFrom(h.make_attribute(a.name, sub_graph))
                detail = "attribute %s.%s is a graph" % (n.name, a.name)
            else:           # an empty list / a wrong-length list
                if a.type == 7:
                    del a.ints[r.randrange(len(a.ints) + 1):]
                    a.ints.extend([r.choice([0, 1, 5, -3])] *
                                  r.randrange(3))
                else:
                    a.name = r.choice(["bogus", "axes", "perm", "axis",
                                       "kernel_shape", "to"])
                detail = "attribute %s.%s list/name changed" % (n.name,
                                                                a.name)
        elif choice == 9:
            import onnx.helper as h
            n = self.pick(nodes)
            n.attribute.extend([h.make_attribute(
                r.choice(["bogus", "axis", "perm", "alpha"]),
                r.choice([1, 2.5, [3, 1]]))])
            detail = "node %s gets an extra attribute" % n.name
        elif choice == 10:
            n = self.pick(nodes)
            old = n.op_type
            n.op_type = r.choice(["Relu", "Softmax", "MatMul", "Gemm",
                                  "Conv", "Reshape", "Transpose", "Gather",
                                  "Concat", "Slice", "Split", "LeakyRelu",
                                  "Loop", "If", "NoSuchOp", "", "Shape",
                                  "BatchNormalization", "LayerNormalization",
                                  "Resize", "MaxPool", "Constant", "Cast"])
            detail = "node %s op %s -> %s" % (n.name, old, n.op_type)
        elif choice == 11:
            n = self.pick(nodes)
            n.domain = r.choice(["com.microsoft", "ai.onnx.ml", "x.y"])
            detail = "node %s domain -> %s" % (n.name, n.domain)
        elif choice == 12 and len(nodes) >= 2:
            k = r.randrange(len(nodes))
            detail = "node %s removed" % nodes[k].name
            del g.node[k]
        elif choice == 13:
            k = r.randrange(len(nodes))
            g.node.insert(k, nodes[r.randrange(len(nodes))])
            detail = "a node duplicated (its outputs defined twice)"
        elif choice == 14 and len(g.initializer):
            t = self.pick(g.initializer)
            g.initializer.add().CopyFrom(t)
            detail = "initializer %s duplicated" % t.name
        else:
            # Inputs or outputs of a node dropped or added.
            n = self.pick(nodes)
            if len(n.input) and r.random() < 0.5:
                del n.input[r.randrange(len(n.input)):]
                detail = "node %s loses inputs" % n.name
            else:
                n.input.append(self.pick(self.defined_names(m)) or "x")
                n.output.append("extra_out")
                detail = "node %s gets an extra input and output" % n.name
        return m.SerializeToString(), detail

    def external(self, data):
        """Moves a float initializer to external data with bad fields. The
        mutant's folder holds no data file, except for `location` entries
        naming the model file itself."""
        r = self.rng
        m = self.load(data)
        g = m.graph
        t = self.pick(g.initializer)
        t.ClearField("raw_data")
        del t.float_data[:]
        t.data_location = 1   # EXTERNAL
        entries = {}
        entries["location"] = r.choice(
            ["missing.bin", "/etc/passwd", "../../etc/passwd", "", "input.onnx",
             "input.onnx", ".", "a\x00b", "x" * 300])
        if r.random() < 0.7:
            entries["offset"] = r.choice(["0", "-1", "99999999999", "abc",
                                          "", "1e3", str(2**63),
                                          "99999999999999999999"])
        if r.random() < 0.7:
            entries["length"] = r.choice(["0", "4", "-5", "abc", str(2**40),
                                          str(2**64), "16"])
        for k, v in entries.items():
            e = t.external_data.add()
            e.key, e.value = k, v
        detail = "initializer %s external %r" % (t.name, entries)
        return m.SerializeToString(), detail

    def mutate(self, data, cls):
        try:
            out, detail = getattr(self, cls)(data)
        except (IndexError, AttributeError, ValueError, TypeError) as e:
            # A mutation that does not apply to this seed: flip instead.
            out, detail = self.flip(data)
            detail += " (fallback: %s)" % type(e).__name__
        if self.rng.random() < 0.1 and cls not in ("flip", "truncate"):
            # Now and then two mutations of the same class.
            try:
                out, more = getattr(self, cls)(out)
                detail += "; " + more
            except Exception:  # noqa: BLE001 - the first mutant stands
                pass
        return out, detail


# ---------------------------------------------------------------------------
# Running and judging


def judge(rc, stderr, path, timed_out):
    """tests/fuzz/run_target.py's verdict made stricter for ONNX: an error must
    be short, name the file and be no internal error."""
    kind = run_target.classify(rc, stderr, path, timed_out)
    if kind in ("hang", "resource", "crash", "ok"):
        return kind
    if "std::bad_alloc" in stderr or "bad_alloc" in stderr:
        return "crash"
    lines = [l for l in stderr.strip().splitlines() if l.strip()]
    name = os.path.basename(path)
    if not lines or len(lines) > 6 or "internal error" in stderr or \
            "std::" in stderr or not any(name in l for l in lines):
        return "unclear"
    return "error"


def run_mutant(binary, data, flags, timeout, workdir, train, reader=False):
    """compile, then (when it compiled and `train`) train one step; returns
    (outcome, stage, rc, stderr). With `reader`, the binary is
    remat-read-model, which reads the model only."""
    compile_args = (["{input}"] if reader else
                    ["compile", "{input}", "--emit=plan", "-o",
                     "{tmp}/out.plan"]) + flags
    kind, rc, stderr, _ = run_target.run_one(
        binary, compile_args, data, ".onnx", timeout, workdir)
    kind = judge(rc if rc is not None else 0, stderr, "input.onnx",
                 kind == "hang") if kind != "hang" else "hang"
    if kind != "ok" or not train or reader:
        return kind, "compile", rc, stderr
    train_args = ["train", "{input}", "--steps", "1"] + flags
    kind, rc, stderr, _ = run_target.run_one(
        binary, train_args, data, ".onnx", timeout, workdir)
    kind = judge(rc if rc is not None else 0, stderr, "input.onnx",
                 kind == "hang") if kind != "hang" else "hang"
    return kind, "train", rc, stderr


FAILURES = ("crash", "hang", "unclear", "resource")
SOURCES = ["parse", "checker", "inference", "importer", "train"]


def error_source(stage, stderr):
    """Which check refused a mutant: the protobuf parser, the ONNX checker,
    ONNX shape inference, remat's importer (and planner), or the training
    run."""
    if stage == "train":
        return "train"
    if "does not parse" in stderr or "not a valid ONNX model" in stderr:
        return "parse"
    if "ONNX checker" in stderr:
        return "checker"
    if "shape inference" in stderr:
        return "inference"
    return "importer"


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Classes: " + ", ".join(CLASSES) + ". Outcomes: ok, error "
               "(both fine), unclear, crash, hang, resource (failures).")
    p.add_argument("--binary", required=True, help="the remat executable")
    p.add_argument("--count", type=int, default=1000,
                   help="mutants to run (default 1000)")
    p.add_argument("--out", default=None,
                   help="folder for failing inputs (default: a new "
                        "temporary folder)")
    p.add_argument("--seed", type=int, default=None,
                   help="random seed (default: time)")
    p.add_argument("--timeout", type=float, default=20.0,
                   help="seconds per run before it is a hang (default 20)")
    p.add_argument("--jobs", type=int, default=1,
                   help="parallel runs (default 1)")
    p.add_argument("--classes", default=",".join(CLASSES),
                   help="comma-separated mutation classes (default: all)")
    p.add_argument("--models", default=None,
                   help="comma-separated seed models (default: all of " +
                        ", ".join(s[0] for s in SEEDS) + ")")
    p.add_argument("--no-train", action="store_true",
                   help="only compile the mutants")
    p.add_argument("--rlimit-as-mb", type=int, default=8192,
                   help="address-space limit per run in MiB for an "
                        "unsanitized remat (0: none; default 8192)")
    p.add_argument("--asan-memory-mb", type=int, default=0,
                   help="an ASan-built remat: fail allocations and stop "
                        "runs past this many MiB (use with "
                        "--rlimit-as-mb 0; default 0: off)")
    p.add_argument("--reader", action="store_true",
                   help="the binary is remat-read-model (tests/fuzz/"
                        "ReadModel.cpp): read each mutant, no compile, no "
                        "training (the sanitizer job's MLIR-free build)")
    p.add_argument("--verbose", action="store_true",
                   help="one line per mutant")
    args = p.parse_args(argv)

    try:
        import onnx  # noqa: F401
        import torch  # noqa: F401
    except ImportError as e:
        print("fuzz_onnx.py: skipped: %s (needs python3-torch and "
              "python3-onnx)" % e, file=sys.stderr)
        return SKIP
    if not os.access(args.binary, os.X_OK):
        p.error("binary %r is not executable" % args.binary)
    args.binary = os.path.abspath(args.binary)   # runs start in scratch dirs
    classes = [c for c in args.classes.split(",") if c]
    for c in classes:
        if c not in CLASSES:
            p.error("unknown class %r (%s)" % (c, ", ".join(CLASSES)))
    run_target.MEMORY_LIMITS["rlimit_as_mb"] = args.rlimit_as_mb
    run_target.MEMORY_LIMITS["asan_mb"] = args.asan_memory_mb

    workdir = tempfile.mkdtemp(prefix="fuzz-onnx-")
    out = args.out or tempfile.mkdtemp(prefix="fuzz-onnx-out-")
    os.makedirs(out, exist_ok=True)
    seeds = export_seeds(workdir, args.models.split(",") if args.models
                         else None)
    # A seed that does not compile and train itself tests nothing.
    for stem, data, flags in seeds:
        kind, stage, rc, stderr = run_mutant(args.binary, data, flags,
                                             args.timeout, workdir,
                                             not args.no_train, args.reader)
        if "no ONNX support" in stderr:
            print("fuzz_onnx.py: skipped: this remat has no ONNX support",
                  file=sys.stderr)
            return SKIP
        if kind != "ok":
            print("fuzz_onnx.py: seed %s does not %s (exit %s):\n%s" % (
                stem, stage, rc, stderr), file=sys.stderr)
            return 1

    rng_seed = args.seed if args.seed is not None else int(time.time())
    rng = random.Random(rng_seed)
    mutator = OnnxMutator(rng)
    counts = collections.defaultdict(collections.Counter)   # class -> outcome
    sources = collections.defaultdict(collections.Counter)  # class -> source
    seen = {}
    start = time.time()

    def mutants():
        # Mutations come from one RNG in this thread: a --seed run is
        # repeatable.
        for i in range(args.count):
            cls = classes[i % len(classes)]
            stem, data, flags = seeds[(i // len(classes)) % len(seeds)]
            mutant, detail = mutator.mutate(data, cls)
            yield i, cls, stem, flags, mutant, detail

    def job(i, cls, stem, flags, mutant, detail):
        return (i, cls, stem, flags, mutant, detail) + run_mutant(
            args.binary, mutant, flags, args.timeout, workdir,
            not args.no_train, args.reader)

    n = 0
    for (i, cls, stem, flags, mutant, detail, kind, stage, rc,
         stderr) in run_target.in_order(job, mutants(), args.jobs):
        n += 1
        outcome = kind if kind in FAILURES else (
            "ok" if kind == "ok" else "error")
        counts[cls][outcome] += 1
        if outcome == "error":
            sources[cls][error_source(stage, stderr)] += 1
        if args.verbose:
            last = (stderr.strip().splitlines() or [""])[-1]
            print("[%d] %s %s %s: %s -> %s (%s) %s" % (
                i, cls, stem, detail[:100], stage, outcome, rc,
                last[:160]), flush=True)
        if outcome in FAILURES:
            sig = "%s %s: %s" % (stage, cls, run_target.signature(
                stderr, rc, outcome))
            new = sig not in seen
            run_target.save_finding(
                out, outcome, sig, mutant, ".onnx",
                "mutant %d of seed %s (%s), flags %s\n\n%s" % (
                    i, stem, detail, " ".join(flags) or "-", stderr),
                seen)
            if new:
                print("[%d] NEW %s (%s of %s: %s): %s" % (
                    i, outcome, cls, stem, detail[:120], sig),
                    flush=True)
        if not args.verbose and n % 100 == 0:
            print("[%d/%d] %.0fs" % (n, args.count, time.time() - start),
                  flush=True)

    outcomes = ["ok", "error"] + list(FAILURES)
    print("seed %d, %d mutants in %.0fs (%s)" % (
        rng_seed, n, time.time() - start, ", ".join(s for s, _, _ in seeds)))
    print("%-10s %s %6s" % ("class", " ".join("%8s" % o for o in outcomes),
                            "total"))
    total = collections.Counter()
    for cls in classes:
        total.update(counts[cls])
        print("%-10s %s %6d" % (cls, " ".join("%8d" % counts[cls][o]
                                              for o in outcomes),
                                sum(counts[cls].values())))
    print("%-10s %s %6d" % ("all", " ".join("%8d" % total[o]
                                            for o in outcomes),
                            sum(total.values())))
    print("errors by the check that refused the mutant:")
    print("%-10s %s" % ("class", " ".join("%9s" % x for x in SOURCES)))
    for cls in classes:
        print("%-10s %s" % (cls, " ".join("%9d" % sources[cls][x]
                                          for x in SOURCES)))
    for sig, e in sorted(seen.items()):
        print("  %5d x %s\n          %s" % (e["count"], sig, e["file"]))
    for name in os.listdir(workdir):
        try:
            os.unlink(os.path.join(workdir, name))
        except OSError:
            pass
    try:
        os.rmdir(workdir)
    except OSError:
        pass
    if seen:
        print("failing inputs in %s" % out)
    elif not args.out:
        os.rmdir(out)
    return 1 if seen else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""ONNX files whose float initializers and input are float16 or bfloat16
(docs/onnx.md, "What is supported").

  onnx_half.py REMAT   the exported classifier with its float initializers,
                       input, output and values stored as float16, and as
                       bfloat16: 3 steps of remat train give bitwise the
                       losses of the float32 file whose weights hold the
                       same rounded values (float32 masters); a Cast of a
                       computed tensor to float16 is refused naming the node

Exit 0 on success, 1 with a message on failure, 77 (skipped) without
PyTorch, the onnx module or ONNX support in this remat.
"""
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, HERE)
from onnx_cli import SKIP, expect, missing_support, run  # noqa: E402


def half_initializers(remat, work):
    """float16 and bfloat16 initializers (and input) are read as float32
    masters: the same step as a float32 file holding the rounded values."""
    import numpy as np
    try:
        import onnx
        from onnx import numpy_helper
    except ImportError as e:
        print(f"SKIP: {e}")
        return SKIP
    import export_onnx
    source = os.path.join(work, "classifier.onnx")
    export_onnx.export("classifier", source, batch=16, width=32, classes=4,
                       side=8)

    def bits16(values, kind):
        """float32 values as (the bytes of their 16-bit form, the float32
        values those 16 bits hold)."""
        if kind == "float16":
            h = values.astype(np.float16)
            return h.tobytes(), h.astype(np.float32)
        # bfloat16: round to nearest even on the upper 16 bits.
        u = values.astype(np.float32).view(np.uint32).astype(np.uint64)
        u = ((u + 0x7fff + ((u >> 16) & 1)) >> 16).astype(np.uint16)
        return u.tobytes(), (u.astype(np.uint32) << 16).view(np.float32)

    def variant(kind):
        """(the 16-bit file, the float32 file with the same values)."""
        half, same = onnx.load(source), onnx.load(source)
        code = {"float16": onnx.TensorProto.FLOAT16,
                "bfloat16": onnx.TensorProto.BFLOAT16}[kind]
        for h, f in zip(half.graph.initializer, same.graph.initializer):
            if h.data_type != onnx.TensorProto.FLOAT:
                continue
            raw, rounded = bits16(numpy_helper.to_array(h), kind)
            h.ClearField("float_data")
            h.data_type = code
            h.raw_data = raw
            f.CopyFrom(numpy_helper.from_array(rounded, f.name))
        # Its input, output and values all of the 16-bit type, as a model
        # exported in that precision has them.
        for i in (list(half.graph.input) + list(half.graph.output) +
                  list(half.graph.value_info)):
            if i.type.tensor_type.elem_type == onnx.TensorProto.FLOAT:
                i.type.tensor_type.elem_type = code
        paths = []
        for m, tag in ((half, kind), (same, kind + "-as-f32")):
            paths.append(os.path.join(work, tag + ".onnx"))
            onnx.save(m, paths[-1])
        return paths

    def losses(model, tag):
        log = os.path.join(work, tag + ".jsonl")
        r = run(remat, "train", model, "--steps", "3", "--log", log)
        if r.returncode != 0:
            raise SystemExit(f"FAIL: remat train {tag}: exit "
                             f"{r.returncode}:\n{r.stderr}")
        with open(log) as f:
            return [json.loads(line)["loss"] for line in f]

    for kind in ("float16", "bfloat16"):
        half, same = variant(kind)
        got, want = losses(half, kind), losses(same, kind + "-f32")
        print(f"{kind}: losses {got}, float32 file {want}")
        if got != want or len(got) != 3:
            raise SystemExit(f"FAIL: the {kind} file's losses differ from "
                             "the float32 file's")
    # A Cast of a computed tensor to float16 asks for rounding that a
    # float32 step does not do: refused, naming the node.
    m = onnx.load(source)
    first = m.graph.node[0]
    to_half = onnx.helper.make_node("Cast", [first.output[0]], ["to_half"],
                                    name="to_half",
                                    to=onnx.TensorProto.FLOAT16)
    back = onnx.helper.make_node("Cast", ["to_half"], ["back"], name="back",
                                 to=onnx.TensorProto.FLOAT)
    for node in m.graph.node[1:]:
        for k, name in enumerate(node.input):
            if name == first.output[0]:
                node.input[k] = "back"
    m.graph.node.insert(1, back)
    m.graph.node.insert(1, to_half)
    path = os.path.join(work, "cast.onnx")
    onnx.save(m, path)
    r = run(remat, "compile", path)
    expect(r, 1, "to_half", "FLOAT16")
    return 0


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    remat = sys.argv[1]
    if missing_support(remat):
        return SKIP
    with tempfile.TemporaryDirectory(prefix="remat-onnx-half-") as work:
        return half_initializers(remat, work)


if __name__ == "__main__":
    sys.exit(main())

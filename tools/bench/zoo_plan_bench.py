#!/usr/bin/env python3
"""The model zoo's families at their full sizes, planned (issue #33: the
largest sizes in a benchmark; docs/benchmarks.md).

  /usr/bin/python3 tools/bench/zoo_plan_bench.py [--remat REMAT]
      [--models a,b|all] [--batch 8] [--timeout 900]

For each family of tools/zoo_models.py, the torchvision 0.14 model it is
made small from, at its default constructor (1000 classes; 224 x 224, 299
for inception_v3; the segmentation heads at 224 too; dropout and
stochastic depth off),
and the transformers at GPT-2 small's width (d 768, 12 heads, vocabulary
50257, sequence 256; GPT2Like with 12 layers, the encoder with 2, pre-LN
and GELU, nn.Transformer with 1 + 1), is exported in training mode at opset 17
and planned with `remat plan MODEL.onnx --sweep --points 1 --json`
(planning only: nothing runs). Printed per model: parameters, ONNX nodes,
the store-all arena, the minimum feasible budget and its ratio to
store-all, the arena's lower bound, the attention and exact-GELU ops the
importer fused, and the export and planning seconds; or the error that
stopped it. A markdown table with the date and commit.
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

# zoo family -> (torchvision builder name or transformer class, side)
FULL = {
    "resnet": ("resnet50", 224), "resnext": ("resnext50_32x4d", 224),
    "wide_resnet": ("wide_resnet50_2", 224), "alexnet": ("alexnet", 224),
    "vgg": ("vgg16", 224), "vgg_bn": ("vgg16_bn", 224),
    "squeezenet": ("squeezenet1_1", 224), "densenet": ("densenet121", 224),
    "googlenet": ("googlenet", 224), "inception_v3": ("inception_v3", 299),
    "mobilenet_v2": ("mobilenet_v2", 224),
    "mobilenet_v3": ("mobilenet_v3_large", 224), "mnasnet": ("mnasnet1_0", 224),
    "shufflenet": ("shufflenet_v2_x1_0", 224),
    "efficientnet": ("efficientnet_b0", 224),
    "efficientnet_v2": ("efficientnet_v2_s", 224),
    "regnet_x": ("regnet_x_400mf", 224), "regnet_y": ("regnet_y_400mf", 224),
    "convnext": ("convnext_tiny", 224), "swin": ("swin_t", 224),
    "vit": ("vit_b_16", 224), "maxvit": ("maxvit_t", 224),
    "fcn": ("fcn_resnet50", 224), "deeplabv3":
    ("deeplabv3_mobilenet_v3_large", 224),
    "lraspp": ("lraspp_mobilenet_v3_large", 224),
    "encoder": ("EncoderLM", 0), "seq2seq": ("Seq2Seq", 0),
    "gpt2_like": ("GPT2Like", 0),
}
SEQ, VOCAB, WIDTH, HEADS, LAYERS = 256, 50257, 768, 12, 12


def build(family):
    import torch
    import torchvision
    import zoo_models
    name, side = FULL[family]
    torch.manual_seed(0)
    if side == 0:
        zoo_models.SEQ, zoo_models.VOCAB = SEQ, VOCAB
        if name == "GPT2Like":
            m = zoo_models.GPT2Like(width=WIDTH, heads=HEADS, layers=LAYERS,
                                    vocab=VOCAB, seq=SEQ)
        elif name == "EncoderLM":
            m = zoo_models.EncoderLM(True, "gelu", width=WIDTH, heads=HEADS)
        else:
            m = zoo_models.Seq2Seq(width=WIDTH, heads=HEADS)
        return m, (SEQ,), True
    kw = {}
    if name == "swin_t":  # swin_t's builder fixes stochastic depth at 0.2
        from torchvision.models.swin_transformer import SwinTransformer
        return (SwinTransformer([4, 4], 96, [2, 2, 6, 2], [3, 6, 12, 24],
                                [7, 7], stochastic_depth_prob=0.0),
                (3, side, side), False)
    if name == "maxvit_t":  # as swin_t's
        from torchvision.models.maxvit import MaxVit
        return (MaxVit((side, side), stem_channels=64, partition_size=7,
                       block_channels=[64, 128, 256, 512],
                       block_layers=[2, 2, 5, 2], head_dim=32,
                       stochastic_depth_prob=0.0), (3, side, side), False)
    if name.startswith(("efficientnet", "convnext")):
        kw["stochastic_depth_prob"] = 0.0
    if name == "inception_v3":
        kw["aux_logits"] = False
        kw["init_weights"] = True
    if name == "googlenet":
        kw["aux_logits"] = False
        kw["init_weights"] = True
    if name in ("fcn_resnet50", "deeplabv3_mobilenet_v3_large",
                "lraspp_mobilenet_v3_large"):
        m = zoo_models.Segmentation(name)
    else:
        m = getattr(torchvision.models, name)(weights=None, **kw)
    return zoo_models.no_dropout(m), (3, side, side), False


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--remat",
                   default=os.path.join(ROOT, "build/tools/remat/remat"))
    p.add_argument("--models", default="all",
                   help="comma-separated families (" + ", ".join(FULL) +
                   ") or all")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--timeout", type=int, default=900,
                   help="seconds for one model's planning")
    a = p.parse_args()
    try:
        import torch
        import zoo_models
    except ImportError as e:
        print(f"skipped: PyTorch is not installed ({e})")
        return 77
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    families = list(FULL) if a.models == "all" else a.models.split(",")
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short",
                             "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    rows = []
    with tempfile.TemporaryDirectory(prefix="remat-zoo-bench-") as work:
        for family in families:
            name = FULL[family][0]
            print(f"{family}: {name} ...", file=sys.stderr, flush=True)
            row = {"family": family, "model": name}
            try:
                module, shape, tokens = build(family)
                row["params"] = sum(t.numel() for t in module.parameters())
                x = (torch.randint(0, VOCAB, (a.batch, *shape)) if tokens
                     else torch.randn(a.batch, *shape))
                path = os.path.join(work, family + ".onnx")
                start = time.time()
                zoo_models.export_module(module, x, path)
                row["export_s"] = time.time() - start
                del module
                import onnx
                row["nodes"] = len(onnx.load(path, load_external_data=False)
                                   .graph.node)
            except Exception as e:  # the exporter's refusal
                row["error"] = f"export: {str(e).splitlines()[0][:160]}"
                rows.append(row)
                continue
            loss = ["--loss", "mse"] if family in (
                "fcn", "deeplabv3", "lraspp") else []
            opt = ["--optimizer", "adamw"] if tokens else []
            start = time.time()
            try:
                r = subprocess.run(
                    [a.remat, "plan", path, "--sweep", "--points", "1",
                     "--json", os.path.join(work, "sweep.json")] + loss + opt,
                    capture_output=True, text=True, timeout=a.timeout)
            except subprocess.TimeoutExpired:
                row["error"] = f"plan: over {a.timeout} s"
                rows.append(row)
                continue
            row["plan_s"] = time.time() - start
            if r.returncode != 0:
                row["error"] = "plan: " + (r.stderr.strip().splitlines()
                                           or ["failed"])[-1][:200]
                rows.append(row)
                continue
            with open(os.path.join(work, "sweep.json")) as f:
                rep = json.load(f)
            row.update(store_all=rep["store_all_arena_bytes"],
                       minimum=rep["min_feasible_bytes"],
                       bound=rep["lower_bound_bytes"])
            g = subprocess.run([a.remat, "compile", path, "--emit=graph",
                                "-o", "-"] + loss + opt,
                               capture_output=True, text=True)
            row["fused"] = (len(re.findall(r"= graph\.attention ", g.stdout)),
                            len(re.findall(r"= graph\.gelu_exact ",
                                           g.stdout)))
            rows.append(row)
            os.remove(path)
    print(f"Measured {datetime.date.today()} on commit {commit}, batch "
          f"{a.batch}, planning only (`remat plan --sweep --points 1`):\n")
    print("| family | model | params | ONNX nodes | store-all arena, the "
          "sweep's (B) | minimum feasible (B) | of store-all | lower bound "
          "(B) | "
          "attention, gelu_exact | export s | plan s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|")
    for r in rows:
        if "error" in r:
            print(f"| {r['family']} | {r['model']} | "
                  f"{r.get('params', 0):,} | {r.get('nodes', '-')} | "
                  f"{r['error']} | | | | | | |")
            continue
        print(f"| {r['family']} | {r['model']} | {r['params']:,} | "
              f"{r['nodes']} | {r['store_all']:,} | {r['minimum']:,} | "
              f"{r['minimum'] / r['store_all']:.3f} | {r['bound']:,} | "
              f"{r['fused'][0]}, {r['fused'][1]} | {r['export_s']:.0f} | "
              f"{r['plan_s']:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

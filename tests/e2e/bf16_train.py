#!/usr/bin/env python3
"""Training with --precision bf16 (docs/precision.md; issue #36, acceptance 2).

  bf16_train.py REMAT gpt2       GPT-2 tiny, 300 steps of remat train in
                                 float32 and in bf16: the bf16 run's final
                                 loss (the mean of its last 10 steps) within
                                 3% of the float32 run's
  bf16_train.py REMAT resnet18   torchvision's resnet18 exported to ONNX
                                 (32 x 32, 4 fixed batches of 4 cycled with
                                 --data), 300 steps in bf16: the loss of a
                                 pass over the batches falls below half its
                                 start (skips without PyTorch/torchvision)

Exit 0 on success, 1 with a message on failure, 77 (skipped).
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))
SKIP = 77


def train(remat, work, tag, *args):
    log = os.path.join(work, tag + ".jsonl")
    r = subprocess.run([remat, "train", *args, "--log", log],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: remat train ({tag}) exit {r.returncode}:\n"
                         f"{r.stderr}")
    # The cpu backend says once how it runs bf16: on oneDNN's bf16 kernels
    # (a CPU with bf16 instructions) or, with a warning, in float32 on
    # converted copies; a float32 run says neither.
    says = (r.stderr.count("computes bf16 ops in float32") +
            r.stderr.count("convolution steps on oneDNN's bf16 kernels"))
    if says != ("bf16" in args):
        raise SystemExit(f"FAIL: remat train ({tag}) printed the bf16 "
                         f"warning {says} times:\n{r.stderr}")
    with open(log) as f:
        return [json.loads(line)["loss"] for line in f]


def gpt2(remat, work):
    model = os.path.join(ROOT, "models", "gpt2.json")
    final = {}
    for precision in ("fp32", "bf16"):
        losses = train(remat, work, precision, model, "--preset", "tiny",
                       "--precision", precision, "--steps", "300")
        if len(losses) != 300:
            raise SystemExit(f"FAIL: {precision}: {len(losses)} steps logged")
        final[precision] = sum(losses[-10:]) / 10
        print(f"{precision}: loss {losses[0]:.4f} at step 1, "
              f"{final[precision]:.4f} over steps 291-300")
    gap = abs(final["bf16"] - final["fp32"]) / final["fp32"]
    print(f"bf16 against float32: {100 * gap:.2f}% (at most 3%)")
    if gap > 0.03:
        raise SystemExit("FAIL: bf16's final loss is more than 3% from "
                         "float32's")
    return 0


def resnet18(remat, work):
    sys.path.insert(0, HERE)
    from onnx_cli import resnet18_batches
    setup = resnet18_batches(work)
    if setup is None:
        return SKIP
    model, data = setup
    losses = train(remat, work, "resnet18", model, "--precision", "bf16",
                   "--steps", "300", "--optimizer", "adamw", "--lr", "0.001",
                   *data)
    first, last = sum(losses[:4]) / 4, sum(losses[-4:]) / 4
    print(f"bf16 resnet18: loss {first:.4f} over the first pass of the 4 "
          f"batches, {last:.4f} over the last")
    if len(losses) != 300 or not last < first / 2:
        raise SystemExit("FAIL: the loss did not fall below half its start")
    return 0


CHECKS = {"gpt2": gpt2, "resnet18": resnet18}


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in CHECKS:
        raise SystemExit(__doc__)
    with tempfile.TemporaryDirectory(prefix="remat-bf16-train-") as work:
        return CHECKS[sys.argv[2]](sys.argv[1], work)


if __name__ == "__main__":
    sys.exit(main())

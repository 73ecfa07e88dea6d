#!/usr/bin/env python3
"""tools/bench/resnet_def.py's ResNet is torchvision 0.14's resnet50 (the
GPU machine of tests/device/device-check.sh may lack torchvision, and
makes the resnet50 weights with resnet_def.py there):

  - the same state_dict: names in the same order, shapes, dtypes;
  - under one torch.manual_seed, the same values (so the weights made on
    the device are the ones tests/device/device-plans.sh exported), at
    1000 and at 10 classes;
  - the same forward: bitwise equal logits in training mode for the same
    weights and batch, and equal running statistics after it;
  - tools/bench/resnet50_gpu.py picks it where torchvision is missing
    (--own-model) and the small emulator configuration builds and runs.

Exit 0 on success, 1 on a difference, 77 without PyTorch or torchvision.
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "bench"))

try:
    import torch
    import torchvision
except ImportError as e:
    print(f"skipped: needs PyTorch and torchvision ({e})")
    sys.exit(77)

import resnet50_gpu  # noqa: E402
import resnet_def  # noqa: E402


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def check(classes):
    torch.manual_seed(0)
    theirs = torchvision.models.resnet50(weights=None, num_classes=classes)
    torch.manual_seed(0)
    ours = resnet_def.resnet(classes=classes)
    a, b = theirs.state_dict(), ours.state_dict()
    if list(a) != list(b):
        missing = [k for k in a if k not in b][:5]
        extra = [k for k in b if k not in a][:5]
        fail(f"state_dict names differ ({classes} classes): torchvision's "
             f"not ours {missing}, ours not torchvision's {extra}")
    for k in a:
        if a[k].shape != b[k].shape or a[k].dtype != b[k].dtype:
            fail(f"{k}: torchvision {tuple(a[k].shape)} {a[k].dtype}, ours "
                 f"{tuple(b[k].shape)} {b[k].dtype}")
        if not torch.equal(a[k], b[k]):
            fail(f"{k}: the seeded values differ ({classes} classes)")
    # One training-mode forward of the same weights and batch.
    x = torch.randn(2, 3, 64, 64, generator=torch.Generator().manual_seed(1))
    theirs.train()
    ours.train()
    with torch.no_grad():
        ya, yb = theirs(x), ours(x)
    if not torch.equal(ya, yb):
        fail(f"the logits differ ({classes} classes): largest difference "
             f"{(ya - yb).abs().max().item():.3g}")
    a, b = theirs.state_dict(), ours.state_dict()
    for k in a:
        if not torch.equal(a[k], b[k]):
            fail(f"{k} differs after the training-mode forward")
    print(f"{classes} classes: {len(a)} state_dict entries equal in name, "
          f"shape and seeded value; logits {tuple(ya.shape)} bitwise equal")


def main():
    check(1000)
    check(10)
    config = {"width": 64, "layers": [3, 4, 6, 3], "classes": 10, "seed": 0}
    _, source = resnet50_gpu.build_model(config)
    if not source.startswith("torchvision"):
        fail(f"resnet50_gpu.py builds resnet50 from {source} though "
             f"torchvision is importable")
    _, source = resnet50_gpu.build_model(config, own=True)
    if source != "tools/bench/resnet_def.py":
        fail(f"resnet50_gpu.py --own-model builds from {source}")
    small, source = resnet50_gpu.build_model(
        {"width": 2, "layers": [1, 1, 1, 1], "classes": 10, "seed": 0})
    y = small(torch.randn(2, 3, 32, 32))
    if source != "tools/bench/resnet_def.py" or tuple(y.shape) != (2, 10):
        fail(f"the emulator's small ResNet: {source}, logits "
             f"{tuple(y.shape)}")
    print("resnet50_gpu.py: torchvision where importable, resnet_def.py "
          "with --own-model and for the small emulator model")
    return 0


if __name__ == "__main__":
    sys.exit(main())

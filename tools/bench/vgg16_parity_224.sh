#!/bin/sh
# vgg16 at 224 x 224 (issue #12, acceptance 1): one training step from the
# exported random weights against PyTorch float64, as ctest's
# e2e-onnx-parity-* cases (tests/e2e/onnx_parity.py), which run vgg16 at
# side 32 only (this one takes minutes: 138M parameters, float64 PyTorch).
# usage: tools/bench/vgg16_parity_224.sh [REMAT] [BATCH] [onnx_parity.py
#        options, e.g. --tie-aware (also the tie-aware float64 reference,
#        tests/e2e/maxpool_ties.py; the strict comparison is printed too)]
# Output recorded in docs/benchmarks.md.
here=$(dirname "$0")
remat=${1:-$here/../../build/tools/remat/remat}
batch=${2:-2}
[ $# -ge 2 ] && shift 2 || shift $#
exec /usr/bin/python3 "$here/../../tests/e2e/onnx_parity.py" --remat "$remat" \
  --model vgg16 --side 224 --batch "$batch" --classes 1000 --opset 17 "$@"

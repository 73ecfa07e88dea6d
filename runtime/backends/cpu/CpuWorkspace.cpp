//===- CpuWorkspace.cpp - The CPU backend's kernel scratch, by op ---------===//
#include "runtime/backends/cpu/CpuWorkspace.h"

#include "runtime/backends/cpu/DnnlConv.h"

#include <algorithm>

namespace remat::runtime::cpu {

uint64_t cpuWorkspaceElements(OpKind op, const OpAttrs &attrs,
                              const std::vector<Shape> &inputs,
                              const std::vector<Shape> &outputs) {
  uint64_t minimum = cpuMinimumWorkspaceElements(op, attrs, inputs, outputs);
  std::optional<DnnlConvInfo> dnnl = dnnlConvInfo(op, attrs, inputs, outputs);
  if (!dnnl)
    return minimum;
  return std::max(minimum,
                  (dnnl->workspaceBytes + sizeof(float) - 1) / sizeof(float));
}

uint64_t cpuMinimumWorkspaceElements(OpKind op, const OpAttrs &attrs,
                                     const std::vector<Shape> &inputs,
                                     const std::vector<Shape> &outputs) {
  if (op == OpKind::Conv2d || op == OpKind::Conv2dGradInput ||
      op == OpKind::Conv2dGradWeight)
    return convWorkspaceElements(op, attrs, inputs, outputs);
  if (op == OpKind::Attention || op == OpKind::AttentionGrad) {
    if (inputs.empty() || inputs[0].size() < 3 || inputs[0][2] < 0)
      return 0;
    uint64_t s = uint64_t(inputs[0][2]);
    uint64_t factor = op == OpKind::Attention ? 1 : 2;
    // Saturates instead of wrapping: a wrapped count would let the
    // backend allocate too little scratch.
    if (s != 0 && s > UINT64_MAX / s / factor)
      return UINT64_MAX;
    return factor * s * s;
  }
  return 0;
}

int64_t convChunkColumns(int64_t k, int64_t positions) {
  int64_t columns =
      std::max<int64_t>(1, kConvScratchElements / std::max<int64_t>(k, 1));
  return std::max<int64_t>(1, std::min(positions, columns));
}

uint64_t convWorkspaceElements(OpKind op, const OpAttrs &attrs,
                               const std::vector<Shape> &inputs,
                               const std::vector<Shape> &outputs) {
  ConvShapes shapes(op, inputs, outputs);
  const Shape &w = shapes.w, &y = shapes.y;
  bool pointwise = w[2] == 1 && w[3] == 1 &&
                   attrs.strides == std::vector<int64_t>{1, 1} &&
                   attrs.pads == std::vector<int64_t>{0, 0, 0, 0};
  if (pointwise)
    return 0;
  int64_t k = w[1] * w[2] * w[3];
  return uint64_t(k) * uint64_t(convChunkColumns(k, y[2] * y[3]));
}

uint64_t cpuBudgetedWorkspaceBytes(uint64_t wanted, uint64_t least,
                                   uint64_t budget, uint64_t arenaBytes) {
  if (budget > 0)
    wanted = std::min(wanted, budget > arenaBytes ? budget - arenaBytes : 0);
  return std::max(least, wanted);
}

uint64_t cpuWorkspaceBytes(uint64_t elements, uint64_t elementBytes) {
  if (elementBytes != 0 && elements > UINT64_MAX / elementBytes)
    return UINT64_MAX;
  return elements * elementBytes;
}

uint64_t cpuStepScratchBytes(OpKind op, const OpAttrs &attrs,
                             const std::vector<Shape> &inputs,
                             const std::vector<Shape> &outputs,
                             uint64_t elementBytes, bool least) {
  bool own = least || elementBytes != sizeof(float);
  return cpuWorkspaceBytes(
      own ? cpuMinimumWorkspaceElements(op, attrs, inputs, outputs)
          : cpuWorkspaceElements(op, attrs, inputs, outputs),
      elementBytes);
}

} // namespace remat::runtime::cpu

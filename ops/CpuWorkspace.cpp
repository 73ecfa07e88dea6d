//===- CpuWorkspace.cpp - The CPU backend's kernel scratch, by op ---------===//
#include "ops/CpuWorkspace.h"

namespace remat::ops {

uint64_t cpuWorkspaceElements(OpKind op,
                              const std::vector<Shape> &inputShapes) {
  if (op == OpKind::Attention || op == OpKind::AttentionGrad) {
    if (inputShapes.empty() || inputShapes[0].size() < 3 ||
        inputShapes[0][2] < 0)
      return 0;
    uint64_t s = uint64_t(inputShapes[0][2]);
    uint64_t factor = op == OpKind::Attention ? 1 : 2;
    // Saturates instead of wrapping: a wrapped count would let the
    // backend allocate too little scratch.
    if (s != 0 && s > UINT64_MAX / s / factor)
      return UINT64_MAX;
    return factor * s * s;
  }
  return 0;
}

uint64_t cpuWorkspaceBytes(uint64_t elements, uint64_t elementBytes) {
  if (elementBytes != 0 && elements > UINT64_MAX / elementBytes)
    return UINT64_MAX;
  return elements * elementBytes;
}

} // namespace remat::ops

//===- Lifetimes.cpp - When each buffer of a plan holds a value -----------===//
#include "runtime/plan/Lifetimes.h"

#include <algorithm>

namespace remat::runtime {

bool livesWholeStep(BufferRole role) {
  return isPersistent(role) || role == BufferRole::Input;
}

std::vector<BufferLifetime> bufferLifetimes(const Plan &plan) {
  const int64_t numSteps = static_cast<int64_t>(plan.steps.size());
  std::vector<BufferLifetime> lifetimes(plan.buffers.size());
  for (int64_t s = 0; s < numSteps; ++s) {
    for (int64_t b : plan.steps[s].inputs) {
      BufferLifetime &l = lifetimes[b];
      if (l.firstRead < 0)
        l.firstRead = s;
      l.lastRead = s;
    }
    for (int64_t b : plan.steps[s].outputs) {
      BufferLifetime &l = lifetimes[b];
      if (l.firstWrite < 0)
        l.firstWrite = s;
      l.lastWrite = s;
    }
  }
  for (size_t b = 0; b < plan.buffers.size(); ++b) {
    BufferLifetime &l = lifetimes[b];
    if (livesWholeStep(plan.buffers[b].role)) {
      l.begin = numSteps > 0 ? 0 : -1;
      l.end = numSteps - 1;
      continue;
    }
    if (l.firstWrite < 0)
      continue; // never written: the loader allows no reads of it either
    l.begin = l.firstWrite;
    l.end = std::max(l.lastRead, l.lastWrite);
    if (static_cast<int64_t>(b) == plan.loss)
      l.end = numSteps - 1; // the runtime reads the loss after the last step
  }
  return lifetimes;
}

uint64_t alignUpBytes(uint64_t bytes, uint64_t alignment) {
  if (alignment <= 1)
    return bytes;
  uint64_t rest = bytes % alignment;
  if (rest == 0)
    return bytes;
  return bytes > UINT64_MAX - (alignment - rest) ? UINT64_MAX
                                                 : bytes + (alignment - rest);
}

} // namespace remat::runtime

//===- Lifetimes.h - When each buffer of a plan holds a value ---*- C++ -*-===//
//
// From the plan file alone: the steps over which each buffer holds a value
// (the analysis `remat explain` prints, and the gaps the CPU backend lays
// its kernel scratch in: runtime/backends/cpu/StepScratch.h).
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_PLAN_LIFETIMES_H
#define REMAT_RUNTIME_PLAN_LIFETIMES_H

#include "runtime/plan/PlanFormat.h"

#include <cstdint>
#include <vector>

namespace remat::runtime {

/// When a buffer holds a value: steps [begin, end], both inclusive.
/// Params, optimizer state, running statistics and inputs live over the
/// whole step list; the loss from its write to the end (the runtime reads
/// it after the last step); every other buffer from its first write to its
/// last read (or last write, when that is later): the loader refuses a read
/// before the first write. A buffer no step touches has begin = -1.
struct BufferLifetime {
  int64_t begin = -1;
  int64_t end = -1;
  int64_t firstWrite = -1, lastWrite = -1;
  int64_t firstRead = -1, lastRead = -1;
  bool live(int64_t step) const {
    return begin >= 0 && begin <= step && step <= end;
  }
};

/// Whether buffers of the role hold their value over the whole step list
/// (params, optimizer state, running statistics, inputs).
bool livesWholeStep(BufferRole role);

/// Per buffer of `plan`, its lifetime.
std::vector<BufferLifetime> bufferLifetimes(const Plan &plan);

/// `bytes` rounded up to a multiple of `alignment` (none for 0 or 1).
uint64_t alignUpBytes(uint64_t bytes, uint64_t alignment);

} // namespace remat::runtime

#endif // REMAT_RUNTIME_PLAN_LIFETIMES_H

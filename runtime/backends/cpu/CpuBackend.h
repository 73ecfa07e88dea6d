//===- CpuBackend.h - The reference CPU backend ---------------------------===//
//
// Float buffers f32 and bf16, or all f64 (f16 plans are rejected by
// checkSupport); the kernels compute in float (double for f64), and an op
// with bf16 tensors that does not read them itself runs on float copies
// of them in its scratch (Bf16Staging.h). The arena is one
// zero-filled posix_memalign allocation. A step's kernel scratch (attention's
// scores, a convolution's unfolded block or oneDNN's copies) lies in a gap of
// the arena where one is free while the step runs (StepScratch.h); the
// workspace, one more allocation made once in prepare(), serves the steps
// that found none. checkSupport refuses a plan whose arena, or arena plus
// the workspace of one step, is more than the host's physical memory,
// before anything is allocated.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_BACKENDS_CPU_CPUBACKEND_H
#define REMAT_RUNTIME_BACKENDS_CPU_CPUBACKEND_H

#include "runtime/Backend.h"
#include "runtime/backends/cpu/StepScratch.h"
#include "runtime/backends/cpu/SharedMoments.h"
#include "runtime/backends/cpu/kernels/Kernels.h"

#include <vector>

namespace remat::runtime {

class CpuBackend : public Backend {
public:
  ~CpuBackend() override;

  std::string name() const override { return "cpu"; }
  void checkSupport(const LoadedPlan &plan) const override;
  uint64_t workspaceBytes(const LoadedPlan &plan) const override;
  void *allocateArena(uint64_t bytes, uint64_t alignment) override;
  void freeArena(void *base) override;
  void prepare(const LoadedPlan &plan) override;
  void copyIn(void *deviceDst, const void *hostSrc, uint64_t bytes) override;
  void copyOut(void *hostDst, const void *deviceSrc, uint64_t bytes) override;
  void runStep(const KernelCall &call) override;
  void synchronize() override {}
  std::pair<uint64_t, uint64_t> arenaScratch(size_t step) const override;
  /// For a plan with bf16 tensors: which of its bf16 steps run on bf16
  /// kernels and which on float32 copies (a warning where none has a bf16
  /// kernel on this CPU); empty for other plans.
  std::string workspaceSummary() const override { return bf16Summary; }

  /// Number of arena allocations made and the bytes of the last one (tests
  /// check that a step makes exactly one allocation of arena_bytes).
  int arenaAllocations() const { return numArenaAllocations; }
  uint64_t lastArenaBytes() const { return lastArenaSize; }
  /// Steps run so far that read moments an earlier step shared
  /// (SharedMoments.h; tests check that sharing happens).
  uint64_t sharedMomentReads() const { return numSharedReads; }

  /// The memory checkSupport fits arena + workspace into; 0 (the default)
  /// means the host's physical memory. Tests set a small one.
  uint64_t memoryLimit = 0;

private:
  int numArenaAllocations = 0;
  uint64_t lastArenaSize = 0;
  char *arenaBase = nullptr;
  StepScratch scratch; ///< from prepare()
  /// The kernels compute in double: the plan's floats are f64
  /// (`--precision fp64`); else in float.
  bool inDouble = false;
  std::vector<double> workspace; ///< holds floats or doubles
  std::string bf16Summary;       ///< from prepare()
  /// Runs `call` with the kernels instantiated for T.
  template <typename T> void runAs(const KernelCall &call);
  /// Runs `call` on float copies of its bf16 tensors (Bf16Staging.h),
  /// where it has any its kernel does not read itself; false (nothing
  /// done) otherwise.
  bool runStaged(const KernelCall &call);
  /// Counts a run of step `step` in the sequence of consecutive steps that
  /// batch-norm moments are shared within.
  void noteStep(size_t step);
  /// The scratch of step `step`: its gap in the arena, or the workspace.
  std::pair<char *, uint64_t> stepScratch(size_t step);
  /// Batch-norm moments shared between steps (SharedMoments.h): the
  /// grouping from prepare(), a slot per concurrent group, and the run
  /// (counted from 1) in which each slot was last filled.
  cpu::SharedMoments moments;
  std::vector<cpu::ChannelMoments> momentSlots;
  std::vector<uint64_t> slotFilledAt;
  /// Steps run so far, the first run of the current sequence of
  /// consecutive steps, and the last step run.
  uint64_t runs = 0, sequenceStart = 0, numSharedReads = 0;
  size_t lastStep = SIZE_MAX;
};

/// Physical memory of the host in bytes (UINT64_MAX when unknown).
uint64_t physicalMemoryBytes();

} // namespace remat::runtime

#endif // REMAT_RUNTIME_BACKENDS_CPU_CPUBACKEND_H

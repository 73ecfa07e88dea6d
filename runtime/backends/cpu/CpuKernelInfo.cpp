//===- CpuKernelInfo.cpp - What the CPU backend states about itself -------===//
#include "runtime/backends/cpu/CpuKernelInfo.h"

#include "runtime/backends/cpu/CpuWorkspace.h"
#include "runtime/backends/cpu/StepScratch.h"

#include <algorithm>
#include <thread>

namespace remat::runtime {

namespace {

class CpuKernelInfo final : public KernelInfo {
public:
  int64_t
  opScratchBytes(ops::OpKind op, const ops::OpAttrs &attrs,
                 const std::vector<ops::TensorType> &inputs,
                 const std::vector<ops::TensorType> &outputs) const override {
    uint64_t bytes = cpu::cpuStepScratchBytes(op, attrs, inputs, outputs,
                                              /*least=*/false);
    return bytes > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(bytes);
  }

  PlanKernelFacts planFacts(const Plan &plan,
                            uint64_t budgetBytes) const override {
    // The workspace of the steps whose scratch finds no gap in the arena
    // (none where the layout placed it, unless REMAT_CPU_SCRATCH=beside),
    // as far as the budget leaves room beside the arena.
    StepScratch scratch = cpuStepScratch(plan);
    PlanKernelFacts facts;
    facts.workspaceBytes =
        int64_t(cpuSideWorkspaceBytes(scratch, plan, budgetBytes));
    for (size_t i = 0; i < scratch.arenaOffset.size(); ++i)
      if (scratch.arenaOffset[i] >= 0) {
        ++facts.arenaScratchSteps;
        facts.arenaScratchBytes =
            std::max(facts.arenaScratchBytes, int64_t(scratch.arenaBytes[i]));
      }
    // OpenBLAS at the most threads it starts here: one a core.
    facts.runtimeAllowanceBytes = cpuRuntimeAllowanceBytes(
        plan, std::max(1u, std::thread::hardware_concurrency()));
    facts.runtimeFixedBytes = kCpuRuntimeFixedBytes;
    return facts;
  }
};

} // namespace

const KernelInfo &cpuKernelInfo() {
  static const CpuKernelInfo info;
  return info;
}

uint64_t cpuRuntimeAllowanceBytes(const Plan &plan, unsigned blasThreads) {
  uint64_t staged = 0;
  for (const BufferDesc &b : plan.buffers)
    if (b.init || b.role == BufferRole::Input)
      staged = std::max(staged, b.bytes);
  return kCpuRuntimeBaseBytes + staged + cpuBlasAllowanceBytes(blasThreads);
}

uint64_t cpuBlasAllowanceBytes(unsigned threads) {
  return threads ? kCpuBlasBytes + threads * kCpuBlasThreadBytes : 0;
}

} // namespace remat::runtime

//===- StepScratch.cpp - The CPU kernels' scratch inside the arena ------===//
#include "runtime/backends/cpu/StepScratch.h"

#include "runtime/backends/cpu/CpuWorkspace.h"
#include "runtime/backends/cpu/EnvChoice.h"
#include "runtime/plan/Ops.h"

#include <algorithm>

namespace remat::runtime {

StepScratch placeStepScratch(const Plan &plan,
                             const std::vector<uint64_t> &wanted,
                             const std::vector<uint64_t> &least, bool inArena) {
  StepScratch out;
  size_t numSteps = plan.steps.size();
  out.wanted = wanted;
  out.wanted.resize(numSteps, 0);
  out.least = least;
  out.least.resize(numSteps, 0);
  out.arenaOffset.assign(numSteps, -1);
  out.arenaBytes.assign(numSteps, 0);
  std::vector<BufferLifetime> lifetimes;
  if (inArena)
    lifetimes = bufferLifetimes(plan);
  std::vector<std::pair<uint64_t, uint64_t>> busy; // [offset, end)
  for (size_t s = 0; s < numSteps; ++s) {
    uint64_t want = out.wanted[s];
    if (want == 0)
      continue;
    if (inArena) {
      busy.clear();
      for (size_t b = 0; b < plan.buffers.size(); ++b) {
        const BufferDesc &buf = plan.buffers[b];
        if (buf.bytes > 0 && lifetimes[b].live(int64_t(s)))
          busy.push_back(
              {buf.offset,
               buf.offset + alignUpBytes(buf.bytes, plan.alignment)});
      }
      std::sort(busy.begin(), busy.end());
      // The lowest aligned offset with `bytes` free at this step, or -1.
      auto lowestGap = [&](uint64_t bytes) -> int64_t {
        uint64_t start = 0;
        for (size_t k = 0;; ++k) {
          uint64_t limit = k < busy.size() ? busy[k].first : plan.arenaBytes;
          if (start <= limit && limit - start >= bytes)
            return int64_t(start);
          if (k == busy.size())
            return -1;
          start = std::max(start, alignUpBytes(busy[k].second, plan.alignment));
        }
      };
      for (uint64_t bytes : {want, out.least[s]}) {
        if (bytes == 0 || out.arenaOffset[s] >= 0)
          continue;
        out.arenaOffset[s] = lowestGap(bytes);
        out.arenaBytes[s] = out.arenaOffset[s] >= 0 ? bytes : 0;
      }
      if (out.arenaOffset[s] >= 0)
        continue;
    }
    out.sideWanted = std::max(out.sideWanted, want);
    out.sideLeast = std::max(out.sideLeast, out.least[s]);
  }
  return out;
}

bool cpuScratchInArena() {
  return cpu::envChoice("REMAT_CPU_SCRATCH", {"arena", "beside"}) == "arena";
}

void forEachOpStep(
    const Plan &plan,
    const std::function<void(size_t, OpKind, const OpAttrs &,
                             const std::vector<ops::TensorType> &,
                             const std::vector<ops::TensorType> &)> &visit) {
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const StepDesc &step = plan.steps[s];
    std::optional<OpKind> kind = parseOpKind(step.op);
    if (!kind)
      continue;
    std::vector<ops::TensorType> inputs, outputs;
    for (int64_t b : step.inputs)
      inputs.push_back(
          {plan.buffers[size_t(b)].dtype, plan.buffers[size_t(b)].shape});
    for (int64_t b : step.outputs)
      outputs.push_back(
          {plan.buffers[size_t(b)].dtype, plan.buffers[size_t(b)].shape});
    OpAttrs attrs =
        parseOpAttrs(*kind, step.attrs,
                     "/steps/" + std::to_string(s) + " '" + step.op + "'");
    visit(s, *kind, attrs, inputs, outputs);
  }
}

StepScratch cpuStepScratch(const Plan &plan) {
  std::vector<uint64_t> wanted(plan.steps.size(), 0),
      least(plan.steps.size(), 0);
  forEachOpStep(plan, [&](size_t s, OpKind kind, const OpAttrs &attrs,
                          const std::vector<ops::TensorType> &inputs,
                          const std::vector<ops::TensorType> &outputs) {
    wanted[s] = cpu::cpuStepScratchBytes(kind, attrs, inputs, outputs, false);
    least[s] = cpu::cpuStepScratchBytes(kind, attrs, inputs, outputs, true);
  });
  return placeStepScratch(plan, wanted, least, cpuScratchInArena());
}

uint64_t cpuSideWorkspaceBytes(const StepScratch &scratch, const Plan &plan,
                               uint64_t budgetBytes) {
  return cpu::cpuBudgetedWorkspaceBytes(scratch.sideWanted, scratch.sideLeast,
                                        budgetBytes, plan.arenaBytes);
}

} // namespace remat::runtime

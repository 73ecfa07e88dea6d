//===- SharedMoments.cpp - Batch-norm statistics shared between steps -----===//
#include "runtime/backends/cpu/SharedMoments.h"

#include "runtime/backends/cpu/CpuWorkspace.h"

#include <algorithm>
#include <string>

namespace remat::runtime::cpu {

namespace {

struct Group {
  int64_t buffer;
  uint64_t begin, end; ///< the buffer's bytes in the arena
  int64_t channels;
  std::vector<size_t> steps;
};

} // namespace

SharedMoments planSharedMoments(const LoadedPlan &plan) {
  const Plan &p = plan.plan;
  SharedMoments shared;
  shared.slot.assign(p.steps.size(), -1);
  shared.fills.assign(p.steps.size(), 0);
  std::vector<Group> open, done;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const StepDesc &step = p.steps[i];
    int operand = momentsOperand(plan.steps[i].op);
    if (operand >= 0 && size_t(operand) < step.inputs.size()) {
      int64_t b = step.inputs[size_t(operand)];
      const BufferDesc &buffer = p.buffers[size_t(b)];
      bool shareable = buffer.role == BufferRole::Activation ||
                       buffer.role == BufferRole::Temporary;
      auto it = std::find_if(open.begin(), open.end(),
                             [&](const Group &g) { return g.buffer == b; });
      if (it != open.end())
        it->steps.push_back(i);
      else if (shareable && buffer.shape.size() >= 2)
        open.push_back({b,
                        buffer.offset,
                        buffer.offset + buffer.bytes,
                        buffer.shape[1],
                        {i}});
    }
    // A write to any byte of a group's buffer ends the group (after this
    // step's own read).
    for (int64_t o : step.outputs) {
      const BufferDesc &out = p.buffers[size_t(o)];
      uint64_t begin = out.offset, end = out.offset + out.bytes;
      for (size_t g = 0; g < open.size();) {
        if (begin < open[g].end && open[g].begin < end) {
          done.push_back(std::move(open[g]));
          open.erase(open.begin() + std::ptrdiff_t(g));
        } else {
          ++g;
        }
      }
    }
  }
  for (Group &g : open)
    done.push_back(std::move(g));
  std::sort(done.begin(), done.end(), [](const Group &a, const Group &b) {
    return a.steps.front() < b.steps.front();
  });
  // Slots: a group takes a slot whose last group ended before it began.
  std::vector<size_t> slotFreeAfter; // the last step of the slot's group
  for (const Group &g : done) {
    if (g.steps.size() < 2)
      continue;
    ++shared.groups;
    int slot = -1;
    for (size_t s = 0; s < slotFreeAfter.size(); ++s)
      if (slotFreeAfter[s] < g.steps.front() &&
          (slot < 0 || shared.slotChannels[s] >= g.channels))
        slot = int(s);
    if (slot < 0) {
      slot = int(slotFreeAfter.size());
      slotFreeAfter.push_back(0);
      shared.slotChannels.push_back(0);
    }
    slotFreeAfter[size_t(slot)] = g.steps.back();
    shared.slotChannels[size_t(slot)] =
        std::max(shared.slotChannels[size_t(slot)], g.channels);
    for (size_t s : g.steps)
      shared.slot[s] = slot;
    shared.fills[g.steps.front()] = 1;
  }
  return shared;
}

} // namespace remat::runtime::cpu

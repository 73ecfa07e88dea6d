//===- BoundsCheck.cpp - Check that each step keeps to its own bytes -----===//
#include "runtime/BoundsCheck.h"

#include "runtime/ForwardingBackend.h"
#include "runtime/plan/Loader.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace remat::runtime {
namespace {

using Range = std::pair<uint64_t, uint64_t>; ///< [begin, end) in the arena

/// Sorted, merged ranges.
std::vector<Range> merged(std::vector<Range> ranges) {
  std::sort(ranges.begin(), ranges.end());
  std::vector<Range> out;
  for (const Range &r : ranges) {
    if (r.first >= r.second)
      continue;
    if (!out.empty() && r.first <= out.back().second)
      out.back().second = std::max(out.back().second, r.second);
    else
      out.push_back(r);
  }
  return out;
}

bool inside(const std::vector<Range> &ranges, uint64_t byte) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(),
                             Range{byte, UINT64_MAX});
  return it != ranges.begin() && byte < std::prev(it)->second;
}

class BoundsCheckedBackend final : public ForwardingBackend {
public:
  using ForwardingBackend::ForwardingBackend;

  void *allocateArena(uint64_t bytes, uint64_t alignment) override {
    base = static_cast<char *>(inner->allocateArena(bytes, alignment));
    arenaBytes = bytes;
    return base;
  }
  void freeArena(void *arena) override {
    inner->freeArena(arena);
    base = nullptr;
  }
  void prepare(const LoadedPlan &loaded) override {
    plan = &loaded;
    inner->prepare(loaded);
  }
  void runStep(const KernelCall &call) override;

private:
  char *base = nullptr;
  uint64_t arenaBytes = 0;
  const LoadedPlan *plan = nullptr;
  /// Whole-arena host copies, kept across steps: before the step, the
  /// poisoned arena it ran on and what that run left, after the real run.
  std::vector<char> before, poisonedIn, poisonedOut, after;

  Range rangeOf(const TensorRef &t) const {
    uint64_t begin = uint64_t(static_cast<char *>(t.data) - base);
    return {begin, begin + uint64_t(t.numElements) * dtypeSize(t.dtype)};
  }

  /// "bytes [a, b) of the arena (buffers placed there: 'x' [c, d), ...)":
  /// every buffer whose bytes overlap, live at this step or not.
  std::string describe(uint64_t first, uint64_t last) const;
  [[noreturn]] void violation(const KernelCall &call, const std::string &what,
                              uint64_t first, uint64_t last) const;
};

std::string BoundsCheckedBackend::describe(uint64_t first,
                                           uint64_t last) const {
  std::string text = "bytes [" + std::to_string(first) + ", " +
                     std::to_string(last + 1) + ") of the arena";
  std::string owners;
  int shown = 0;
  for (const BufferDesc &b : plan->plan.buffers) {
    if (b.offset > last || b.offset + b.bytes <= first)
      continue;
    if (++shown > 4) {
      owners += ", ...";
      break;
    }
    owners += (owners.empty() ? "" : ", ") + ("'" + b.name + "' [") +
              std::to_string(b.offset) + ", " +
              std::to_string(b.offset + b.bytes) + ")";
  }
  return text + (owners.empty() ? " (no buffer: alignment padding)"
                                : " (buffers placed there: " + owners + ")");
}

void BoundsCheckedBackend::violation(const KernelCall &call,
                                     const std::string &what, uint64_t first,
                                     uint64_t last) const {
  throw PlanError(plan->stepPlace(call.stepIndex) + " (training step " +
                  std::to_string(call.trainingStep + 1) + ", " +
                  inner->name() + " backend): " + what + " " +
                  describe(first, last));
}

void BoundsCheckedBackend::runStep(const KernelCall &call) {
  if (!plan || !base)
    throw std::logic_error("bounds check: runStep before prepare");
  std::vector<Range> operands, results;
  for (int i = 0; i < call.numInputs; ++i)
    operands.push_back(rangeOf(call.inputs[i]));
  for (int i = 0; i < call.numOutputs; ++i)
    results.push_back(rangeOf(call.outputs[i]));
  operands = merged(operands);
  results = merged(results);
  // Writes may also go to the step's scratch in the arena, a gap no live
  // buffer occupies; its bytes start poisoned, so a kernel that read them
  // before writing them gives results that differ between the runs.
  std::vector<Range> writable = results;
  auto [scratchOffset, scratchBytes] = inner->arenaScratch(call.stepIndex);
  if (scratchBytes > 0)
    writable.push_back({scratchOffset, scratchOffset + scratchBytes});
  writable = merged(writable);

  before.resize(arenaBytes);
  poisonedIn.resize(arenaBytes);
  poisonedOut.resize(arenaBytes);
  after.resize(arenaBytes);
  inner->copyOut(before.data(), base, arenaBytes);

  // The run on a poisoned arena: only the operands keep their bytes.
  std::memset(poisonedIn.data(), 0xFF, arenaBytes);
  for (const Range &r : operands)
    std::memcpy(poisonedIn.data() + r.first, before.data() + r.first,
                r.second - r.first);
  inner->copyIn(base, poisonedIn.data(), arenaBytes);
  inner->runStep(call);
  inner->copyOut(poisonedOut.data(), base, arenaBytes);

  // The run on the real arena.
  inner->copyIn(base, before.data(), arenaBytes);
  inner->runStep(call);
  inner->copyOut(after.data(), base, arenaBytes);

  // Writes: a changed byte outside the results, in either run.
  auto firstWrite = [&](const std::vector<char> &from,
                        const std::vector<char> &to) -> int64_t {
    for (uint64_t i = 0; i < arenaBytes; ++i)
      if (from[i] != to[i] && !inside(writable, i))
        return int64_t(i);
    return -1;
  };
  auto extent = [&](uint64_t first, auto differs) {
    uint64_t last = first;
    while (last + 1 < arenaBytes && differs(last + 1))
      ++last;
    return last;
  };
  for (auto [from, to] : {std::pair{&before, &after},
                          std::pair{&poisonedIn, &poisonedOut}}) {
    int64_t w = firstWrite(*from, *to);
    if (w >= 0) {
      uint64_t last = extent(uint64_t(w), [&](uint64_t i) {
        return (*from)[i] != (*to)[i] && !inside(writable, i);
      });
      violation(call, "wrote outside its results and scratch:", uint64_t(w),
                last);
    }
  }
  // Reads: a result that depends on the bytes that were poisoned.
  for (const Range &r : results)
    for (uint64_t i = r.first; i < r.second; ++i)
      if (after[i] != poisonedOut[i]) {
        uint64_t last = extent(i, [&](uint64_t j) {
          return j < r.second && after[j] != poisonedOut[j];
        });
        violation(call,
                  "read bytes outside its operands (or a result before "
                  "writing it): its results differ when every other byte of "
                  "the arena is 0xFF, at",
                  i, last);
      }
}

} // namespace

std::unique_ptr<Backend> withBoundsCheck(std::unique_ptr<Backend> inner) {
  return std::make_unique<BoundsCheckedBackend>(std::move(inner));
}

} // namespace remat::runtime

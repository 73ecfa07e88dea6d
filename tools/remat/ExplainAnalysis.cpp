//===- ExplainAnalysis.cpp - Liveness, saved and recomputed tensors -------===//
//
// Two steps, from the plan file alone: (1) lifetimes of buffers and live
// bytes per step, (2) forward results that stay live into the backward pass
// ("saved") and results of recompute steps matched to the forward step they
// repeat; both lists sorted largest first.
//
//===----------------------------------------------------------------------===//
#include "tools/remat/ExplainAnalysis.h"

#include <algorithm>
#include <map>

namespace remat::tools {

using namespace remat::runtime;

std::string stepLabel(const Plan &plan, int64_t step) {
  return "step " + std::to_string(step) + " '" + plan.steps[step].op + "'";
}

std::string kindStepLabel(const Plan &plan, int64_t step) {
  const StepDesc &s = plan.steps[step];
  std::string kind = s.recompute ? "recompute" : phaseName(s.phase);
  return kind + " " + stepLabel(plan, step);
}

namespace {

std::string stripCopySuffix(const std::string &name) {
  size_t hash = name.rfind('#');
  if (hash == std::string::npos || hash + 1 == name.size())
    return name;
  for (size_t i = hash + 1; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9')
      return name;
  return name.substr(0, hash);
}

/// Step 1: lifetimes and live bytes.
void computeLiveness(const Plan &plan, PlanExplanation &ex) {
  const int64_t numSteps = static_cast<int64_t>(plan.steps.size());
  ex.lifetimes = bufferLifetimes(plan);

  // Union of byte ranges per step: sort the live buffers by offset and count
  // each byte once, for the first buffer that covers it. A buffer occupies
  // its bytes rounded up to the alignment (offsets are aligned, so the pad
  // is unusable), which is how the compiler counts live_lower_bound_bytes.
  for (auto &perRole : ex.liveBytesByRole)
    perRole.assign(numSteps, 0);
  ex.liveBytes.assign(numSteps, 0);
  // The CPU kernels' scratch in the arena's gaps, where the runtime puts it.
  ex.scratchBytes.assign(numSteps, 0);
  auto backend = plan.report.find("backend");
  if (backend == plan.report.end() || *backend == "cpu") {
    StepScratch scratch = cpuStepScratch(plan);
    for (int64_t s = 0; s < numSteps; ++s)
      if (scratch.arenaOffset[s] >= 0)
        ex.scratchBytes[s] =
            alignUpBytes(scratch.arenaBytes[s], plan.alignment);
  }
  std::vector<size_t> order(plan.buffers.size());
  for (size_t b = 0; b < order.size(); ++b)
    order[b] = b;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return plan.buffers[a].offset < plan.buffers[b].offset;
  });
  for (int64_t s = 0; s < numSteps; ++s) {
    uint64_t coveredEnd = 0;
    for (size_t b : order) {
      if (!ex.lifetimes[b].live(s))
        continue;
      const BufferDesc &buf = plan.buffers[b];
      uint64_t start = std::max(buf.offset, coveredEnd);
      uint64_t end = buf.offset + alignUpBytes(buf.bytes, plan.alignment);
      if (end > start) {
        ex.liveBytesByRole[roleIndex(buf.role)][s] += end - start;
        ex.liveBytes[s] += end - start;
      }
      coveredEnd = std::max(coveredEnd, end);
    }
    ex.liveBytes[s] += ex.scratchBytes[s];
    if (ex.peakStep < 0 || ex.liveBytes[s] > ex.peakLiveBytes) {
      ex.peakLiveBytes = ex.liveBytes[s];
      ex.peakStep = s;
    }
  }
}

/// Step 2a: match every recompute step to the forward step it repeats: same
/// op, same attributes, and inputs that are the same buffers once recomputed
/// inputs are mapped back to their originals. Falls back to the name
/// convention "<original>#<n>" when nothing matches.
void findRecomputed(const Plan &plan, PlanExplanation &ex) {
  const int64_t numSteps = static_cast<int64_t>(plan.steps.size());
  std::vector<int64_t> original(plan.buffers.size());
  for (size_t b = 0; b < original.size(); ++b)
    original[b] = static_cast<int64_t>(b);
  std::vector<int64_t> originalStep(plan.buffers.size(), -1);
  auto keyOf = [&](const StepDesc &s) {
    std::string key = s.op + "|" + s.attrs.dump() + "|";
    for (int64_t in : s.inputs)
      key += std::to_string(original[in]) + ",";
    return key;
  };
  std::map<std::string, int64_t> forwardByKey;
  std::map<std::string, int64_t> forwardWriterByName;
  for (int64_t s = 0; s < numSteps; ++s) {
    const StepDesc &step = plan.steps[s];
    if (!step.recompute) {
      if (step.phase == Phase::Forward) {
        forwardByKey[keyOf(step)] = s;
        for (int64_t out : step.outputs)
          forwardWriterByName.emplace(plan.buffers[out].name, s);
      }
      continue;
    }
    ++ex.recomputeSteps;
    auto match = forwardByKey.find(keyOf(step));
    for (size_t k = 0; k < step.outputs.size(); ++k) {
      int64_t out = step.outputs[k];
      int64_t orig = -1, origStep = -1;
      if (match != forwardByKey.end() &&
          k < plan.steps[match->second].outputs.size()) {
        origStep = match->second;
        orig = plan.steps[origStep].outputs[k];
      } else {
        auto byName =
            forwardWriterByName.find(stripCopySuffix(plan.buffers[out].name));
        if (byName != forwardWriterByName.end()) {
          origStep = byName->second;
          for (int64_t o : plan.steps[origStep].outputs)
            if (plan.buffers[o].name == byName->first)
              orig = o;
        }
      }
      if (orig >= 0) {
        original[out] = orig;
        originalStep[out] = origStep;
      }
    }
  }

  for (int64_t s = 0; s < numSteps; ++s) {
    const StepDesc &step = plan.steps[s];
    if (!step.recompute)
      continue;
    for (int64_t out : step.outputs) {
      RecomputedTensor r;
      r.buffer = out;
      r.producerStep = s;
      if (original[out] != out) {
        r.original = original[out];
        r.originalStep = originalStep[out];
      }
      // The first non-recompute step that needs this value, directly or
      // through later recompute steps.
      std::vector<bool> derived(plan.buffers.size(), false);
      derived[out] = true;
      for (int64_t t = s + 1; t < numSteps && r.consumerStep < 0; ++t) {
        const StepDesc &later = plan.steps[t];
        bool reads = false;
        for (int64_t in : later.inputs)
          reads = reads || derived[in];
        if (!reads)
          continue;
        if (!later.recompute)
          r.consumerStep = t;
        else
          for (int64_t o : later.outputs)
            derived[o] = true;
      }
      std::string why;
      if (r.original >= 0) {
        for (int64_t t = r.originalStep; t < s; ++t)
          for (int64_t in : plan.steps[t].inputs)
            if (in == r.original)
              r.droppedAfter = t;
        if (r.droppedAfter < 0)
          r.droppedAfter = r.originalStep;
        why = "recomputes '" + plan.buffers[r.original].name + "' of " +
              kindStepLabel(plan, r.originalStep) + "; dropped after " +
              kindStepLabel(plan, r.droppedAfter) + ", recomputed at step " +
              std::to_string(s);
        if (ex.lifetimes[r.original].end >= s)
          why += " (the original is also kept)";
      } else {
        why = "recomputed at step " + std::to_string(s) +
              " (no forward step with the same op and inputs found)";
      }
      if (r.consumerStep >= 0)
        why += " for " + kindStepLabel(plan, r.consumerStep);
      else
        why += "; no later step reads it";
      r.reason = why;
      ex.recomputed.push_back(r);
    }
  }
}

/// Step 2b: forward results that a step at or after backwardStart reads.
void findSaved(const Plan &plan, PlanExplanation &ex) {
  const int64_t numSteps = static_cast<int64_t>(plan.steps.size());
  std::vector<int64_t> producer(plan.buffers.size(), -1);
  for (int64_t s = 0; s < numSteps; ++s)
    for (int64_t out : plan.steps[s].outputs)
      if (producer[out] < 0)
        producer[out] = s;
  std::map<int64_t, int64_t> copyOf; // original buffer -> first recomputed copy
  for (const RecomputedTensor &r : ex.recomputed)
    if (r.original >= 0)
      copyOf.emplace(r.original, r.buffer);

  for (size_t b = 0; b < plan.buffers.size(); ++b) {
    const BufferDesc &buf = plan.buffers[b];
    if (livesWholeStep(buf.role) || buf.role == BufferRole::Grad)
      continue;
    int64_t p = producer[b];
    if (p < 0 || p >= ex.backwardStart || plan.steps[p].recompute ||
        plan.steps[p].phase != Phase::Forward)
      continue;
    SavedActivation sa;
    sa.buffer = static_cast<int64_t>(b);
    sa.producerStep = p;
    int64_t firstRecomputeReader = -1;
    for (int64_t s = ex.backwardStart; s < numSteps; ++s) {
      bool reads = false;
      for (int64_t in : plan.steps[s].inputs)
        reads = reads || in == static_cast<int64_t>(b);
      if (!reads)
        continue;
      if (sa.firstLaterReader < 0)
        sa.firstLaterReader = s;
      sa.lastReader = s;
      if (plan.steps[s].recompute) {
        sa.readByRecompute = true;
        if (firstRecomputeReader < 0)
          firstRecomputeReader = s;
      }
    }
    if (sa.firstLaterReader < 0)
      continue;
    auto copy = copyOf.find(sa.buffer);
    if (copy != copyOf.end())
      sa.recomputedAs = copy->second;
    std::string why = "read by " + kindStepLabel(plan, sa.firstLaterReader);
    if (sa.lastReader != sa.firstLaterReader)
      why += " (last: step " + std::to_string(sa.lastReader) + ")";
    if (sa.recomputedAs >= 0)
      why += "; kept, and also recomputed as '" +
             plan.buffers[sa.recomputedAs].name + "'";
    else if (sa.readByRecompute && firstRecomputeReader != sa.firstLaterReader)
      why += "; kept: not recomputed, and an input of " +
             kindStepLabel(plan, firstRecomputeReader);
    else if (sa.readByRecompute)
      why += "; kept: not recomputed (a checkpoint the recomputation starts "
             "from)";
    else
      why += "; kept: not recomputed";
    sa.reason = why;
    ex.saved.push_back(sa);
  }
}

void sortLargestFirst(const Plan &plan, PlanExplanation &ex) {
  // Largest first; ties by producing step, then buffer index.
  auto before = [&](int64_t bufA, int64_t stepA, int64_t bufB, int64_t stepB) {
    uint64_t bytesA = plan.buffers[bufA].bytes,
             bytesB = plan.buffers[bufB].bytes;
    if (bytesA != bytesB)
      return bytesA > bytesB;
    return stepA != stepB ? stepA < stepB : bufA < bufB;
  };
  std::sort(ex.saved.begin(), ex.saved.end(),
            [&](const SavedActivation &a, const SavedActivation &b) {
              return before(a.buffer, a.producerStep, b.buffer, b.producerStep);
            });
  std::sort(ex.recomputed.begin(), ex.recomputed.end(),
            [&](const RecomputedTensor &a, const RecomputedTensor &b) {
              return before(a.buffer, a.producerStep, b.buffer, b.producerStep);
            });
  for (const SavedActivation &s : ex.saved)
    ex.savedBytes += plan.buffers[s.buffer].bytes;
  for (const RecomputedTensor &r : ex.recomputed)
    ex.recomputedBytes += plan.buffers[r.buffer].bytes;
}

} // namespace

PlanExplanation explainPlan(const Plan &plan) {
  PlanExplanation ex;
  ex.backwardStart = static_cast<int64_t>(plan.steps.size());
  for (size_t s = 0; s < plan.steps.size(); ++s)
    if (plan.steps[s].phase == Phase::Backward) {
      ex.backwardStart = static_cast<int64_t>(s);
      break;
    }
  computeLiveness(plan, ex);
  findRecomputed(plan, ex);
  findSaved(plan, ex);
  sortLargestFirst(plan, ex);
  return ex;
}

} // namespace remat::tools

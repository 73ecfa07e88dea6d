//===- ExplainText.cpp - The text listing of `remat explain` --------------===//
//
// The summary (plan, arena, the plan's report, the live-bytes peak) and the
// tables of saved activations and recomputed tensors that `remat explain`
// prints; and formatBytes, the byte counts every rendering shows.
//
//===----------------------------------------------------------------------===//
#include "tools/remat/ExplainCommand.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <sstream>

namespace remat::tools {

using namespace remat::runtime;

namespace {

std::string padRight(const std::string &text, size_t width) {
  return text.size() >= width ? text
                              : text + std::string(width - text.size(), ' ');
}

std::string padLeft(const std::string &text, size_t width) {
  return text.size() >= width ? text
                              : std::string(width - text.size(), ' ') + text;
}

/// "505.56 KiB (517696 B)"; just "896 B" below 1 KiB.
std::string bytesWithExact(uint64_t bytes) {
  return bytes < 1024
             ? formatBytes(bytes)
             : formatBytes(bytes) + " (" + std::to_string(bytes) + " B)";
}

bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string formatReportValue(const std::string &key, const nlohmann::json &v) {
  if (v.is_number_integer() && endsWith(key, "_bytes") && v.get<int64_t>() >= 0)
    return bytesWithExact(v.get<uint64_t>());
  if (v.is_object()) {
    std::string out;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!out.empty())
        out += ", ";
      out += it.key() + " ";
      out += it.value().is_number_integer() && it.value().get<int64_t>() >= 0
                 ? formatBytes(it.value().get<uint64_t>())
                 : it.value().dump();
    }
    return out;
  }
  if (v.is_string())
    return v.get<std::string>();
  if (v.is_number_float()) {
    char text[64];
    std::snprintf(text, sizeof(text), "%.6g", v.get<double>());
    return text;
  }
  return v.dump();
}

} // namespace

std::string formatBytes(uint64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024)
    return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f %s", value, units[unit]);
  return text;
}

std::string formatExplanation(const Plan &plan, const PlanExplanation &ex,
                              const std::string &planPath) {
  std::ostringstream os;
  const int64_t numSteps = static_cast<int64_t>(plan.steps.size());
  os << "plan " << planPath << ": model '" << plan.model << "', "
     << plan.buffers.size() << " buffers, " << numSteps << " steps";
  if (ex.backwardStart < numSteps)
    os << " (forward 0.." << ex.backwardStart - 1 << ", backward from step "
       << ex.backwardStart << ")";
  os << "\n";
  os << "arena: " << bytesWithExact(plan.arenaBytes) << ", batch "
     << plan.batch;
  if (plan.microbatches > 1)
    os << " a micro-batch: the steps run for each of "
       << describeMicrobatches(plan.microbatches, plan.batch,
                               plan.samplesPerStep())
       << " in turn, the optimizer's in the last only";
  os << "\n";
  if (plan.report.is_object() && !plan.report.empty()) {
    os << "report:\n";
    size_t width = 0;
    for (auto it = plan.report.begin(); it != plan.report.end(); ++it)
      width = std::max(width, it.key().size());
    for (auto it = plan.report.begin(); it != plan.report.end(); ++it)
      os << "  " << padRight(it.key(), width) << "  "
         << formatReportValue(it.key(), it.value()) << "\n";
  }
  // --precision bf16's conversions (docs/precision.md): how many, and
  // which values float32 ops read from bf16 ones.
  int64_t toBf16 = 0, recomputed = 0;
  std::vector<std::string> toF32;
  for (const StepDesc &step : plan.steps) {
    if (step.op != "convert" || step.inputs.empty() || step.outputs.empty())
      continue;
    recomputed += step.recompute;
    if (step.recompute)
      continue;
    if (plan.buffers[size_t(step.outputs[0])].dtype == DType::BF16)
      ++toBf16;
    else
      toF32.push_back(plan.buffers[size_t(step.inputs[0])].name);
  }
  if (toBf16 + int64_t(toF32.size()) > 0) {
    os << "conversions: " << toBf16 << " to bf16 (operands of bf16 ops), "
       << toF32.size() << " to f32 (operands of float32 ops), " << recomputed
       << " recomputed\n";
    if (!toF32.empty()) {
      os << "  float32 ops read bf16 values through conversions of:";
      for (size_t i = 0; i < toF32.size() && i < 8; ++i)
        os << (i ? ", " : " ") << toF32[i];
      if (toF32.size() > 8)
        os << ", ... (" << toF32.size() - 8 << " more)";
      os << "\n";
    }
  }
  if (ex.peakStep >= 0)
    os << "live bytes (first write to last read): peak "
       << bytesWithExact(ex.peakLiveBytes) << " at "
       << kindStepLabel(plan, ex.peakStep) << "\n";

  auto table = [&](const std::vector<std::array<std::string, 5>> &rows) {
    std::array<size_t, 4> width{};
    for (const auto &row : rows)
      for (size_t c = 0; c < 4; ++c)
        width[c] = std::max(width[c], row[c].size());
    for (const auto &row : rows)
      os << "  " << padLeft(row[0], width[0]) << "  "
         << padRight(row[1], width[1]) << "  " << padRight(row[2], width[2])
         << "  " << padRight(row[3], width[3]) << "  " << row[4] << "\n";
  };

  os << "\nsaved activations (forward results read at or after step "
     << ex.backwardStart << "), largest first:\n";
  if (ex.saved.empty()) {
    os << "  (none)\n";
  } else {
    std::vector<std::array<std::string, 5>> rows;
    rows.push_back({"bytes", "buffer", "shape", "produced by", "why"});
    for (const SavedActivation &s : ex.saved) {
      const BufferDesc &b = plan.buffers[s.buffer];
      rows.push_back({formatBytes(b.bytes), b.name,
                      std::string(dtypeName(b.dtype)) + formatShape(b.shape),
                      stepLabel(plan, s.producerStep), s.reason});
    }
    table(rows);
  }
  os << "  total: " << ex.saved.size() << " tensors, "
     << bytesWithExact(ex.savedBytes) << "\n";

  os << "\nrecomputed tensors (results of recompute steps), largest first:\n";
  if (ex.recomputed.empty()) {
    os << "  (none)\n";
  } else {
    std::vector<std::array<std::string, 5>> rows;
    rows.push_back({"bytes", "buffer", "shape", "produced by", "why"});
    for (const RecomputedTensor &r : ex.recomputed) {
      const BufferDesc &b = plan.buffers[r.buffer];
      rows.push_back({formatBytes(b.bytes), b.name,
                      std::string(dtypeName(b.dtype)) + formatShape(b.shape),
                      stepLabel(plan, r.producerStep), r.reason});
    }
    table(rows);
  }
  os << "  total: " << ex.recomputed.size() << " tensors, "
     << bytesWithExact(ex.recomputedBytes) << ", " << ex.recomputeSteps
     << " recompute steps of " << numSteps << "\n";
  return os.str();
}

} // namespace remat::tools

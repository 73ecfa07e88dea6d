//===- ExplainCommand.cpp - `remat explain`: what a plan keeps and recomputes
//=//
//
// Three steps, all from the plan file alone: (1) lifetimes of buffers and
// live bytes per step, (2) forward results that stay live into the backward
// pass ("saved") and results of recompute steps matched to the forward step
// they repeat, (3) the text, SVG and JSON renderings.
//
//===----------------------------------------------------------------------===//
#include "tools/remat/ExplainCommand.h"

#include "runtime/Loader.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

namespace remat::tools {

using namespace remat::runtime;

namespace {

int roleIndex(BufferRole role) { return static_cast<int>(role); }

BufferRole roleAt(int index) { return static_cast<BufferRole>(index); }

uint64_t alignUp(uint64_t bytes, uint64_t alignment) {
  return alignment > 1 ? (bytes + alignment - 1) / alignment * alignment
                       : bytes;
}

bool livesWholeStep(BufferRole role) {
  return role == BufferRole::Param || role == BufferRole::Optimizer ||
         role == BufferRole::Input;
}

std::string stepLabel(const Plan &plan, int64_t step) {
  return "step " + std::to_string(step) + " '" + plan.steps[step].op + "'";
}

/// "backward step 57 'attention_grad'", "recompute step 74 'dropout'".
std::string kindStepLabel(const Plan &plan, int64_t step) {
  const StepDesc &s = plan.steps[step];
  std::string kind = s.recompute ? "recompute" : phaseName(s.phase);
  return kind + " " + stepLabel(plan, step);
}

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
  ex.lifetimes.assign(plan.buffers.size(), BufferLifetime{});
  for (int64_t s = 0; s < numSteps; ++s) {
    for (int64_t b : plan.steps[s].inputs) {
      BufferLifetime &l = ex.lifetimes[b];
      if (l.firstRead < 0)
        l.firstRead = s;
      l.lastRead = s;
    }
    for (int64_t b : plan.steps[s].outputs) {
      BufferLifetime &l = ex.lifetimes[b];
      if (l.firstWrite < 0)
        l.firstWrite = s;
      l.lastWrite = s;
    }
  }
  for (size_t b = 0; b < plan.buffers.size(); ++b) {
    BufferLifetime &l = ex.lifetimes[b];
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

  // Union of byte ranges per step: sort the live buffers by offset and count
  // each byte once, for the first buffer that covers it. A buffer occupies
  // its bytes rounded up to the alignment (offsets are aligned, so the pad
  // is unusable), which is how the compiler counts planned_peak_bytes.
  for (auto &perRole : ex.liveBytesByRole)
    perRole.assign(numSteps, 0);
  ex.liveBytes.assign(numSteps, 0);
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
      uint64_t end = buf.offset + alignUp(buf.bytes, plan.alignment);
      if (end > start) {
        ex.liveBytesByRole[roleIndex(buf.role)][s] += end - start;
        ex.liveBytes[s] += end - start;
      }
      coveredEnd = std::max(coveredEnd, end);
    }
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

std::string escapeXml(const std::string &text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&apos;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

std::string num(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", value);
  return text;
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
double niceStep(double raw) {
  if (raw <= 0)
    return 1;
  double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * magnitude >= raw)
      return m * magnitude;
  return 10 * magnitude;
}

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

std::optional<uint64_t> reportBytes(const Plan &plan, const char *key) {
  if (!plan.report.is_object() || !plan.report.contains(key))
    return std::nullopt;
  const nlohmann::json &v = plan.report[key];
  if (v.is_number_unsigned() ||
      (v.is_number_integer() && v.get<int64_t>() >= 0))
    return v.get<uint64_t>();
  if (v.is_number_float() && v.get<double>() >= 0)
    return static_cast<uint64_t>(v.get<double>());
  return std::nullopt;
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

void writeFileAtomically(const std::string &path, const std::string &text) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      throw PlanError(path + ": cannot write");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw PlanError(path + ": cannot write");
  }
}

std::string baseName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
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
  os << "arena: " << bytesWithExact(plan.arenaBytes) << ", batch " << plan.batch
     << "\n";
  if (plan.report.is_object() && !plan.report.empty()) {
    os << "report:\n";
    size_t width = 0;
    for (auto it = plan.report.begin(); it != plan.report.end(); ++it)
      width = std::max(width, it.key().size());
    for (auto it = plan.report.begin(); it != plan.report.end(); ++it)
      os << "  " << padRight(it.key(), width) << "  "
         << formatReportValue(it.key(), it.value()) << "\n";
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

std::string renderTimelineSvg(const Plan &plan, const PlanExplanation &ex,
                              const std::string &title) {
  // Layout (px): plot area [left, right] x [top, bottom], legend on the right.
  const double width = 980, height = 560;
  const double left = 90, right = 760, top = 64, bottom = 470;
  const int64_t numSteps = std::max<int64_t>(1, plan.steps.size());
  std::optional<uint64_t> budget = reportBytes(plan, "budget_bytes");

  uint64_t maxBytes = std::max<uint64_t>(ex.peakLiveBytes, plan.arenaBytes);
  if (budget)
    maxBytes = std::max(maxBytes, *budget);
  maxBytes = std::max<uint64_t>(maxBytes, 1);
  const char *unitNames[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  double unitBytes = 1;
  while (unit < 4 && maxBytes >= unitBytes * 1024 * 2) {
    unitBytes *= 1024;
    ++unit;
  }
  double yStep = niceStep(maxBytes * 1.05 / unitBytes / 6);
  double yTop = std::ceil(maxBytes * 1.05 / unitBytes / yStep) * yStep;
  auto yOf = [&](double bytes) {
    return bottom - (bytes / unitBytes) / yTop * (bottom - top);
  };
  const double stepWidth = (right - left) / numSteps;
  auto xOf = [&](double step) { return left + step * stepWidth; };

  static const char *roleColors[kNumBufferRoles] = {
      "#4e79a7", // param
      "#f28e2b", // grad
      "#76b7b2", // optimizer
      "#edc948", // input
      "#59a14f", // activation
      "#b07aa1", // temporary
  };
  // Stacking order, bottom up: what lives all step first.
  static const BufferRole stackOrder[kNumBufferRoles] = {
      BufferRole::Param, BufferRole::Optimizer,  BufferRole::Input,
      BufferRole::Grad,  BufferRole::Activation, BufferRole::Temporary};

  std::ostringstream os;
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
     << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(width)
     << "\" height=\"" << num(height) << "\" viewBox=\"0 0 " << num(width)
     << " " << num(height)
     << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  os << "<title>" << escapeXml(title) << "</title>\n";
  os << "<rect x=\"0\" y=\"0\" width=\"" << num(width) << "\" height=\""
     << num(height) << "\" fill=\"#ffffff\"/>\n";
  os << "<text x=\"" << num(width / 2)
     << "\" y=\"26\" text-anchor=\"middle\" "
        "font-size=\"16\" font-weight=\"bold\">"
     << escapeXml(title) << "</text>\n";
  std::string subtitle =
      std::to_string(plan.steps.size()) + " steps, peak " +
      formatBytes(ex.peakLiveBytes) + ", arena " +
      formatBytes(plan.arenaBytes) +
      (budget ? ", budget " + formatBytes(*budget) : std::string()) + ", " +
      std::to_string(ex.recomputeSteps) + " recompute steps";
  os << "<text x=\"" << num(width / 2)
     << "\" y=\"46\" text-anchor=\"middle\" "
        "fill=\"#444444\">"
     << escapeXml(subtitle) << "</text>\n";

  // Grid and y axis labels.
  os << "<g stroke=\"#dddddd\" stroke-width=\"1\">\n";
  for (double v = 0; v <= yTop + yStep / 2; v += yStep) {
    double y = yOf(v * unitBytes);
    os << "<line x1=\"" << num(left) << "\" y1=\"" << num(y) << "\" x2=\""
       << num(right) << "\" y2=\"" << num(y) << "\"/>\n";
  }
  os << "</g>\n<g text-anchor=\"end\" fill=\"#333333\">\n";
  for (double v = 0; v <= yTop + yStep / 2; v += yStep) {
    char label[48];
    std::snprintf(label, sizeof(label), "%g %s", v, unitNames[unit]);
    os << "<text x=\"" << num(left - 6) << "\" y=\""
       << num(yOf(v * unitBytes) + 4) << "\">" << label << "</text>\n";
  }
  os << "</g>\n";

  // Stacked live bytes by role, one step-shaped polygon per role.
  std::vector<uint64_t> below(plan.steps.size(), 0);
  os << "<g stroke=\"none\">\n";
  for (BufferRole role : stackOrder) {
    const std::vector<uint64_t> &bytes = ex.liveBytesByRole[roleIndex(role)];
    bool any = std::any_of(bytes.begin(), bytes.end(),
                           [](uint64_t b) { return b > 0; });
    if (!any)
      continue;
    std::string points;
    for (size_t s = 0; s < bytes.size(); ++s) {
      double y = yOf(static_cast<double>(below[s] + bytes[s]));
      points += num(xOf(s)) + "," + num(y) + " " + num(xOf(s + 1)) + "," +
                num(y) + " ";
    }
    for (size_t s = bytes.size(); s-- > 0;) {
      double y = yOf(static_cast<double>(below[s]));
      points += num(xOf(s + 1)) + "," + num(y) + " " + num(xOf(s)) + "," +
                num(y) + (s ? " " : "");
    }
    os << "<polygon class=\"role-" << roleName(role) << "\" fill=\""
       << roleColors[roleIndex(role)] << "\" points=\"" << points
       << "\"><title>" << roleName(role) << "</title></polygon>\n";
    for (size_t s = 0; s < bytes.size(); ++s)
      below[s] += bytes[s];
  }
  os << "</g>\n";

  // Axes.
  os << "<g stroke=\"#000000\" stroke-width=\"1\">\n"
     << "<line x1=\"" << num(left) << "\" y1=\"" << num(bottom) << "\" x2=\""
     << num(right) << "\" y2=\"" << num(bottom) << "\"/>\n"
     << "<line x1=\"" << num(left) << "\" y1=\"" << num(top) << "\" x2=\""
     << num(left) << "\" y2=\"" << num(bottom) << "\"/>\n</g>\n";
  double xStep = niceStep(numSteps / 10.0);
  os << "<g text-anchor=\"middle\" fill=\"#333333\">\n";
  for (double s = 0; s <= numSteps; s += xStep) {
    double x = xOf(s);
    os << "<line x1=\"" << num(x) << "\" y1=\"" << num(bottom) << "\" x2=\""
       << num(x) << "\" y2=\"" << num(bottom + 4) << "\" stroke=\"#000000\"/>\n"
       << "<text x=\"" << num(x) << "\" y=\"" << num(bottom + 30) << "\">"
       << static_cast<int64_t>(s) << "</text>\n";
  }
  os << "</g>\n";
  os << "<text x=\"" << num((left + right) / 2) << "\" y=\"" << num(bottom + 52)
     << "\" text-anchor=\"middle\">plan step</text>\n";
  os << "<text transform=\"translate(22," << num((top + bottom) / 2)
     << ") rotate(-90)\" text-anchor=\"middle\">live bytes (" << unitNames[unit]
     << ")</text>\n";

  // Recompute steps: ticks in a strip just below the x axis.
  os << "<g class=\"recompute-ticks\" stroke=\"#d81b60\" "
        "stroke-width=\"1.5\">\n";
  for (size_t s = 0; s < plan.steps.size(); ++s)
    if (plan.steps[s].recompute) {
      double x = xOf(s + 0.5);
      os << "<line x1=\"" << num(x) << "\" y1=\"" << num(bottom + 6)
         << "\" x2=\"" << num(x) << "\" y2=\"" << num(bottom + 16) << "\"/>\n";
    }
  os << "</g>\n";

  // Forward/backward boundary.
  if (ex.backwardStart < static_cast<int64_t>(plan.steps.size())) {
    double x = xOf(ex.backwardStart);
    os << "<g class=\"phase-boundary\">\n<line x1=\"" << num(x) << "\" y1=\""
       << num(top) << "\" x2=\"" << num(x) << "\" y2=\"" << num(bottom)
       << "\" stroke=\"#222222\" stroke-width=\"1.5\" "
          "stroke-dasharray=\"2,3\"/>\n"
       << "<text x=\"" << num(x - 4) << "\" y=\"" << num(top + 14)
       << "\" text-anchor=\"end\" fill=\"#222222\">forward</text>\n"
       << "<text x=\"" << num(x + 4) << "\" y=\"" << num(top + 14)
       << "\" fill=\"#222222\">backward (step " << ex.backwardStart
       << ")</text>\n</g>\n";
  }

  // Arena and budget lines; labels at opposite ends so they never collide.
  double arenaY = yOf(static_cast<double>(plan.arenaBytes));
  os << "<g class=\"arena-line\">\n<line x1=\"" << num(left) << "\" y1=\""
     << num(arenaY) << "\" x2=\"" << num(right) << "\" y2=\"" << num(arenaY)
     << "\" stroke=\"#555555\" stroke-width=\"1.5\" "
        "stroke-dasharray=\"8,4\"/>\n"
     << "<text x=\"" << num(left + 4) << "\" y=\"" << num(arenaY - 4)
     << "\" fill=\"#555555\">arena " << formatBytes(plan.arenaBytes)
     << "</text>\n</g>\n";
  if (budget) {
    double budgetY = yOf(static_cast<double>(*budget));
    os << "<g class=\"budget-line\">\n<line x1=\"" << num(left) << "\" y1=\""
       << num(budgetY) << "\" x2=\"" << num(right) << "\" y2=\"" << num(budgetY)
       << "\" stroke=\"#d62728\" stroke-width=\"2\" "
          "stroke-dasharray=\"4,3\"/>\n"
       << "<text x=\"" << num(right - 4) << "\" y=\"" << num(budgetY - 4)
       << "\" text-anchor=\"end\" fill=\"#d62728\">budget "
       << formatBytes(*budget) << "</text>\n</g>\n";
  }
  // Peak marker. The label goes above the dot, beside it, where no data can
  // be (nothing is higher than the peak); the halo keeps it readable over
  // the arena and budget lines.
  if (ex.peakStep >= 0) {
    double x = xOf(ex.peakStep + 0.5);
    double y = yOf(static_cast<double>(ex.peakLiveBytes));
    bool leftHalf = x < (left + right) / 2;
    os << "<g class=\"peak\">\n<circle cx=\"" << num(x) << "\" cy=\"" << num(y)
       << "\" r=\"3.5\" fill=\"#000000\"/>\n<text x=\""
       << num(leftHalf ? x + 6 : x - 6) << "\" y=\"" << num(y - 7)
       << "\" text-anchor=\"" << (leftHalf ? "start" : "end")
       << "\" fill=\"#000000\" stroke=\"#ffffff\" stroke-width=\"3\" "
          "paint-order=\"stroke\">peak "
       << formatBytes(ex.peakLiveBytes) << " @ step " << ex.peakStep
       << "</text>\n</g>\n";
  }

  // Legend.
  double ly = top + 4;
  const double lx = right + 24;
  os << "<g class=\"legend\">\n";
  for (int i = kNumBufferRoles; i-- > 0;) {
    BufferRole role = stackOrder[i];
    os << "<rect x=\"" << num(lx) << "\" y=\"" << num(ly)
       << "\" width=\"14\" "
          "height=\"14\" fill=\""
       << roleColors[roleIndex(role)] << "\"/>\n<text x=\"" << num(lx + 20)
       << "\" y=\"" << num(ly + 11) << "\">" << roleName(role) << "</text>\n";
    ly += 20;
  }
  ly += 6;
  auto legendLine = [&](const char *color, const char *dash,
                        const char *label) {
    os << "<line x1=\"" << num(lx) << "\" y1=\"" << num(ly + 7) << "\" x2=\""
       << num(lx + 14) << "\" y2=\"" << num(ly + 7) << "\" stroke=\"" << color
       << "\" stroke-width=\"2\" stroke-dasharray=\"" << dash
       << "\"/>\n<text x=\"" << num(lx + 20) << "\" y=\"" << num(ly + 11)
       << "\">" << label << "</text>\n";
    ly += 20;
  };
  if (budget)
    legendLine("#d62728", "4,3", "budget");
  legendLine("#555555", "8,4", "arena size");
  legendLine("#222222", "2,3", "forward | backward");
  os << "<line x1=\"" << num(lx + 7) << "\" y1=\"" << num(ly + 2) << "\" x2=\""
     << num(lx + 7) << "\" y2=\"" << num(ly + 12)
     << "\" stroke=\"#d81b60\" stroke-width=\"1.5\"/>\n<text x=\""
     << num(lx + 20) << "\" y=\"" << num(ly + 11)
     << "\">recompute step</text>\n";
  ly += 20;
  os << "<circle cx=\"" << num(lx + 7) << "\" cy=\"" << num(ly + 7)
     << "\" r=\"3.5\" fill=\"#000000\"/>\n<text x=\"" << num(lx + 20)
     << "\" y=\"" << num(ly + 11) << "\">peak live bytes</text>\n";
  os << "</g>\n</svg>\n";
  return os.str();
}

nlohmann::json explanationJson(const Plan &plan, const PlanExplanation &ex) {
  using nlohmann::json;
  json out = json::object();
  out["model"] = plan.model;
  out["arena_bytes"] = plan.arenaBytes;
  out["steps"] = plan.steps.size();
  out["backward_start"] = ex.backwardStart;
  out["report"] = plan.report;
  out["peak_live_bytes"] = ex.peakLiveBytes;
  out["peak_step"] = ex.peakStep;
  out["live_bytes"] = ex.liveBytes;
  json byRole = json::object();
  for (int r = 0; r < kNumBufferRoles; ++r)
    byRole[roleName(roleAt(r))] = ex.liveBytesByRole[r];
  out["live_bytes_by_role"] = byRole;
  out["recompute_steps"] = ex.recomputeSteps;
  auto stepOrNull = [&](int64_t s) -> json {
    if (s < 0)
      return nullptr;
    return json{{"index", s},
                {"op", plan.steps[s].op},
                {"phase", phaseName(plan.steps[s].phase)},
                {"recompute", plan.steps[s].recompute}};
  };
  auto bufferFields = [&](json &j, int64_t b) {
    const BufferDesc &buf = plan.buffers[b];
    j["buffer"] = b;
    j["name"] = buf.name;
    j["role"] = roleName(buf.role);
    j["dtype"] = dtypeName(buf.dtype);
    j["shape"] = buf.shape;
    j["bytes"] = buf.bytes;
  };
  json saved = json::array();
  for (const SavedActivation &s : ex.saved) {
    json j = json::object();
    bufferFields(j, s.buffer);
    j["producer"] = stepOrNull(s.producerStep);
    j["first_reader"] = stepOrNull(s.firstLaterReader);
    j["last_reader"] = stepOrNull(s.lastReader);
    j["read_by_recompute"] = s.readByRecompute;
    j["recomputed_as"] = s.recomputedAs >= 0
                             ? json(plan.buffers[s.recomputedAs].name)
                             : json(nullptr);
    j["reason"] = s.reason;
    saved.push_back(j);
  }
  json recomputed = json::array();
  for (const RecomputedTensor &r : ex.recomputed) {
    json j = json::object();
    bufferFields(j, r.buffer);
    j["producer"] = stepOrNull(r.producerStep);
    j["original"] =
        r.original >= 0 ? json(plan.buffers[r.original].name) : json(nullptr);
    j["original_step"] = stepOrNull(r.originalStep);
    j["dropped_after"] = stepOrNull(r.droppedAfter);
    j["consumer"] = stepOrNull(r.consumerStep);
    j["reason"] = r.reason;
    recomputed.push_back(j);
  }
  out["saved"] = saved;
  out["recomputed"] = recomputed;
  out["totals"] = {{"saved_tensors", ex.saved.size()},
                   {"saved_bytes", ex.savedBytes},
                   {"recomputed_tensors", ex.recomputed.size()},
                   {"recomputed_bytes", ex.recomputedBytes}};
  return out;
}

std::string explainUsage() {
  return "usage: remat explain PLAN [-o TIMELINE.svg] [--json OUT.json]\n"
         "\n"
         "Explains a plan file's memory (docs/explain.md): prints the live\n"
         "bytes peak, every activation kept from the forward into the\n"
         "backward pass and every recomputed tensor, largest first.\n"
         "\n"
         "options:\n"
         "  -o FILE        write an SVG memory timeline (live bytes per step,\n"
         "                 by role; budget, arena, forward/backward boundary,\n"
         "                 recompute steps). No SVG without -o.\n"
         "  --json FILE    write the same facts as JSON\n"
         "  --help         this text\n";
}

int explainMain(int argc, char **argv, std::ostream &out, std::ostream &err) {
  std::string planPath, svgPath, jsonPath;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char *flag) -> const char * {
      if (i + 1 >= argc) {
        err << "remat explain: " << flag << " needs a value\n\n"
            << explainUsage();
        return nullptr;
      }
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      out << explainUsage();
      return 0;
    }
    if (arg == "-o" || arg == "--json") {
      const char *v = value(arg.c_str());
      if (!v)
        return 2;
      (arg == "-o" ? svgPath : jsonPath) = v;
    } else if (arg.rfind("--json=", 0) == 0) {
      jsonPath = arg.substr(7);
    } else if (arg.size() > 1 && arg[0] == '-') {
      err << "remat explain: unknown option '" << arg << "'\n\n"
          << explainUsage();
      return 2;
    } else if (planPath.empty()) {
      planPath = arg;
    } else {
      err << "remat explain: more than one plan given ('" << planPath << "', '"
          << arg << "')\n\n"
          << explainUsage();
      return 2;
    }
  }
  if (planPath.empty()) {
    err << "remat explain: no plan given\n\n" << explainUsage();
    return 2;
  }
  try {
    LoadedPlan loaded = loadPlan(planPath);
    const Plan &plan = loaded.plan;
    PlanExplanation ex = explainPlan(plan);
    if (!svgPath.empty())
      writeFileAtomically(
          svgPath, renderTimelineSvg(plan, ex,
                                     "remat explain: " + plan.model + " (" +
                                         baseName(planPath) + ")"));
    if (!jsonPath.empty())
      writeFileAtomically(jsonPath, explanationJson(plan, ex).dump(1) + "\n");
    out << formatExplanation(plan, ex, planPath);
    if (!svgPath.empty())
      out << "\ntimeline: " << svgPath << "\n";
    if (!jsonPath.empty())
      out << (svgPath.empty() ? "\n" : "") << "json: " << jsonPath << "\n";
  } catch (const std::exception &e) {
    err << "remat explain: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

int explainMain(int argc, char **argv) {
  return explainMain(argc, argv, std::cout, std::cerr);
}

} // namespace remat::tools

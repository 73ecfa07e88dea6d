//===- ExplainSvg.cpp - The SVG memory timeline of `remat explain` --------===//
//
// A standalone SVG (`remat explain -o FILE`): live bytes per step stacked by
// role, with the arena, the budget, the forward/backward boundary, the
// recompute steps and the peak marked. The same plan gives the same bytes.
//
//===----------------------------------------------------------------------===//
#include "tools/remat/ExplainCommand.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>

namespace remat::tools {

using namespace remat::runtime;

namespace {

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

} // namespace

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

  static const char *const kScratchColor = "#bdbdbd";
  static const char *roleColors[kNumBufferRoles] = {
      "#4e79a7", // param
      "#f28e2b", // grad
      "#76b7b2", // optimizer
      "#edc948", // input
      "#59a14f", // activation
      "#b07aa1", // temporary
      "#9c755f", // state
      "#ff9da7", // accumulator
  };
  // Stacking order, bottom up: what lives all step first.
  static const BufferRole stackOrder[kNumBufferRoles] = {
      BufferRole::Param,       BufferRole::Optimizer, BufferRole::State,
      BufferRole::Accumulator, BufferRole::Input,     BufferRole::Grad,
      BufferRole::Activation,  BufferRole::Temporary};

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
      std::to_string(plan.steps.size()) + " steps" +
      (plan.microbatches > 1
           ? " run for each of " + std::to_string(plan.microbatches) +
                 " micro-batches (the optimizer's in the last)"
           : std::string()) +
      ", peak " + formatBytes(ex.peakLiveBytes) + ", arena " +
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

  // Stacked live bytes by role, one step-shaped polygon per role, then the
  // kernels' scratch in the arena on top.
  std::vector<uint64_t> below(plan.steps.size(), 0);
  os << "<g stroke=\"none\">\n";
  auto layer = [&](const std::vector<uint64_t> &bytes, const std::string &cls,
                   const char *color, const std::string &title) {
    if (std::none_of(bytes.begin(), bytes.end(),
                     [](uint64_t b) { return b > 0; }))
      return;
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
    os << "<polygon class=\"" << cls << "\" fill=\"" << color
       << "\" points=\"" << points << "\"><title>" << title
       << "</title></polygon>\n";
    for (size_t s = 0; s < bytes.size(); ++s)
      below[s] += bytes[s];
  };
  for (BufferRole role : stackOrder)
    layer(ex.liveBytesByRole[roleIndex(role)],
          std::string("role-") + roleName(role), roleColors[roleIndex(role)],
          roleName(role));
  layer(ex.scratchBytes, "scratch", kScratchColor, "scratch");
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
  os << "<rect x=\"" << num(lx) << "\" y=\"" << num(ly)
     << "\" width=\"14\" height=\"14\" fill=\"" << kScratchColor
     << "\"/>\n<text x=\"" << num(lx + 20) << "\" y=\"" << num(ly + 11)
     << "\">scratch</text>\n";
  ly += 20;
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

} // namespace remat::tools

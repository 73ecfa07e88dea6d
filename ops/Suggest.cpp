//===- Suggest.cpp - "did you mean" for misspelled names ------------------===//
#include "ops/Suggest.h"

#include <algorithm>

namespace remat {

size_t editDistance(const std::string &a, const std::string &b) {
  // Rows i-2, i-1 and i of the (|a|+1) x (|b|+1) table.
  std::vector<size_t> twoBack(b.size() + 1), previous(b.size() + 1),
      current(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t substitute = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitute});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        current[j] = std::min(current[j], twoBack[j - 2] + 1);
    }
    twoBack.swap(previous);
    previous.swap(current);
  }
  return previous[b.size()];
}

std::optional<std::string>
closestName(const std::string &word,
            const std::vector<std::string> &candidates) {
  size_t limit = std::max<size_t>(1, (word.size() + 2) / 3);
  std::optional<std::string> best;
  size_t bestDistance = 0;
  for (const std::string &candidate : candidates) {
    if (candidate == word || candidate.empty())
      continue;
    size_t d = editDistance(word, candidate);
    if (d > limit || d >= word.size())
      continue;
    if (!best || d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

std::string didYouMean(const std::string &word,
                       const std::vector<std::string> &candidates) {
  std::optional<std::string> name = closestName(word, candidates);
  return name ? "; did you mean '" + *name + "'?" : "";
}

} // namespace remat

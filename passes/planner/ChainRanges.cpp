//===- ChainRanges.cpp - Shared rows of the chain DP ----------------------===//
#include "passes/planner/ChainRanges.h"

#include <map>

namespace remat {
namespace planner {
namespace detail {

RangeIndex indexRanges(const Chain &chain) {
  RangeIndex index;
  int L = index.L = chain.length();
  std::map<std::vector<double>, int> kinds;
  std::vector<int> kind(L + 2, -1);
  for (int i = 1; i <= L; ++i) {
    std::vector<double> key{
        chain.forwardCost[i], chain.backwardCost[i],
        double(chain.activationBytes[i]), double(chain.gradientBytes[i]),
        double(chain.forwardRunPeak.empty() ? chain.forwardPeak[i]
                                            : chain.forwardRunPeak[i])};
    for (int o = 0; o < chain.optionCount(i); ++o) {
      KeepOption option = chain.keepOption(i, o);
      key.insert(key.end(),
                 {double(option.keptBytes), option.recomputeCost,
                  double(option.forwardPeak), double(option.backwardPeak)});
    }
    kind[i] = kinds.emplace(key, static_cast<int>(kinds.size())).first->second;
  }
  // common[s][s']: how many stages from s and from s' on have equal kinds.
  int width = L + 2;
  std::vector<int> common(size_t(width) * width, 0);
  for (int s = L; s >= 1; --s)
    for (int other = L; other >= 1; --other)
      if (kind[s] == kind[other])
        common[size_t(s) * width + other] =
            1 + common[size_t(s + 1) * width + other + 1];
  // Only stages of s's own kind can start an equal range.
  std::vector<std::vector<int>> members(kinds.size());
  for (int i = 1; i <= L; ++i)
    members[kind[i]].push_back(i);
  index.row.assign(size_t(L) * L, -1);
  index.first.assign(size_t(L) * L, 0);
  for (int len = 0; len < L; ++len) {
    for (int s = 1; s + len <= L; ++s) {
      int earlier = s;
      for (int other : members[kind[s]]) {
        if (other >= s)
          break;
        if (common[size_t(other) * width + s] > len) {
          earlier = other;
          break;
        }
      }
      if (earlier < s) {
        index.row[index.pair(s, s + len)] =
            index.row[index.pair(earlier, earlier + len)];
        continue;
      }
      index.first[index.pair(s, s + len)] = 1;
      index.row[index.pair(s, s + len)] = index.rows++;
      index.work += len + 1 + chain.optionCount(s);
    }
  }
  return index;
}

} // namespace detail
} // namespace planner
} // namespace remat

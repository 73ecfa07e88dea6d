//===- Suggest.h - "did you mean" for misspelled names ----------*- C++ -*-===//
//
// The one helper every user-facing "unknown NAME" message uses to suggest
// the closest known name: model values, ops, command-line flags, solvers,
// stages, presets, config variables, device profiles. MLIR-free, so the
// runtime-only tools use it too.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_OPS_SUGGEST_H
#define REMAT_OPS_SUGGEST_H

#include <optional>
#include <string>
#include <vector>

namespace remat {

/// The edit distance between `a` and `b` (optimal string alignment:
/// insertions, deletions, substitutions and swaps of two neighbouring
/// characters each cost 1). O(|a|·|b|) time.
size_t editDistance(const std::string &a, const std::string &b);

/// The candidate closest to `word`, or nullopt when none is close enough:
/// a candidate qualifies when its distance is at most a third of `word`'s
/// length (rounded up, at least 1) and smaller than `word`'s length, so a
/// short word is never "corrected" into an unrelated one. Ties go to the
/// earliest candidate; `word` itself is never suggested.
std::optional<std::string>
closestName(const std::string &word,
            const std::vector<std::string> &candidates);

/// "; did you mean 'NAME'?" for the closest candidate, or "" when none is
/// close: for appending to an error message.
std::string didYouMean(const std::string &word,
                       const std::vector<std::string> &candidates);

} // namespace remat

#endif // REMAT_OPS_SUGGEST_H

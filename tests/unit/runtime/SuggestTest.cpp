// Tests of the "did you mean" helper (ops/Suggest.h) that every unknown-name
// message uses.

#include "ops/Suggest.h"

#include <catch2/catch.hpp>

using remat::closestName;
using remat::didYouMean;
using remat::editDistance;

TEST_CASE("edit distance counts insertions, deletions, substitutions and "
          "swaps",
          "[ops]") {
  CHECK(editDistance("", "") == 0);
  CHECK(editDistance("abc", "") == 3);
  CHECK(editDistance("", "abc") == 3);
  CHECK(editDistance("layernorm", "layer_norm") == 1); // insertion
  CHECK(editDistance("--steps", "--step") == 1);       // deletion
  CHECK(editDistance("h200", "h100") == 1);            // substitution
  CHECK(editDistance("heurstic", "heuristic") == 1);
  CHECK(editDistance("n_layr", "n_layer") == 1);
  CHECK(editDistance("form", "from") == 1); // one swap, not two
  CHECK(editDistance("w_out", "w_o") == 2);
  CHECK(editDistance("kitten", "sitting") == 3);
}

TEST_CASE("the closest name is suggested only when it is close", "[ops]") {
  std::vector<std::string> values = {"x", "w_i", "w_o", "h"};
  CHECK(closestName("w_out", values) == std::optional<std::string>("w_o"));
  // A third of the word's length (rounded up): 'w_outt' is 3 from 'w_o'.
  CHECK(closestName("w_outt", values) == std::nullopt);
  // A one-letter word is never corrected into another one-letter word.
  CHECK(closestName("y", values) == std::nullopt);
  CHECK(closestName("zzzzzz", values) == std::nullopt);
  // The word itself is not a suggestion.
  CHECK(closestName("w_o", {"w_o"}) == std::nullopt);
  // Ties go to the earliest candidate.
  CHECK(closestName("ab", {"aa", "bb"}) == std::optional<std::string>("aa"));
  CHECK(closestName("plans", {"planned", "plan"}) ==
        std::optional<std::string>("plan"));
}

TEST_CASE("didYouMean words the suggestion for an error message", "[ops]") {
  CHECK(didYouMean("--step", {"--steps", "--seed"}) ==
        "; did you mean '--steps'?");
  CHECK(didYouMean("--frobnicate", {"--steps", "--seed"}).empty());
  CHECK(didYouMean("anything", {}).empty());
}

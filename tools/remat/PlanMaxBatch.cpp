//===- PlanMaxBatch.cpp - `remat plan --max-batch`: the largest batch ----===//
//
// The largest value of the model's `batch` variable whose step fits the
// budget, unsplit and split into micro-batches (docs/cli.md,
// docs/planner.md "Micro-batches").
//
//===----------------------------------------------------------------------===//
#include "tools/remat/PlanSession.h"

#include "compiler/ModelFile.h"

#include <iostream>

using nlohmann::json;

namespace remat::tools {

int planMaxBatch(const PlanOptions &options, planner::SolverKind kind) {
  using planner::SolverKind;
  planner::SolveOptions solve = solveOptions(options);
  solve.progress = false;
  // A batch fits when its store-all arena does or the solver's plan does;
  // `quick` means the fast solvers only (the heuristic, then per-block),
  // which `auto` falls back to, so auto fits every batch they fit.
  // With --ranks N the search is over the per-rank batch: the config's
  // (global) batch is N times it, so always a multiple of N. With k
  // micro-batches it is over the slice: the batch is k times that.
  const int64_t ranks = std::max<int64_t>(options.modelOptions.ranks, 1);
  int64_t k = 1; // the micro-batches of the search under way
  auto fits = [&](int64_t batch, bool quick) {
    model::ModelOptions m = options.modelOptions;
    m.overrides.push_back({"batch", std::to_string(batch * ranks * k)});
    m.microbatches = k;
    m.autoMicrobatches = false;
    Session s = openSession(options, m, /*warn=*/false);
    int64_t arenaBudget = *options.budget;
    bool ok = s.storeAllArena <= arenaBudget;
    if (!ok && arenaBudget <= 0)
      ok = false;
    else if (!ok && quick)
      ok = fitsWithFastSolvers(s.problem, s.step, arenaBudget, solve,
                               s.alignment);
    else if (!ok)
      ok = attemptWithFallbacks(s.problem, s.step, arenaBudget, kind, solve,
                                s.alignment)
               .ok;
    std::cerr << "remat plan: "
              << (k > 1 ? std::to_string(k) + " micro-batches of " : "")
              << "batch " << batch
              << (k > 1       ? " per micro-batch"
                  : ranks > 1 ? " per rank"
                              : "")
              << (ok ? " fits" : " does not fit")
              << (quick ? " (heuristic, per-block)" : "") << "\n";
    return ok;
  };
  // From a batch that fits: gallop up (+1, +2, +4, ...) to one that does
  // not, then bisect.
  auto largest = [&](int64_t low, bool quick) {
    int64_t step = 1, high = 0;
    for (;;) {
      if (!fits(low + step, quick)) {
        high = low + step;
        break;
      }
      low += step;
      step *= 2;
      if (step > (int64_t(1) << 40))
        return low;
    }
    while (high - low > 1) {
      int64_t mid = low + (high - low) / 2;
      (fits(mid, quick) ? low : high) = mid;
    }
    return low;
  };
  // With auto, the fast solvers bracket the answer in cheap trials, then
  // auto (whose MILP and DP may fit a little more) goes on from there:
  // usually one more trial. Other solvers search alone. 0: no batch fits.
  bool twoPhase = kind == SolverKind::Auto;
  auto search = [&]() -> int64_t {
    int64_t low = 0;
    if (twoPhase && fits(1, true))
      low = largest(1, true);
    if (low == 0 && !fits(1, false))
      return 0;
    return largest(std::max<int64_t>(low, 1), false);
  };
  {
    // Read as one rank: the config's batch need not be a multiple of the
    // ranks, since the search sets it.
    model::ModelOptions one = options.modelOptions;
    one.ranks = one.microbatches = 1;
    one.autoMicrobatches = false;
    model::ModelGraph g = loadModelFile(options, one, /*warn=*/true);
    if (!g.config.count("batch"))
      throw model::ModelError(options.model +
                              ": --max-batch needs a config variable 'batch'");
  }
  const model::ModelOptions &mo = options.modelOptions;
  // The split search: the micro-batches given, else the most allowed
  // (--max-microbatches): the largest batch is k times the largest slice,
  // whose step (with the accumulators) fits.
  const int64_t splitK = mo.microbatchesGiven && !mo.autoMicrobatches
                             ? mo.microbatches
                             : mo.maxMicrobatches;
  const int64_t unsplit = search();
  int64_t perSlice = 0;
  std::string refused;
  if (splitK > 1) {
    k = splitK;
    try {
      perSlice = search();
    } catch (const model::OptionError &e) {
      refused = e.what();
    } catch (const model::ModelError &e) {
      refused = e.what();
    } catch (const std::runtime_error &e) {
      refused = e.what(); // e.g. a loss the split cannot weight
    }
  }
  const std::string budget = std::to_string(*options.budget);
  const std::string scope =
      ranks > 1 ? " per rank on " + std::to_string(ranks) + " ranks" : "";
  if (unsplit == 0)
    std::cout << "no batch fits " << budget << " bytes" << scope
              << " unsplit\n";
  else if (ranks > 1)
    std::cout << "largest global batch that fits " << budget << " bytes"
              << scope << ": " << unsplit * ranks << " (" << unsplit
              << " per rank)\n";
  else
    std::cout << "largest batch that fits " << budget << " bytes: " << unsplit
              << "\n";
  json out = {{"budget_bytes", *options.budget},
              {"max_batch", unsplit * ranks}};
  if (ranks > 1) {
    out["ranks"] = ranks;
    out["max_batch_per_rank"] = unsplit;
  }
  if (splitK > 1) {
    if (!refused.empty())
      std::cout << "split into " << splitK
                << " micro-batches: not available: " << refused << "\n";
    else if (perSlice == 0)
      std::cout << "split into " << splitK << " micro-batches: no batch fits "
                << budget << " bytes" << scope << "\n";
    else
      std::cout << "split into " << splitK << " micro-batches"
                << (mo.microbatchesGiven ? "" : " (--max-microbatches)") << ": "
                << perSlice * splitK * ranks << " (micro-batches of " << perSlice
                << (ranks > 1 ? " per rank" : "") << ")\n";
    out["microbatches"] = splitK;
    out["max_batch_split"] = perSlice * splitK * ranks;
    out["microbatch_samples"] = perSlice;
    if (!refused.empty())
      out["split_refused"] = refused;
  }
  writeJson(options, out);
  return unsplit == 0 && perSlice == 0 ? 1 : 0;
}

} // namespace remat::tools

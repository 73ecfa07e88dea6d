//===- TestUtil.h - Shared helpers for the planner tests --------*- C++ -*-===//
#ifndef REMAT_TESTS_UNIT_PLANNER_TESTUTIL_H
#define REMAT_TESTS_UNIT_PLANNER_TESTUTIL_H

#include "passes/planner/Solvers.h"

#include <cstdlib>
#include <random>
#include <string>

namespace remat {
namespace planner {
namespace test {

/// The diamond a -> {b, c} -> d with 100 persistent bytes:
///   a: 10 bytes, b: 20 (reads a), c: 30 (reads a), d: 5 (reads b, c).
inline Problem diamond() {
  Problem problem;
  problem.persistentBytes = 100;
  problem.addNode("a", 1.0, 10, {});
  problem.addNode("b", 2.0, 20, {0});
  problem.addNode("c", 3.0, 30, {0});
  problem.addNode("d", 4.0, 5, {1, 2});
  return problem;
}

/// A seeded random DAG: each node reads 1..maxOperands earlier nodes from
/// the last `window` ones (node 0 reads nothing), with random costs and
/// sizes; the second half is marked backward so the baselines see a
/// forward part.
inline Problem randomDag(unsigned seed, int n, int maxOperands = 3,
                         int window = 6) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> bytes(1, 20);
  std::uniform_int_distribution<int> cost(1, 10);
  Problem problem;
  for (int k = 0; k < n; ++k) {
    std::vector<int> operands;
    if (k > 0) {
      int count = std::uniform_int_distribution<int>(1, maxOperands)(rng);
      for (int j = 0; j < count; ++j) {
        int lo = std::max(0, k - window);
        operands.push_back(std::uniform_int_distribution<int>(lo, k - 1)(rng));
      }
    }
    problem.addNode("n" + std::to_string(k), cost(rng), bytes(rng), operands,
                    true, -1, /*backward=*/k >= n / 2);
  }
  problem.normalize();
  return problem;
}

/// A seeded random training step: a forward DAG of `forwardNodes` nodes
/// (each reads its predecessor and, now and then, a skip connection from
/// the last `window` nodes), a loss, and the mirrored backward part built
/// as autodiff would: the gradient of forward node k reads k's output,
/// k's operands and the gradients of k's forward consumers.
inline Problem randomTrainingDag(unsigned seed, int forwardNodes,
                                 int window = 8) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> bytes(4, 40);
  std::uniform_int_distribution<int> cost(1, 10);
  std::uniform_int_distribution<int> coin(0, 3);
  Problem problem;
  std::vector<std::vector<int>> forwardUsers(forwardNodes);
  for (int k = 0; k < forwardNodes; ++k) {
    std::vector<int> operands;
    if (k > 0)
      operands.push_back(k - 1);
    if (k > 1 && coin(rng) == 0)
      operands.push_back(std::uniform_int_distribution<int>(
          std::max(0, k - window), k - 2)(rng));
    for (int op : operands)
      forwardUsers[op].push_back(k);
    problem.addNode("f" + std::to_string(k), cost(rng), bytes(rng), operands);
  }
  int loss = problem.addNode("loss", 1, 1, {forwardNodes - 1}, true, -1, true);
  std::vector<int> gradient(forwardNodes, -1);
  for (int k = forwardNodes - 1; k >= 0; --k) {
    std::vector<int> operands = problem.nodes[k].operands;
    operands.push_back(k);
    if (forwardUsers[k].empty())
      operands.push_back(loss);
    for (int user : forwardUsers[k])
      operands.push_back(gradient[user]);
    gradient[k] = problem.addNode("g" + std::to_string(k), 2 * cost(rng),
                                  problem.nodes[k].bytes, operands, true, -1,
                                  true);
  }
  problem.normalize();
  return problem;
}

/// Directory of the Checkmate graphs, or "" when absent.
inline std::string checkmateGraphsDir() {
  std::string dir;
  if (const char *env = std::getenv("REMAT_CHECKMATE_GRAPHS"))
    dir = env;
  else
    dir = std::string(REMAT_SOURCE_DIR) + "/models/checkmate-graphs";
  std::string probe = dir + "/vgg16_bs256_224x224_train.json";
  if (FILE *file = std::fopen(probe.c_str(), "r")) {
    std::fclose(file);
    return dir;
  }
  return "";
}

/// The exact MILP in Checkmate mode with a 20 s limit: the reference runs
/// of the brute-force and exhaustive comparisons.
inline SolveResult solveExactCheckmate(const Problem &problem,
                                       int64_t budget) {
  SolveOptions options;
  options.mode = CountingMode::Checkmate;
  options.timeLimitSeconds = 20;
  return solve(problem, budget, SolverKind::Exact, options);
}

/// True when `order` is a permutation of the nodes in which every operand
/// comes before its reader.
inline bool isTopologicalOrder(const Problem &problem,
                               const std::vector<int> &order) {
  int n = problem.size();
  if (static_cast<int>(order.size()) != n)
    return false;
  std::vector<int> position(n, -1);
  for (int p = 0; p < n; ++p) {
    if (order[p] < 0 || order[p] >= n || position[order[p]] >= 0)
      return false;
    position[order[p]] = p;
  }
  for (int k = 0; k < n; ++k)
    for (int op : problem.nodes[k].operands)
      if (position[op] >= position[k])
        return false;
  return true;
}

} // namespace test
} // namespace planner
} // namespace remat

#endif // REMAT_TESTS_UNIT_PLANNER_TESTUTIL_H

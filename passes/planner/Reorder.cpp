//===- Reorder.cpp - Alternative topological orders for the planner ------===//
#include "passes/planner/Reorder.h"

#include <algorithm>

namespace remat {
namespace planner {

namespace {

/// List scheduling by net freed bytes (see Reorder.h).
std::vector<int> greedyMemoryOrder(const Problem &problem,
                                   const UseInfo &uses) {
  int n = problem.size();
  std::vector<int> remainingOperands(n), remainingConsumers(n);
  for (int k = 0; k < n; ++k) {
    remainingOperands[k] = static_cast<int>(problem.nodes[k].operands.size());
    remainingConsumers[k] = static_cast<int>(uses.consumers[k].size());
  }
  std::vector<int> ready;
  for (int k = 0; k < n; ++k)
    if (remainingOperands[k] == 0)
      ready.push_back(k);
  std::vector<int> order;
  order.reserve(n);
  while (!ready.empty()) {
    size_t best = 0;
    int64_t bestScore = 0;
    for (size_t r = 0; r < ready.size(); ++r) {
      int k = ready[r];
      const Node &node = problem.nodes[k];
      int64_t score = 0;
      for (int op : node.operands)
        if (remainingConsumers[op] == 1 && !uses.required[op])
          score += problem.nodes[op].bytes;
      if (!uses.consumers[k].empty() || uses.required[k])
        score -= node.bytes;
      if (r == 0 || score > bestScore ||
          (score == bestScore && k < ready[best])) {
        best = r;
        bestScore = score;
      }
    }
    int k = ready[best];
    ready[best] = ready.back();
    ready.pop_back();
    order.push_back(k);
    for (int op : problem.nodes[k].operands)
      --remainingConsumers[op];
    for (int user : uses.consumers[k])
      if (--remainingOperands[user] == 0)
        ready.push_back(user);
  }
  return order;
}

/// Depth-first post-order, operands by decreasing working set (Reorder.h).
std::vector<int> subtreeFirstOrder(const Problem &problem,
                                   const UseInfo &uses) {
  int n = problem.size();
  // need[k]: the modeled peak of evaluating k's inputs in the best
  // sequential order and then k (Liu 1987 for trees): children sorted by
  // need - bytes, descending.
  std::vector<int64_t> need(n, 0);
  std::vector<std::vector<int>> sortedOperands(n);
  for (int k = 0; k < n; ++k) {
    std::vector<int> ops = problem.nodes[k].operands;
    std::stable_sort(ops.begin(), ops.end(), [&](int a, int b) {
      return need[a] - problem.nodes[a].bytes >
             need[b] - problem.nodes[b].bytes;
    });
    int64_t held = 0, peak = 0;
    for (int op : ops) {
      peak = std::max(peak, held + need[op]);
      held += problem.nodes[op].bytes;
    }
    need[k] = std::max(peak, held + problem.nodes[k].bytes);
    sortedOperands[k] = std::move(ops);
  }
  std::vector<char> visited(n, 0);
  std::vector<int> order;
  order.reserve(n);
  // Iterative DFS: (node, next operand position).
  std::vector<std::pair<int, size_t>> stack;
  auto visit = [&](int root) {
    if (visited[root])
      return;
    visited[root] = 1;
    stack.push_back({root, 0});
    while (!stack.empty()) {
      auto &[k, next] = stack.back();
      if (next < sortedOperands[k].size()) {
        int op = sortedOperands[k][next++];
        if (!visited[op]) {
          visited[op] = 1;
          stack.push_back({op, 0});
        }
        continue;
      }
      order.push_back(k);
      stack.pop_back();
    }
  };
  for (int k = 0; k < n; ++k)
    if (uses.consumers[k].empty() || uses.required[k])
      visit(k);
  for (int k = 0; k < n; ++k) // unreachable from any sink: none, but safe
    visit(k);
  return order;
}

} // namespace


std::vector<NodeOrder> candidateOrders(const Problem &problem) {
  UseInfo uses(problem);
  std::vector<int> identity(problem.size());
  for (int k = 0; k < problem.size(); ++k)
    identity[k] = k;
  std::vector<NodeOrder> orders;
  auto offer = [&](const char *name, std::vector<int> order) {
    if (order == identity)
      return;
    for (const NodeOrder &other : orders)
      if (other.order == order)
        return;
    orders.push_back({name, std::move(order)});
  };
  offer("greedy-memory", greedyMemoryOrder(problem, uses));
  offer("subtree-first", subtreeFirstOrder(problem, uses));
  return orders;
}

Problem permuteProblem(const Problem &problem, const std::vector<int> &order) {
  int n = problem.size();
  std::vector<int> position(n);
  for (int p = 0; p < n; ++p)
    position[order[p]] = p;
  Problem permuted;
  permuted.persistentBytes = problem.persistentBytes;
  permuted.nodes.reserve(n);
  for (int p = 0; p < n; ++p) {
    Node node = problem.nodes[order[p]];
    for (int &op : node.operands)
      op = position[op];
    permuted.nodes.push_back(std::move(node));
  }
  for (int r : problem.requiredOutputs)
    permuted.requiredOutputs.push_back(position[r]);
  permuted.normalize();
  return permuted;
}

EventList unpermuteSchedule(const EventList &schedule,
                            const std::vector<int> &order) {
  EventList result = schedule;
  for (Event &event : result.events)
    event.node = order[event.node];
  return result;
}

} // namespace planner
} // namespace remat

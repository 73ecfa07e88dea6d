//===- Problem.cpp - The rematerialization planning problem ---------------===//
#include "passes/planner/Problem.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace remat {
namespace planner {

int Problem::addNode(std::string name, double cost, int64_t bytes,
                     std::vector<int> operands, bool recomputable, int block,
                     bool backward) {
  Node node;
  node.name = std::move(name);
  node.cost = cost;
  node.bytes = bytes;
  node.operands = std::move(operands);
  node.recomputable = recomputable;
  node.block = block;
  node.backward = backward;
  nodes.push_back(std::move(node));
  return size() - 1;
}

void Problem::normalize() {
  for (Node &node : nodes) {
    std::sort(node.operands.begin(), node.operands.end());
    node.operands.erase(std::unique(node.operands.begin(), node.operands.end()),
                        node.operands.end());
  }
  std::sort(requiredOutputs.begin(), requiredOutputs.end());
  requiredOutputs.erase(
      std::unique(requiredOutputs.begin(), requiredOutputs.end()),
      requiredOutputs.end());
}

std::string Problem::validate() const {
  std::ostringstream os;
  if (persistentBytes < 0)
    return "persistent bytes are negative";
  for (int k = 0; k < size(); ++k) {
    const Node &node = nodes[k];
    if (node.bytes < 0) {
      os << "node " << k << " ('" << node.name << "') has negative bytes";
      return os.str();
    }
    if (!(node.cost >= 0.0) || !std::isfinite(node.cost)) {
      os << "node " << k << " ('" << node.name
         << "') has a negative or non-finite cost";
      return os.str();
    }
    for (int op : node.operands) {
      if (op < 0 || op >= k) {
        os << "node " << k << " ('" << node.name << "') reads node " << op
           << ", which does not precede it in the topological order";
        return os.str();
      }
    }
  }
  for (int r : requiredOutputs) {
    if (r < 0 || r >= size()) {
      os << "required output " << r << " is not a node";
      return os.str();
    }
  }
  return "";
}

double Problem::totalCost() const {
  double total = 0;
  for (const Node &node : nodes)
    total += node.cost;
  return total;
}

UseInfo::UseInfo(const Problem &problem) {
  int n = problem.size();
  consumers.assign(n, {});
  lastUse.resize(n);
  required.assign(n, 0);
  for (int k = 0; k < n; ++k) {
    const std::vector<int> &ops = problem.nodes[k].operands;
    for (size_t j = 0; j < ops.size(); ++j) {
      // Operands may be unnormalized; skip repeats of the same operand.
      if (std::find(ops.begin(), ops.begin() + j, ops[j]) != ops.begin() + j)
        continue;
      consumers[ops[j]].push_back(k);
    }
  }
  for (int i = 0; i < n; ++i)
    lastUse[i] = consumers[i].empty() ? i : consumers[i].back();
  for (int r : problem.requiredOutputs)
    required[r] = 1;
  // reach[i]: the last stage reading i or, through recomputable nodes, any
  // value that may have to be recomputed from i.
  std::vector<int> reach(n);
  for (int i = n - 1; i >= 0; --i) {
    reach[i] = lastUse[i];
    for (int user : consumers[i])
      if (problem.nodes[user].recomputable)
        reach[i] = std::max(reach[i], reach[user]);
  }
  pinnedUntil.resize(n);
  for (int i = 0; i < n; ++i)
    pinnedUntil[i] = problem.nodes[i].recomputable ? lastUse[i] : reach[i];
}

int UseInfo::nextUseAfter(int node, int stage) const {
  const std::vector<int> &users = consumers[node];
  auto it = std::upper_bound(users.begin(), users.end(), stage);
  return it == users.end() ? -1 : *it;
}

std::string LowerBound::describe(const Problem &problem) const {
  std::ostringstream os;
  os << "persistent " << problem.persistentBytes;
  if (node >= 0) {
    os << " + output of '" << problem.nodes[node].name << "' (node " << node
       << ") " << outputBytes;
    if (outputBytes == 0 && problem.nodes[node].mayReuseOperand)
      os << " (in place over an operand)";
    os << " + its operands " << operandBytes;
    if (pinnedBytes)
      os << " + values that cannot be recomputed " << pinnedBytes;
  }
  return os.str();
}

LowerBound computeLowerBound(const Problem &problem, bool arena) {
  UseInfo uses(problem);
  int n = problem.size();
  LowerBound best;
  best.bytes = problem.persistentBytes;
  // Non-recomputable values are pinned from their compute to their last use
  // (to the end when required); a sweep keeps their running sum.
  std::vector<int64_t> pinnedEndDelta(n + 1, 0);
  int64_t pinned = 0;
  for (int k = 0; k < n; ++k) {
    pinned -= pinnedEndDelta[k];
    const Node &node = problem.nodes[k];
    int64_t operandBytes = 0;
    int64_t pinnedOperands = 0;
    for (size_t j = 0; j < node.operands.size(); ++j) {
      int op = node.operands[j];
      if (std::find(node.operands.begin(), node.operands.begin() + j, op) !=
          node.operands.begin() + j)
        continue;
      operandBytes += problem.nodes[op].bytes;
      if (!problem.nodes[op].recomputable)
        pinnedOperands += problem.nodes[op].bytes;
    }
    // `pinned` counts pinned values computed before k that are still
    // needed at k; operands among them are already in operandBytes.
    int64_t otherPinned = pinned - pinnedOperands;
    int64_t output = arena && node.mayReuseOperand ? 0 : node.bytes;
    int64_t total =
        problem.persistentBytes + output + operandBytes + otherPinned;
    if (total > best.bytes || best.node < 0) {
      best.bytes = total;
      best.node = k;
      best.outputBytes = output;
      best.operandBytes = operandBytes;
      best.pinnedBytes = otherPinned;
    }
    if (!node.recomputable) {
      int end = uses.required[k] ? n : uses.lastUse[k];
      // Live during stages k+1..end (inclusive), so removed at end+1.
      if (end > k) {
        pinned += node.bytes;
        pinnedEndDelta[std::min(end + 1, n)] += node.bytes;
      }
    }
  }
  return best;
}

std::vector<char> forwardMask(const Problem &problem) {
  std::vector<char> mask(problem.size(), 1);
  for (int k = 0; k < problem.size(); ++k)
    mask[k] = problem.nodes[k].backward ? 0 : 1;
  return mask;
}

std::vector<int> articulationPoints(const Problem &problem,
                                    const std::vector<char> &includeNode) {
  int n = problem.size();
  // lastIncludedUse[i]: last included consumer of included node i.
  std::vector<int> lastIncludedUse(n, -1);
  for (int k = 0; k < n; ++k) {
    if (!includeNode[k])
      continue;
    for (int op : problem.nodes[k].operands)
      if (includeNode[op])
        lastIncludedUse[op] = std::max(lastIncludedUse[op], k);
  }
  std::vector<int> points;
  int reach = -1; // max lastIncludedUse over included nodes before k
  for (int k = 0; k < n; ++k) {
    if (!includeNode[k])
      continue;
    if (reach <= k)
      points.push_back(k);
    reach = std::max(reach, lastIncludedUse[k]);
  }
  return points;
}

} // namespace planner
} // namespace remat

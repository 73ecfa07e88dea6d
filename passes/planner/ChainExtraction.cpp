//===- ChainExtraction.cpp - A chain of stages from a planner Problem -----===//
#include "passes/planner/ChainDp.h"
#include "passes/planner/KeepOptions.h"

#include <algorithm>
#include <map>
#include <string>

namespace remat {
namespace planner {

using detail::generateOptions;
using detail::sequencePeak;
using detail::StageOptions;
using detail::StageShape;

namespace {

void appendBits(std::string &key, const void *data, size_t size) {
  key.append(static_cast<const char *>(data), size);
}

} // namespace

bool chainFromProblem(const Problem &problem, ChainMapping &mapping,
                      std::string &reason, int maxKeepOptions) {
  int n = problem.size();
  std::vector<char> forward = forwardMask(problem);
  if (std::all_of(forward.begin(), forward.end(), [](char c) { return c; })) {
    reason = "no node is marked backward";
    return false;
  }
  mapping = ChainMapping();
  // Leading non-recomputable forward sources stay outside the chain.
  std::vector<char> inChain(n, 0);
  for (int k = 0; k < n; ++k) {
    if (!forward[k])
      continue;
    if (!problem.nodes[k].recomputable) {
      if (!problem.nodes[k].operands.empty()) {
        reason = "a non-recomputable forward node has operands";
        return false;
      }
      mapping.prefixNodes.push_back(k);
      continue;
    }
    inChain[k] = 1;
  }
  std::vector<int> points = articulationPoints(problem, inChain);
  if (points.empty()) {
    reason = "the forward part is empty";
    return false;
  }
  int L = static_cast<int>(points.size());
  std::vector<int> segmentOf(n, 0);
  mapping.segmentNodes.assign(L + 1, {});
  mapping.backwardNodes.assign(L + 1, {});
  {
    int segment = 1;
    for (int k = 0; k < n; ++k) {
      if (!inChain[k])
        continue;
      segmentOf[k] = segment;
      mapping.segmentNodes[segment].push_back(k);
      if (segment <= L && k == points[segment - 1])
        ++segment;
    }
  }
  std::vector<char> isPoint(n, 0);
  for (int p : points)
    isPoint[p] = 1;
  std::vector<int> stageOf(n, 0);
  // a_L, the last forward value (the loss), may be read by backward nodes
  // of every stage (the compiler makes each backward op read the loss so
  // that the backward starts after it). Such reads do not place a node in
  // stage L; a_L then stays live to the end, outside the DP's memory.
  int lastValue = points[L - 1];
  bool lastValueHeld = false;
  int previousStage = L;
  for (int k = 0; k < n; ++k) {
    if (forward[k])
      continue;
    int stage = 0;
    int backwardMin = L;
    bool hasBackwardOperand = false;
    bool readsLastValue = false;
    for (int op : problem.nodes[k].operands) {
      if (op == lastValue)
        readsLastValue = true;
      else if (inChain[op])
        stage = std::max(stage, segmentOf[op]);
      else if (!forward[op]) {
        hasBackwardOperand = true;
        backwardMin = std::min(backwardMin, stageOf[op]);
      }
    }
    // A node that reads no forward value joins the current stage (it may
    // come late: memory-aware orders delay weight updates).
    if (stage == 0)
      stage = hasBackwardOperand ? std::min(backwardMin, previousStage)
                                 : previousStage;
    lastValueHeld |= readsLastValue && stage < L;
    for (int op : problem.nodes[k].operands) {
      if (!inChain[op] || op == lastValue)
        continue;
      int segment = segmentOf[op];
      bool ok = segment == stage || (segment == stage - 1 && isPoint[op]);
      if (!ok) {
        reason = "backward node '" + problem.nodes[k].name +
                 "' reads forward values of an earlier segment";
        return false;
      }
    }
    if (stage > previousStage) {
      reason = "backward node '" + problem.nodes[k].name +
               "' is out of stage order";
      return false;
    }
    previousStage = stage;
    stageOf[k] = stage;
    mapping.backwardNodes[stage].push_back(k);
  }
  UseInfo uses(problem);
  if (lastValueHeld || uses.required[lastValue])
    mapping.heldBytes = problem.nodes[lastValue].bytes;
  Chain &chain = mapping.chain;
  chain.forwardCost.assign(L + 1, 0);
  chain.backwardCost.assign(L + 1, 0);
  chain.activationBytes.assign(L + 1, 0);
  chain.keptBytes.assign(L + 1, 0);
  chain.gradientBytes.assign(L + 1, 0);
  chain.forwardPeak.assign(L + 1, 0);
  chain.forwardRunPeak.assign(L + 1, 0);
  chain.backwardPeak.assign(L + 1, 0);
  chain.dropOptions.assign(L + 1, {});
  mapping.recomputeNodes.assign(L + 1, {{}});
  // g_j: the backward values live between B_{j+1} and B_j, i.e. outputs
  // of stages > j read by stages <= j, and required outputs (live to the
  // end; so they are not counted outside the DP's memory).
  for (int i = 1; i <= L; ++i) {
    for (int k : mapping.backwardNodes[i]) {
      chain.backwardCost[i] += problem.nodes[k].cost;
      int lastStage = uses.required[k] ? 0 : i;
      for (int user : uses.consumers[k])
        if (!forward[user])
          lastStage = std::min(lastStage, stageOf[user]);
      for (int j = lastStage; j < i; ++j)
        chain.gradientBytes[j] += problem.nodes[k].bytes;
    }
  }

  // Per stage: its shape, keyed by costs, sizes, flags and operands
  // (stage positions; -1 for a_{i-1}, -2 for any other input), and its
  // keep options, generated once per distinct key.
  struct Generated {
    StageOptions options;
    int64_t runPeak = 0;
  };
  std::map<std::string, Generated> generatedFor;
  std::vector<int> position(n, -1);
  for (int i = 1; i <= L; ++i) {
    const std::vector<int> &segment = mapping.segmentNodes[i];
    const std::vector<int> &backward = mapping.backwardNodes[i];
    int previousPoint = i > 1 ? points[i - 2] : -1;
    std::vector<int> stageNodes = segment;
    stageNodes.insert(stageNodes.end(), backward.begin(), backward.end());
    for (size_t p = 0; p < stageNodes.size(); ++p)
      position[stageNodes[p]] = static_cast<int>(p);
    // Gradient inputs: outputs of later stages that B_i reads.
    for (int k : backward)
      for (int op : problem.nodes[k].operands)
        if (!forward[op] && stageOf[op] > i && position[op] < 0) {
          position[op] = static_cast<int>(stageNodes.size());
          stageNodes.push_back(op);
        }
    auto encode = [&](int op) {
      if (position[op] >= 0)
        return position[op];
      return op == previousPoint ? -1 : -2;
    };
    StageShape shape;
    shape.segmentSize = static_cast<int>(segment.size());
    shape.backwardSize = static_cast<int>(backward.size());
    std::string key;
    for (size_t p = 0; p < stageNodes.size(); ++p) {
      int k = stageNodes[p];
      const Node &node = problem.nodes[k];
      char flags = 0;
      if (static_cast<int>(p) >= shape.segmentSize + shape.backwardSize) {
        // An input: its size and whether it outlives B_i.
        bool outlives = uses.required[k] != 0;
        for (int user : uses.consumers[k])
          outlives |= !forward[user] && stageOf[user] < i;
        shape.outlives.push_back(outlives);
        shape.cost.push_back(0.0);
        shape.bytes.push_back(node.bytes);
        shape.operands.emplace_back();
        flags = static_cast<char>(16 | outlives << 3);
        appendBits(key, &node.bytes, sizeof(node.bytes));
        appendBits(key, &flags, 1);
        key.push_back(';');
        continue;
      }
      if (forward[k]) {
        bool readByBackward = k == points[i - 1];
        for (int user : uses.consumers[k])
          readByBackward |= !forward[user];
        bool droppable =
            readByBackward && k != points[i - 1] && !uses.required[k];
        shape.readByBackward.push_back(readByBackward);
        shape.droppable.push_back(droppable);
        flags = static_cast<char>(readByBackward | droppable << 1);
      } else {
        bool outlives = uses.required[k] != 0;
        for (int user : uses.consumers[k])
          outlives |= !forward[user] && stageOf[user] < i;
        shape.outlives.push_back(outlives);
        flags = static_cast<char>(4 | outlives << 3);
      }
      shape.cost.push_back(node.cost);
      shape.bytes.push_back(node.bytes);
      shape.operands.emplace_back();
      appendBits(key, &node.cost, sizeof(node.cost));
      appendBits(key, &node.bytes, sizeof(node.bytes));
      appendBits(key, &flags, 1);
      for (int op : node.operands) {
        int code = encode(op);
        if (code >= 0)
          shape.operands.back().push_back(code);
        appendBits(key, &code, sizeof(code));
      }
      key.push_back(';');
    }
    auto found = generatedFor.find(key);
    if (found == generatedFor.end()) {
      ++mapping.distinctStages;
      Generated generated;
      generated.options = generateOptions(shape, maxKeepOptions);
      // A run that keeps only a_i (and required outputs).
      std::vector<int> run(shape.segmentSize);
      std::vector<char> stays(shape.cost.size(), 0), initial = stays;
      for (int p = 0; p < shape.segmentSize; ++p) {
        run[p] = p;
        stays[p] = shape.readByBackward[p] && !shape.droppable[p];
      }
      generated.runPeak = sequencePeak(shape, run, stays, initial);
      found = generatedFor.emplace(key, std::move(generated)).first;
    }
    for (int k : stageNodes)
      position[k] = -1;
    const StageOptions &options = found->second.options;
    chain.activationBytes[i] = problem.nodes[points[i - 1]].bytes;
    for (int k : segment)
      chain.forwardCost[i] += problem.nodes[k].cost;
    chain.keptBytes[i] = options.front().option.keptBytes;
    chain.forwardPeak[i] = options.front().option.forwardPeak;
    chain.backwardPeak[i] = options.front().option.backwardPeak;
    chain.forwardRunPeak[i] = found->second.runPeak;
    // B_i's recomputes must follow a backward node of stage i + 1: after
    // forward nodes of later segments they would break Checkmate's order.
    if (i < L && mapping.backwardNodes[i + 1].empty())
      continue;
    for (size_t o = 1; o < options.size(); ++o) {
      chain.dropOptions[i].push_back(options[o].option);
      std::vector<int> nodes;
      for (int p : options[o].recompute)
        nodes.push_back(segment[p]);
      mapping.recomputeNodes[i].push_back(std::move(nodes));
    }
  }
  // A held a_L is outside the DP's memory, so not in stage L's sizes.
  int64_t held = mapping.heldBytes;
  chain.activationBytes[L] -= held;
  chain.keptBytes[L] -= held;
  chain.forwardPeak[L] -= held;
  chain.forwardRunPeak[L] -= held;
  for (KeepOption &option : chain.dropOptions[L]) {
    option.keptBytes -= held;
    option.forwardPeak -= held;
  }
  return true;
}

} // namespace planner
} // namespace remat

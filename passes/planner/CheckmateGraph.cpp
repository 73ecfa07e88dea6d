//===- CheckmateGraph.cpp - Reader for Checkmate benchmark graphs ---------===//
#include "passes/planner/CheckmateGraph.h"
#include "passes/planner/Solvers.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace remat {
namespace planner {

using nlohmann::json;

namespace {

bool readInteger(const json &object, const char *key, int64_t &value,
                 std::string &error, const std::string &where) {
  auto it = object.find(key);
  if (it == object.end()) {
    error = where + " has no \"" + key + "\"";
    return false;
  }
  if (it->is_number_integer()) {
    value = it->get<int64_t>();
    return true;
  }
  if (it->is_number_float()) {
    double number = it->get<double>();
    if (std::isfinite(number) && number == std::floor(number) &&
        std::fabs(number) < 9e18) {
      value = static_cast<int64_t>(number);
      return true;
    }
  }
  error = where + ": \"" + key + "\" is not an integer";
  return false;
}

} // namespace

bool parseCheckmateGraph(const std::string &text, CheckmateGraph &graph,
                         std::string &error) {
  json document = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) {
    error = "not valid JSON";
    return false;
  }
  if (!document.is_object()) {
    error = "the top level is not a JSON object";
    return false;
  }
  auto nodes = document.find("nodes");
  auto links = document.find("links");
  if (nodes == document.end() || !nodes->is_array()) {
    error = "missing \"nodes\" array";
    return false;
  }
  if (links == document.end() || !links->is_array()) {
    error = "missing \"links\" array";
    return false;
  }
  graph = CheckmateGraph();
  auto meta = document.find("graph");
  if (meta != document.end() && meta->is_object()) {
    auto name = meta->find("name");
    if (name != meta->end() && name->is_string())
      graph.name = name->get<std::string>();
  }
  int n = static_cast<int>(nodes->size());
  Problem &problem = graph.problem;
  problem.nodes.assign(n, Node());
  std::vector<char> seen(n, 0);
  for (int index = 0; index < n; ++index) {
    const json &entry = (*nodes)[index];
    std::string where = "node #" + std::to_string(index);
    if (!entry.is_object()) {
      error = where + " is not an object";
      return false;
    }
    int64_t id = 0, bytes = 0;
    if (!readInteger(entry, "id", id, error, where))
      return false;
    where = "node " + std::to_string(id);
    if (id < 0 || id >= n) {
      error = where + ": id out of range 0.." + std::to_string(n - 1) +
              " (ids must be 0..n-1)";
      return false;
    }
    if (seen[id]) {
      error = where + ": duplicate id";
      return false;
    }
    seen[id] = 1;
    if (!readInteger(entry, "cost_ram", bytes, error, where))
      return false;
    if (bytes < 0) {
      error = where + ": negative \"cost_ram\"";
      return false;
    }
    auto cost = entry.find("cost_cpu");
    if (cost == entry.end() || !cost->is_number()) {
      error = where + " has no numeric \"cost_cpu\"";
      return false;
    }
    double costValue = cost->get<double>();
    if (!std::isfinite(costValue) || costValue < 0) {
      error = where + ": \"cost_cpu\" must be finite and non-negative";
      return false;
    }
    Node &node = problem.nodes[id];
    node.cost = costValue;
    node.bytes = bytes;
    auto name = entry.find("name");
    node.name = name != entry.end() && name->is_string()
                    ? name->get<std::string>()
                    : "node" + std::to_string(id);
    auto backward = entry.find("backward");
    node.backward = backward != entry.end() && backward->is_boolean() &&
                    backward->get<bool>();
  }
  for (size_t index = 0; index < links->size(); ++index) {
    const json &entry = (*links)[index];
    std::string where = "link #" + std::to_string(index);
    if (!entry.is_object()) {
      error = where + " is not an object";
      return false;
    }
    int64_t source = 0, target = 0;
    if (!readInteger(entry, "source", source, error, where) ||
        !readInteger(entry, "target", target, error, where))
      return false;
    if (source < 0 || source >= n || target < 0 || target >= n) {
      error = where + " (" + std::to_string(source) + " -> " +
              std::to_string(target) + ") names a node that does not exist";
      return false;
    }
    if (source >= target) {
      error = where + " (" + std::to_string(source) + " -> " +
              std::to_string(target) +
              ") goes backwards: node ids must be a topological order";
      return false;
    }
    problem.nodes[target].operands.push_back(static_cast<int>(source));
  }
  problem.normalize();
  error = problem.validate();
  return error.empty();
}

bool readCheckmateGraph(const std::string &path, CheckmateGraph &graph,
                        std::string &error) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    error = path + ": is a directory, not a graph file (--graph takes one "
                   "networkx node-link JSON file, e.g. "
                   "models/checkmate-graphs/vgg16_bs256_224x224_train.json)";
    return false;
  }
  std::ifstream file(path);
  if (!file) {
    error = path + ": cannot open the graph file: " + std::strerror(errno);
    return false;
  }
  std::stringstream buffer;
  buffer << file.rdbuf();
  if (!parseCheckmateGraph(buffer.str(), graph, error)) {
    error = path + ": " + error;
    return false;
  }
  if (graph.name.empty())
    graph.name = path;
  return true;
}

int64_t budgetForFraction(const Problem &problem, double fraction) {
  return static_cast<int64_t>(
      std::floor(double(storeAllPeak(problem)) * fraction));
}

} // namespace planner
} // namespace remat

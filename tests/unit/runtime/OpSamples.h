//===- OpSamples.h - One valid call of every op, for coverage tests -----===//
//
// sampleFor(op) builds small random operands for any op of the op table
// (ops/OpTable.h) from its type rule and attribute names, so a new op of an
// existing rule needs no new test code to be run on every backend. An op
// whose rule has no sample here makes the every-op tests fail by name.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_TESTS_UNIT_RUNTIME_OPSAMPLES_H
#define REMAT_TESTS_UNIT_RUNTIME_OPSAMPLES_H

#include "TestUtil.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <random>

namespace remat::runtime::test {

struct OpSample {
  nlohmann::json attrs = nlohmann::json::object();
  std::vector<HostTensor> inputs;
  std::vector<TensorType> outputs;
};

/// A valid call of `op`, or nullopt when its type rule has no sample.
std::optional<OpSample> sampleFor(OpKind op, std::mt19937 &rng);

/// The CPU-vs-CUDA tolerance of `op` (normalized error): elementwise rules
/// 2e-6, rules that reduce (GEMMs, rows, losses) 1e-5.
double backendTolerance(OpKind op);

} // namespace remat::runtime::test

#endif // REMAT_TESTS_UNIT_RUNTIME_OPSAMPLES_H

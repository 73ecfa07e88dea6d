//===- TestUtil.h - Helpers for the runtime unit tests -------------------===//
//
// Runs single kernels on host tensors held as doubles (index tensors too:
// exact below 2^53), either in f32 (the backend's kernels) or in f64 (the
// same code, for finite-difference references), and compares results.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_TESTS_UNIT_RUNTIME_TESTUTIL_H
#define REMAT_TESTS_UNIT_RUNTIME_TESTUTIL_H

#include "runtime/plan/Ops.h"

#include <random>
#include <string>
#include <vector>

namespace remat::runtime::test {

struct HostTensor {
  DType dtype = DType::F32;
  Shape shape;
  std::vector<double> values;

  int64_t size() const { return int64_t(values.size()); }
};

/// Uniform values in [low, high), rounded to f32 so f32 and f64 runs see
/// the same inputs.
HostTensor randomTensor(const Shape &shape, std::mt19937 &rng,
                        double low = -1.0, double high = 1.0);
/// A tensor's host bytes in its dtype (floats as f32) and back: what a
/// backend's copyIn/copyOut move.
std::vector<char> hostBytes(const HostTensor &t);
HostTensor hostTensorFromBytes(const TensorType &type,
                               const std::vector<char> &bytes);

HostTensor tensorOf(const Shape &shape, std::vector<double> values,
                    DType dtype = DType::F32);

/// Runs `op` with the CPU kernels instantiated for T (float or double).
template <typename T>
std::vector<HostTensor> runOp(OpKind op, const OpAttrs &attrs,
                              const std::vector<HostTensor> &inputs,
                              const std::vector<TensorType> &outputs,
                              int64_t trainingStep = 0, int64_t microbatch = 0);

/// L = sum_k sum_i weights[k][i] * out_k[i], forward op evaluated in f64.
double weightedObjective(OpKind op, const OpAttrs &attrs,
                         const std::vector<HostTensor> &inputs,
                         const std::vector<TensorType> &outputs,
                         const std::vector<HostTensor> &weights);

/// Central difference dL/d inputs[wrt] of weightedObjective, in f64.
HostTensor numericGradient(OpKind op, const OpAttrs &attrs,
                           const std::vector<HostTensor> &inputs,
                           const std::vector<TensorType> &outputs,
                           const std::vector<HostTensor> &weights, size_t wrt,
                           double eps = 1e-6);

/// max |actual - expected| / max(1, max |expected|); infinite when only one
/// side holds a NaN somewhere.
double normalizedError(const HostTensor &actual, const HostTensor &expected);

TensorType typeOf(const Shape &shape, DType dtype = DType::F32);

/// `name` in this test process's folder under the system temp dir
/// (created on first use; Main.cpp removes it after a run that passed).
std::string tempPath(const std::string &name);

/// Removes tempPath's folder with everything in it.
void removeTempDir();

} // namespace remat::runtime::test

#endif // REMAT_TESTS_UNIT_RUNTIME_TESTUTIL_H

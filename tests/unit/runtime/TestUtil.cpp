//===- TestUtil.cpp - Helpers for the runtime unit tests -----------------===//
#include "TestUtil.h"

#include "ops/BFloat16.h"
#include "runtime/backends/cpu/Kernels.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <unistd.h>

namespace remat::runtime::test {

HostTensor randomTensor(const Shape &shape, std::mt19937 &rng, double low,
                        double high) {
  std::uniform_real_distribution<double> dist(low, high);
  HostTensor t{DType::F32, shape, {}};
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  for (int64_t i = 0; i < n; ++i)
    t.values.push_back(double(float(dist(rng))));
  return t;
}

HostTensor tensorOf(const Shape &shape, std::vector<double> values,
                    DType dtype) {
  return HostTensor{dtype, shape, std::move(values)};
}

TensorType typeOf(const Shape &shape, DType dtype) { return {dtype, shape}; }

namespace {

template <typename T> std::vector<char> toBytes(const HostTensor &t) {
  std::vector<char> bytes;
  auto append = [&](auto v) {
    const char *p = reinterpret_cast<const char *>(&v);
    bytes.insert(bytes.end(), p, p + sizeof(v));
  };
  for (double v : t.values) {
    if (t.dtype == DType::I32)
      append(int32_t(v));
    else if (t.dtype == DType::I64)
      append(int64_t(v));
    else if (t.dtype == DType::BF16)
      append(ops::floatToBf16(float(v)));
    else
      append(T(v));
  }
  return bytes;
}

template <typename T>
HostTensor fromBytes(const TensorType &type, const std::vector<char> &bytes) {
  HostTensor t{type.dtype, type.shape, {}};
  size_t size = type.dtype == DType::I32    ? 4
                : type.dtype == DType::I64  ? 8
                : type.dtype == DType::BF16 ? 2
                                            : sizeof(T);
  for (size_t off = 0; off < bytes.size(); off += size) {
    if (type.dtype == DType::I32) {
      int32_t v;
      std::memcpy(&v, &bytes[off], 4);
      t.values.push_back(v);
    } else if (type.dtype == DType::I64) {
      int64_t v;
      std::memcpy(&v, &bytes[off], 8);
      t.values.push_back(double(v));
    } else if (type.dtype == DType::BF16) {
      uint16_t v;
      std::memcpy(&v, &bytes[off], 2);
      t.values.push_back(double(ops::bf16ToFloat(v)));
    } else {
      T v;
      std::memcpy(&v, &bytes[off], sizeof(T));
      t.values.push_back(double(v));
    }
  }
  return t;
}

int64_t numElements(const Shape &shape) {
  return int64_t(*checkedNumElements(shape));
}

} // namespace

std::vector<char> hostBytes(const HostTensor &t) { return toBytes<float>(t); }

HostTensor hostTensorFromBytes(const TensorType &type,
                               const std::vector<char> &bytes) {
  return fromBytes<float>(type, bytes);
}

template <typename T>
std::vector<HostTensor> runOp(OpKind op, const OpAttrs &attrs,
                              const std::vector<HostTensor> &inputs,
                              const std::vector<TensorType> &outputs,
                              int64_t trainingStep, int64_t microbatch) {
  // Storage as vectors of T-aligned words so every pointer is aligned.
  std::vector<std::vector<int64_t>> storage;
  std::vector<TensorRef> ins, outs;
  auto place = [&](const std::vector<char> &bytes, DType dtype,
                   const Shape &shape) {
    storage.emplace_back((bytes.size() + 7) / 8 + 1, 0);
    std::memcpy(storage.back().data(), bytes.data(), bytes.size());
    return TensorRef{storage.back().data(), dtype, shape, numElements(shape)};
  };
  storage.reserve(inputs.size() + outputs.size());
  for (const HostTensor &t : inputs)
    ins.push_back(place(toBytes<T>(t), t.dtype, t.shape));
  for (const TensorType &t : outputs) {
    // Garbage in the results, so a kernel that skips an element shows.
    HostTensor junk{t.dtype, t.shape,
                    std::vector<double>(size_t(numElements(t.shape)), 77.0)};
    outs.push_back(place(toBytes<T>(junk), t.dtype, t.shape));
  }
  std::vector<Shape> shapes, outputShapes;
  for (const HostTensor &t : inputs)
    shapes.push_back(t.shape);
  for (const TensorType &t : outputs)
    outputShapes.push_back(t.shape);
  std::vector<T> workspace(
      cpu::kernelWorkspaceElements(op, attrs, shapes, outputShapes));
  KernelCall call;
  call.op = op;
  call.attrs = &attrs;
  call.inputs = ins.data();
  call.numInputs = int(ins.size());
  call.outputs = outs.data();
  call.numOutputs = int(outs.size());
  call.trainingStep = trainingStep;
  call.microbatch = microbatch;
  cpu::runKernel<T>(call, workspace.data(), workspace.size());
  std::vector<HostTensor> results;
  for (size_t i = 0; i < outputs.size(); ++i) {
    size_t elem = outputs[i].dtype == DType::I32    ? 4
                  : outputs[i].dtype == DType::I64  ? 8
                  : outputs[i].dtype == DType::BF16 ? 2
                                                    : sizeof(T);
    const char *p = reinterpret_cast<const char *>(outs[i].data);
    std::vector<char> bytes(p, p + elem * size_t(outs[i].numElements));
    results.push_back(fromBytes<T>(outputs[i], bytes));
  }
  return results;
}

template std::vector<HostTensor> runOp<float>(OpKind, const OpAttrs &,
                                              const std::vector<HostTensor> &,
                                              const std::vector<TensorType> &,
                                              int64_t, int64_t);
template std::vector<HostTensor> runOp<double>(OpKind, const OpAttrs &,
                                               const std::vector<HostTensor> &,
                                               const std::vector<TensorType> &,
                                               int64_t, int64_t);

double weightedObjective(OpKind op, const OpAttrs &attrs,
                         const std::vector<HostTensor> &inputs,
                         const std::vector<TensorType> &outputs,
                         const std::vector<HostTensor> &weights) {
  std::vector<HostTensor> out = runOp<double>(op, attrs, inputs, outputs);
  double sum = 0;
  for (size_t k = 0; k < out.size(); ++k)
    for (int64_t i = 0; i < out[k].size(); ++i)
      sum += weights[k].values[i] * out[k].values[i];
  return sum;
}

HostTensor numericGradient(OpKind op, const OpAttrs &attrs,
                           const std::vector<HostTensor> &inputs,
                           const std::vector<TensorType> &outputs,
                           const std::vector<HostTensor> &weights, size_t wrt,
                           double eps) {
  HostTensor grad = inputs[wrt];
  std::vector<HostTensor> perturbed = inputs;
  for (int64_t i = 0; i < grad.size(); ++i) {
    double saved = perturbed[wrt].values[i];
    perturbed[wrt].values[i] = saved + eps;
    double plus = weightedObjective(op, attrs, perturbed, outputs, weights);
    perturbed[wrt].values[i] = saved - eps;
    double minus = weightedObjective(op, attrs, perturbed, outputs, weights);
    perturbed[wrt].values[i] = saved;
    grad.values[i] = (plus - minus) / (2 * eps);
  }
  return grad;
}

double normalizedError(const HostTensor &actual, const HostTensor &expected) {
  REQUIRE(actual.shape == expected.shape);
  REQUIRE(actual.values.size() == expected.values.size());
  double maxErr = 0, scale = 1;
  for (size_t i = 0; i < actual.values.size(); ++i) {
    // A NaN on one side only is an infinite error (std::max would drop it).
    bool nanA = std::isnan(actual.values[i]);
    bool nanE = std::isnan(expected.values[i]);
    if (nanA != nanE)
      return std::numeric_limits<double>::infinity();
    if (nanA)
      continue;
    maxErr = std::max(maxErr, std::abs(actual.values[i] - expected.values[i]));
    scale = std::max(scale, std::abs(expected.values[i]));
  }
  return maxErr / scale;
}

static std::filesystem::path tempDir() {
  return std::filesystem::temp_directory_path() /
         ("remat-unit-runtime-" + std::to_string(getpid()));
}

std::string tempPath(const std::string &name) {
  std::filesystem::create_directories(tempDir());
  return (tempDir() / name).string();
}

void removeTempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(tempDir(), ignored);
}

} // namespace remat::runtime::test

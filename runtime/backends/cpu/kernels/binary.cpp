//===- binary.cpp - add, sub, mul, div with NumPy broadcasting -----------===//
//
// Plain loops where b repeats every numel(b) elements of c (c's shape, a
// scalar, a bias-style suffix), their elements or rows shared among
// threads (parallelFor); anything else walks c's shape with broadcast
// strides.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/kernels/Common.h"

#include "runtime/Strides.h"

namespace remat::runtime::cpu {

namespace {

template <typename T, typename Fn> void binary(const KernelCall &call, Fn fn) {
  const TensorRef &x0 = call.inputs[0], &x1 = call.inputs[1];
  const TensorRef &y = call.outputs[0];
  const T *a = inData<T>(call, 0), *b = inData<T>(call, 1);
  T *c = outData<T>(call, 0);
  int64_t n = y.numElements;
  if (x0.shape == y.shape && x1.shape == y.shape) {
    parallelElements(n, [&](int64_t i) { c[i] = fn(a[i], b[i]); });
    return;
  }
  if (x0.shape == y.shape && x1.numElements == 1) {
    T s = b[0];
    parallelElements(n, [&](int64_t i) { c[i] = fn(a[i], s); });
    return;
  }
  if (x0.shape == y.shape && isSuffix(x1.shape, y.shape)) {
    // Bias-style broadcast: b repeats every numel(b) elements.
    int64_t nb = x1.numElements;
    parallelFor(nb > 0 ? n / nb : 0, n, [&](int64_t row) {
      for (int64_t j = 0; j < nb; ++j)
        c[row * nb + j] = fn(a[row * nb + j], b[j]);
    });
    return;
  }
  std::vector<int64_t> strides[2] = {broadcastStrides(x0.shape, y.shape),
                                     broadcastStrides(x1.shape, y.shape)};
  walk(y.shape, strides,
       [&](int64_t i, const int64_t *off) { c[i] = fn(a[off[0]], b[off[1]]); });
}

} // namespace

template <typename T> void runBinary(const KernelCall &call, T *, uint64_t) {
  switch (call.op) {
  case OpKind::Add:
    return binary<T>(call, [](T a, T b) { return a + b; });
  case OpKind::Sub:
    return binary<T>(call, [](T a, T b) { return a - b; });
  case OpKind::Mul:
    return binary<T>(call, [](T a, T b) { return a * b; });
  case OpKind::Div:
    return binary<T>(call, [](T a, T b) { return a / b; });
  default:
    throwNoKernel(call.op);
  }
}

template void runBinary<float>(const KernelCall &, float *, uint64_t);
template void runBinary<double>(const KernelCall &, double *, uint64_t);

} // namespace remat::runtime::cpu

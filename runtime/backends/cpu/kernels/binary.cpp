//===- binary.cpp - add, sub, mul, div with NumPy broadcasting -----------===//
//
// Plain loops where b repeats every numel(b) elements of c (c's shape, a
// scalar, a bias-style suffix), their elements or rows shared among
// threads (parallelFor); anything else walks c's shape with broadcast
// strides. Operands and result may be bf16 (--precision bf16): widened as
// read, computed in float, rounded as written, the bits of float copies.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/kernels/Common.h"

#include "runtime/Strides.h"

namespace remat::runtime::cpu {

namespace {

/// c = fn(a, b) on operands stored as A and B and a result stored as C
/// (each T, or bf16 on a float kernel: widened as read, rounded as
/// written).
template <typename T, typename A, typename B, typename C, typename Fn>
void binary(const KernelCall &call, Fn fn) {
  const TensorRef &x0 = call.inputs[0], &x1 = call.inputs[1];
  const TensorRef &y = call.outputs[0];
  const A *a = x0.as<const A>();
  const B *b = x1.as<const B>();
  C *c = y.as<C>();
  auto ea = [&](int64_t i) { return loadAs<T>(a, i); };
  auto eb = [&](int64_t i) { return loadAs<T>(b, i); };
  int64_t n = y.numElements;
  if (x0.shape == y.shape && x1.shape == y.shape) {
    parallelElements(n, [&](int64_t i) { storeAs(c, i, fn(ea(i), eb(i))); });
    return;
  }
  if (x0.shape == y.shape && x1.numElements == 1) {
    T s = eb(0);
    parallelElements(n, [&](int64_t i) { storeAs(c, i, fn(ea(i), s)); });
    return;
  }
  if (x0.shape == y.shape && isSuffix(x1.shape, y.shape)) {
    // Bias-style broadcast: b repeats every numel(b) elements.
    int64_t nb = x1.numElements;
    parallelRows(nb > 0 ? n / nb : 0, n, [&](int64_t row) {
      for (int64_t j = 0; j < nb; ++j)
        storeAs(c, row * nb + j, fn(ea(row * nb + j), eb(j)));
    });
    return;
  }
  std::vector<int64_t> strides[2] = {broadcastStrides(x0.shape, y.shape),
                                     broadcastStrides(x1.shape, y.shape)};
  walk(y.shape, strides, [&](int64_t i, const int64_t *off) {
    storeAs(c, i, fn(ea(off[0]), eb(off[1])));
  });
}

template <typename T, typename Fn> void binary(const KernelCall &call, Fn fn) {
  withStorage<T>(call.inputs[0].dtype, [&](auto a) {
    withStorage<T>(call.inputs[1].dtype, [&](auto b) {
      withStorage<T>(call.outputs[0].dtype, [&](auto c) {
        binary<T, decltype(a), decltype(b), decltype(c)>(call, fn);
      });
    });
  });
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

//===- unary.cpp - Elementwise activations and their gradients -----------===//
//
// Elementwise in the float type; bf16 operands and results (--precision
// bf16) widened as read and rounded as written, the bits of float copies.
// gelu is the tanh form,
// 0.5 x (1 + tanh(u)) with u = sqrt(2/pi) (x + 0.044715 x^3), computed as
// x s with s = 0.5 (1 + tanh(u)) = 1 / (1 + e), e = exp(-2u) (the
// exponent capped at 80, where s is below 2e-35): one exp (expOf,
// Common.h) instead of a tanh, and no cancellation in 1 - t^2 for
// the gradient, s (1 + 2 x e s du/dx); constants rounded to the float
// type; gelu_exact is x Phi(x), Phi(x) = 0.5 (1 + erf(x / sqrt(2))), as
// PyTorch computes nn.GELU() (x * 0.5 * (1 + erf(x * M_SQRT1_2))), and its
// gradient Phi(x) + x phi(x), phi(x) = exp(-x^2 / 2) / sqrt(2 pi);
// silu is x s with s = 1 / (1 + exp(-x)); erf
// and pow are the C library's. The gradients take x, except relu_grad and
// tanh_grad, which take y (relu_grad's y > 0 exactly where x > 0).
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/kernels/Common.h"

namespace remat::runtime::cpu {

namespace {

template <typename T> constexpr T kGeluC = T(0.7978845608028654); // sqrt(2/pi)
template <typename T> constexpr T kGeluA = T(0.044715);

/// exp(-2u) for gelu's u, the exponent capped at 80 (no inf); expOf
/// (Common.h), so the loops vectorize.
template <typename T> REMAT_KERNEL_INLINE T geluExp(T x) {
  T u = kGeluC<T> * (x + kGeluA<T> * x * x * x);
  return expOf(std::min(T(-2) * u, T(80)));
}

template <typename T> REMAT_KERNEL_INLINE T gelu(T x) {
  return x / (T(1) + geluExp(x));
}

template <typename T> REMAT_KERNEL_INLINE T geluDerivative(T x) {
  T e = geluExp(x);
  T s = T(1) / (T(1) + e);
  T du = kGeluC<T> * (T(1) + T(3) * kGeluA<T> * x * x);
  return s * (T(1) + T(2) * x * (e * s) * du);
}

template <typename T>
constexpr T kTwoOverSqrtPi = T(1.1283791670955126); // 2/sqrt(pi)
template <typename T>
constexpr T kSqrtHalf = T(0.70710678118654752440); // 1/sqrt(2)
template <typename T>
constexpr T kInvSqrtTwoPi = T(0.39894228040143267794); // 1/sqrt(2 pi)

template <typename T> REMAT_KERNEL_INLINE T normalCdf(T x) {
  return T(0.5) * (T(1) + std::erf(x * kSqrtHalf<T>));
}

template <typename T> REMAT_KERNEL_INLINE T sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}

/// y = fn(x), x and y each stored as T or (float kernels) bf16.
template <typename T, typename Fn> void unary(const KernelCall &call, Fn fn) {
  withStorage<T>(call.inputs[0].dtype, [&](auto xs) {
    withStorage<T>(call.outputs[0].dtype, [&](auto ys) {
      const auto *x = call.inputs[0].as<const decltype(xs)>();
      auto *y = call.outputs[0].as<decltype(ys)>();
      parallelElements(call.inputs[0].numElements,
                       [&](int64_t i) { storeAs(y, i, fn(loadAs<T>(x, i))); });
    });
  });
}

/// dx = fn(x, dy), each stored as T or (float kernels) bf16.
template <typename T, typename Fn>
void unaryGrad(const KernelCall &call, Fn fn) {
  withStorage<T>(call.inputs[0].dtype, [&](auto xs) {
    withStorage<T>(call.inputs[1].dtype, [&](auto dys) {
      withStorage<T>(call.outputs[0].dtype, [&](auto dxs) {
        const auto *x = call.inputs[0].as<const decltype(xs)>();
        const auto *dy = call.inputs[1].as<const decltype(dys)>();
        auto *dx = call.outputs[0].as<decltype(dxs)>();
        parallelElements(call.inputs[0].numElements, [&](int64_t i) {
          storeAs(dx, i, fn(loadAs<T>(x, i), loadAs<T>(dy, i)));
        });
      });
    });
  });
}

} // namespace

template <typename T> void runUnary(const KernelCall &call, T *, uint64_t) {
  switch (call.op) {
  case OpKind::Relu:
    return unary<T>(call, [](T x) { return x > T(0) ? x : T(0); });
  case OpKind::Gelu:
    return unary<T>(call, [](T x) { return gelu(x); });
  case OpKind::GeluExact:
    return unary<T>(call, [](T x) {
      return x * T(0.5) * (T(1) + std::erf(x * kSqrtHalf<T>));
    });
  case OpKind::Tanh:
    return unary<T>(call, [](T x) { return std::tanh(x); });
  case OpKind::Exp:
    return unary<T>(call, [](T x) { return std::exp(x); });
  case OpKind::Silu:
    return unary<T>(call, [](T x) { return x * sigmoid(x); });
  case OpKind::Erf:
    return unary<T>(call, [](T x) { return std::erf(x); });
  case OpKind::Pow: {
    T exponent = T(call.attrs->exponent);
    return unary<T>(call, [exponent](T x) { return std::pow(x, exponent); });
  }
  default:
    throwNoKernel(call.op);
  }
}

template <typename T> void runUnaryGrad(const KernelCall &call, T *, uint64_t) {
  switch (call.op) {
  case OpKind::ReluGrad:
    return unaryGrad<T>(call, [](T x, T dy) { return x > T(0) ? dy : T(0); });
  case OpKind::GeluGrad:
    return unaryGrad<T>(call, [](T x, T dy) { return dy * geluDerivative(x); });
  case OpKind::GeluExactGrad:
    return unaryGrad<T>(call, [](T x, T dy) {
      T pdf = kInvSqrtTwoPi<T> * std::exp(T(-0.5) * x * x);
      return dy * (normalCdf(x) + x * pdf);
    });
  case OpKind::TanhGrad:
    return unaryGrad<T>(call, [](T y, T dy) { return dy * (T(1) - y * y); });
  case OpKind::SiluGrad:
    return unaryGrad<T>(call, [](T x, T dy) {
      T s = sigmoid(x);
      return dy * (s * (T(1) + x * (T(1) - s)));
    });
  case OpKind::ErfGrad:
    return unaryGrad<T>(call, [](T x, T dy) {
      return dy * (kTwoOverSqrtPi<T> * std::exp(-(x * x)));
    });
  default:
    throwNoKernel(call.op);
  }
}

template void runUnary<float>(const KernelCall &, float *, uint64_t);
template void runUnary<double>(const KernelCall &, double *, uint64_t);
template void runUnaryGrad<float>(const KernelCall &, float *, uint64_t);
template void runUnaryGrad<double>(const KernelCall &, double *, uint64_t);

} // namespace remat::runtime::cpu

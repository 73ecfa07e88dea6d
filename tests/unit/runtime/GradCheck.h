//===- GradCheck.h - A gradient op's result against finite differences ---===//
//
// The check of GradientOpsTest.cpp and ConvPoolGradTest.cpp: the gradient
// op's f32 result against a central difference (f64, eps = 1e-6) of
// L = sum(w * f(inputs)), by normalized error below kGradTol
// (GradientOpsTest.cpp says why 1e-3).
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_TESTS_UNIT_RUNTIME_GRADCHECK_H
#define REMAT_TESTS_UNIT_RUNTIME_GRADCHECK_H

#include "TestUtil.h"

#include <catch2/catch.hpp>

namespace remat::runtime::test {

inline constexpr double kGradTol = 1e-3;

/// Checks grad (from the gradient op, f32) against dL/d inputs[wrt].
inline void checkAgainstFD(const HostTensor &grad, OpKind forward,
                           const OpAttrs &attrs,
                           const std::vector<HostTensor> &ins,
                           const std::vector<TensorType> &outs,
                           const std::vector<HostTensor> &weights, size_t wrt) {
  HostTensor fd = numericGradient(forward, attrs, ins, outs, weights, wrt);
  double err = normalizedError(grad, fd);
  INFO("gradient of " << opName(forward) << " w.r.t. input " << wrt
                      << ": normalized error " << err);
  CHECK(err < kGradTol);
}

} // namespace remat::runtime::test

#endif // REMAT_TESTS_UNIT_RUNTIME_GRADCHECK_H

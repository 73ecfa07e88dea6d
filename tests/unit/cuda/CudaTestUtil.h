//===- CudaTestUtil.h - Run one op on a backend, skip without a GPU -------===//
//
// Checks ops on the CUDA backend against the CPU backend, each run by
// runOnBackend (BackendRun.h); skips without a GPU.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_TESTS_UNIT_CUDA_CUDATESTUTIL_H
#define REMAT_TESTS_UNIT_CUDA_CUDATESTUTIL_H

#include "BackendRun.h"

#include <cstdlib>
#include <random>
#include <string>

#include <catch2/catch.hpp>

namespace remat::runtime::test {

/// Whether a CUDA device is present (cudaGetDeviceCount > 0).
bool haveCudaDevice();

/// At the top of every GPU test: without a device, WARN and return.
#define REMAT_REQUIRE_CUDA_DEVICE()                                            \
  do {                                                                         \
    if (!::remat::runtime::test::haveCudaDevice()) {                           \
      WARN("no CUDA device; skipping");                                        \
      return;                                                                  \
    }                                                                          \
  } while (0)

/// Runs the op on the CPU and CUDA backends and checks each result's
/// normalized error against `tolerance` (0 = bitwise equal).
void checkAgainstCpu(const OpCase &c, double tolerance);

/// attention and attention_grad of random q, k, v (and dout) of shape `s`
/// with `attrs`, each checked against the CPU at kReductionTol.
void checkAttentionAgainstCpu(const Shape &s, const nlohmann::json &attrs,
                              std::mt19937 &rng);

/// matmul in every transpose form, batched and with a shared rank-2 b, and
/// sum_batch (a shared weight's gradient), on random `dtype` operands with
/// a `dtype` result, each checked against the CPU at `tolerance`.
void checkMatmulFormsAgainstCpu(DType dtype, double tolerance,
                                std::mt19937 &rng);

/// Normalized-error tolerances of the kernel comparisons.
inline constexpr double kElementwiseTol = 2e-6;
inline constexpr double kReductionTol = 1e-5;

/// Random indices in [0, limit) of `shape` (i32 unless `dtype` says).
HostTensor indices(const Shape &shape, int64_t limit, std::mt19937 &rng,
                   DType dtype = DType::I32);

/// Sets an environment variable for one scope.
struct ScopedEnv {
  std::string name;
  ScopedEnv(const char *n, const char *value) : name(n) { setenv(n, value, 1); }
  ~ScopedEnv() { unsetenv(name.c_str()); }
};

} // namespace remat::runtime::test

#endif // REMAT_TESTS_UNIT_CUDA_CUDATESTUTIL_H

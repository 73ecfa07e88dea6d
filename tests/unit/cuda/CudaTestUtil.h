//===- CudaTestUtil.h - Run one op on a backend, skip without a GPU -------===//
//
// runOnBackend builds a one-step plan around the op (inputs as `input`
// buffers, optimizer state as `param` / `optimizer` buffers updated in
// place, plus a scalar loss written by a `constant` step), validates it
// with the loader, and runs it through the Backend interface exactly as the
// executor does: checkSupport, workspaceBytes, allocateArena, prepare,
// copyIn, runStep, synchronize, copyOut. The same call on createCpuBackend()
// gives the reference.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_TESTS_UNIT_CUDA_CUDATESTUTIL_H
#define REMAT_TESTS_UNIT_CUDA_CUDATESTUTIL_H

#include "TestUtil.h"

#include "runtime/Backend.h"

#include <nlohmann/json.hpp>

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

struct OpCase {
  OpKind op;
  nlohmann::json attrs = nlohmann::json::object();
  std::vector<HostTensor> inputs;
  std::vector<TensorType> outputs;
  int64_t trainingStep = 0;
};

/// The one-step plan (JSON, 256-aligned buffers) runOnBackend runs.
nlohmann::json opPlanJson(const OpCase &c);

/// Runs the op on `backend`; returns its results.
std::vector<HostTensor> runOnBackend(Backend &backend, const OpCase &c);

/// Runs the op on the CPU and CUDA backends and checks each result's
/// normalized error against `tolerance` (0 = bitwise equal).
void checkAgainstCpu(const OpCase &c, double tolerance);

} // namespace remat::runtime::test

#endif // REMAT_TESTS_UNIT_CUDA_CUDATESTUTIL_H

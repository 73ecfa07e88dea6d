//===- CudaEmuTest.cpp - The CUDA emulator models what the tests rely on --===//
//
// Built only with REMAT_CUDA_EMULATOR=ON. The [cuda] tests prove the
// backend's kernels only as far as the emulator behaves like the GPU where
// it matters: barriers, warp shuffles, launch limits, graph capture and
// memory accounting. Each case here would fail if that part were wrong.
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <numeric>
#include <vector>

namespace {

constexpr int kN = 256;

/// Reverses a block's 256 values through shared memory; with `barrier`
/// false the reads may run before the writes they need.
__global__ void reverseKernel(const int *in, int *out, bool barrier) {
  __shared__ int tile[kN];
  int t = int(threadIdx.x);
  tile[t] = in[blockIdx.x * kN + t];
  if (barrier)
    __syncthreads();
  out[blockIdx.x * kN + t] = tile[kN - 1 - t];
}

std::vector<int> runReverse(bool barrier, bool reverseOrder) {
  cudaemu::setReverseOrder(reverseOrder);
  std::vector<int> in(2 * kN), out(2 * kN, -1);
  std::iota(in.begin(), in.end(), 0);
  REMAT_EMU_LAUNCH(2, kN, 0, nullptr, reverseKernel)(in.data(), out.data(),
                                                     barrier);
  cudaemu::setReverseOrder(false);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  return out;
}

__global__ void warpSumKernel(const float *in, float *out) {
  float v = in[blockIdx.x * blockDim.x + threadIdx.x];
  for (int offset = 16; offset > 0; offset >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

/// Lane 0 waits at __syncthreads, the other lanes of its warp at a shuffle
/// that needs lane 0: a hang on the GPU.
__global__ void divergentBarrierKernel(int *out) {
  if (threadIdx.x == 0)
    __syncthreads();
  else
    out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, int(threadIdx.x), 1);
}

__global__ void addOneKernel(int *value) { *value += 1; }

} // namespace

TEST_CASE("emulator: a block barrier orders shared memory in either order",
          "[cuda][emulator]") {
  std::vector<int> forward = runReverse(true, false);
  std::vector<int> backward = runReverse(true, true);
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < kN; ++t)
      REQUIRE(forward[size_t(b * kN + t)] == b * kN + kN - 1 - t);
  CHECK(backward == forward);
}

TEST_CASE("emulator: a missing barrier shows as a result that depends on the "
          "thread order",
          "[cuda][emulator]") {
  std::vector<int> forward = runReverse(false, false);
  std::vector<int> backward = runReverse(false, true);
  CHECK(forward != backward);
}

TEST_CASE("emulator: warp shuffles give every lane the warp's sum",
          "[cuda][emulator]") {
  std::vector<float> in(128), out(128, 0.0f);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = float(i);
  REMAT_EMU_LAUNCH(2, 64, 0, nullptr, warpSumKernel)(in.data(), out.data());
  REQUIRE(cudaGetLastError() == cudaSuccess);
  for (size_t i = 0; i < out.size(); ++i) {
    size_t warp = i / 32;
    float expected = 0;
    for (size_t j = warp * 32; j < warp * 32 + 32; ++j)
      expected += in[j];
    CHECK(out[i] == expected);
  }
}

TEST_CASE("emulator: a barrier some threads never reach is a launch failure",
          "[cuda][emulator]") {
  std::vector<int> out(64, 0);
  REMAT_EMU_LAUNCH(1, 64, 0, nullptr, divergentBarrierKernel)(out.data());
  CHECK(cudaGetLastError() == cudaErrorLaunchFailure);
  CHECK(cudaGetLastError() == cudaSuccess);
}

TEST_CASE("emulator: launch geometry beyond the GPU's limits is refused",
          "[cuda][emulator]") {
  int value = 0;
  REMAT_EMU_LAUNCH(1, 2048, 0, nullptr, addOneKernel)(&value);
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  REMAT_EMU_LAUNCH(dim3(1, 70000), 1, 0, nullptr, addOneKernel)(&value);
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  CHECK(value == 0);
  REMAT_EMU_LAUNCH(3, 1, 0, nullptr, addOneKernel)(&value);
  CHECK(cudaGetLastError() == cudaSuccess);
  CHECK(value == 3);
}

TEST_CASE("emulator: captured work runs at each graph launch, not before",
          "[cuda][emulator]") {
  cudaStream_t stream = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) ==
          cudaSuccess);
  int *value = nullptr;
  REQUIRE(cudaMallocHost(reinterpret_cast<void **>(&value), sizeof(int)) ==
          cudaSuccess);
  *value = 0;
  REQUIRE(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed) ==
          cudaSuccess);
  REMAT_EMU_LAUNCH(1, 1, 0, stream, addOneKernel)(value);
  CHECK(*value == 0);
  cudaGraph_t graph = nullptr;
  REQUIRE(cudaStreamEndCapture(stream, &graph) == cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(exec, stream) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(exec, stream) == cudaSuccess);
  CHECK(*value == 2);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);

  SECTION("synchronizing the capturing stream invalidates the capture") {
    REQUIRE(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed) ==
            cudaSuccess);
    REMAT_EMU_LAUNCH(1, 1, 0, stream, addOneKernel)(value);
    CHECK(cudaStreamSynchronize(stream) == cudaErrorStreamCaptureUnsupported);
    cudaGraph_t none = nullptr;
    CHECK(cudaStreamEndCapture(stream, &none) ==
          cudaErrorStreamCaptureInvalidated);
    CHECK(none == nullptr);
    CHECK(*value == 2);
    (void)cudaGetLastError();
  }
  cudaFreeHost(value);
  cudaStreamDestroy(stream);
}

TEST_CASE("emulator: device memory is counted against its capacity",
          "[cuda][emulator]") {
  size_t freeBefore = 0, total = 0;
  REQUIRE(cudaMemGetInfo(&freeBefore, &total) == cudaSuccess);
  CHECK(total - freeBefore > 0); // the context's share
  void *p = nullptr;
  REQUIRE(cudaMalloc(&p, 1000) == cudaSuccess);
  size_t freeAfter = 0;
  REQUIRE(cudaMemGetInfo(&freeAfter, &total) == cudaSuccess);
  CHECK(freeBefore - freeAfter == 1024); // 256-byte granules
  void *tooBig = nullptr;
  CHECK(cudaMalloc(&tooBig, freeAfter + 1) == cudaErrorMemoryAllocation);
  CHECK(tooBig == nullptr);
  (void)cudaGetLastError();
  CHECK(cudaFree(p) == cudaSuccess);
  CHECK(cudaFree(p) == cudaErrorInvalidValue); // double free
  (void)cudaGetLastError();
}

TEST_CASE("emulator: cuBLAS SGEMM is column-major and checks its leading "
          "dimensions",
          "[cuda][emulator]") {
  cublasHandle_t handle = nullptr;
  REQUIRE(cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS);
  // Column-major A (2x3) = [1 3 5; 2 4 6], B (3x1) = [1; 1; 1].
  float a[] = {1, 2, 3, 4, 5, 6}, b[] = {1, 1, 1}, c[] = {-1, -1};
  float one = 1, zero = 0;
  REQUIRE(cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 1, 3,
                                    &one, a, 2, 6, b, 3, 3, &zero, c, 2, 2,
                                    1) == CUBLAS_STATUS_SUCCESS);
  CHECK(c[0] == 9.0f);
  CHECK(c[1] == 12.0f);
  CHECK(cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 1, 3,
                                  &one, a, 1, 6, b, 3, 3, &zero, c, 2, 2,
                                  1) == CUBLAS_STATUS_INVALID_VALUE);
  cublasDestroy(handle);
}

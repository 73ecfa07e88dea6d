//===- dropout.cu - dropout with the Philox stream of runtime/Philox.h ---===//
//
// The same header the CPU uses (its functions are __host__ __device__ under
// nvcc), so masks are bitwise equal across backends. The training step (the
// Philox counter's third word) is read from DeviceStatus, so a captured
// graph replays with the current step's masks.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/kernels/common.cuh"

#include "runtime/Philox.h"

namespace remat::runtime::cuda {

namespace {

/// One thread per Philox block of 4 elements (one philox call each).
__global__ void dropoutKernel(const float *x, float *y, int64_t n,
                              uint64_t seed, float rate, float scale,
                              const DeviceStatus *status) {
  uint64_t step = uint64_t(status->trainingStep);
  int64_t blocks = (n + 3) / 4;
  for (int64_t blk = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       blk < blocks; blk += int64_t(gridDim.x) * blockDim.x) {
    PhiloxBlock ctr = {{uint32_t(uint64_t(blk)), uint32_t(uint64_t(blk) >> 32),
                        uint32_t(step), 0u}};
    PhiloxBlock out = philox4x32_10(ctr, uint32_t(seed), uint32_t(seed >> 32));
    for (int w = 0; w < 4; ++w) {
      int64_t i = blk * 4 + w;
      if (i < n)
        y[i] = philoxWordToUnit(out.word[w]) >= rate ? x[i] * scale : 0.0f;
    }
  }
}

} // namespace

void launchDropout(const KernelCall &call, const DeviceContext &ctx) {
  int64_t n = call.inputs[0].numElements;
  float rate = call.attrs->rate;
  float scale = 1.0f / (1.0f - rate);
  REMAT_LAUNCH(gridFor((n + 3) / 4), kThreads, 0, ctx.stream, dropoutKernel)
  (call.inputs[0].as<const float>(), call.outputs[0].as<float>(), n,
   call.attrs->seed, rate, scale, ctx.status);
  REMAT_CUDA_CHECK_LAUNCH("dropoutKernel");
}

} // namespace remat::runtime::cuda

//===- dropout.cu - dropout with the Philox stream of runtime/Philox.h ---===//
//
// The same header the CPU uses (its functions are __host__ __device__ under
// nvcc), so masks are bitwise equal across backends. The training step (the
// Philox counter's third word) is read from DeviceStatus, so a captured
// graph replays with the current step's masks. In micro-batch m of a split
// step, element i is element m·n + i of the batch's tensor (the CPU's rule).
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/kernels/common.cuh"

#include "runtime/Philox.h"

namespace remat::runtime::cuda {

namespace {

/// One thread per Philox block of 4 elements (one philox call each). E: f32,
/// or bf16 bits (x widened, the kept value x * scale rounded to bf16).
template <typename E>
__global__ void dropoutKernel(const E *x, E *y, int64_t n, uint64_t first,
                              uint64_t seed, float rate, float scale,
                              const DeviceStatus *status) {
  uint64_t step = uint64_t(status->trainingStep);
  uint64_t begin = first / 4, end = (first + uint64_t(n) + 3) / 4;
  for (uint64_t blk = begin + blockIdx.x * uint64_t(blockDim.x) + threadIdx.x;
       blk < end; blk += uint64_t(gridDim.x) * blockDim.x) {
    PhiloxBlock out = dropoutBlock(seed, step, blk);
    for (int w = 0; w < 4; ++w) {
      uint64_t g = blk * 4 + uint64_t(w);
      if (g >= first && g < first + uint64_t(n)) {
        int64_t i = int64_t(g - first);
        storeFloat(y, i,
                   philoxWordToUnit(out.word[w]) >= rate
                       ? loadFloat(x, i) * scale
                       : 0.0f);
      }
    }
  }
}

template <typename E>
void launchAs(const KernelCall &call, const DeviceContext &ctx) {
  int64_t n = call.inputs[0].numElements;
  float rate = call.attrs->rate;
  float scale = 1.0f / (1.0f - rate);
  uint64_t first = call.firstElement(n);
  REMAT_LAUNCH(gridFor((n + 3) / 4 + 1), kThreads, 0, ctx.stream,
               dropoutKernel<E>)
  (call.inputs[0].as<const E>(), call.outputs[0].as<E>(), n, first,
   call.attrs->seed, rate, scale, ctx.status);
  REMAT_CUDA_CHECK_LAUNCH("dropoutKernel");
}

} // namespace

void launchDropout(const KernelCall &call, const DeviceContext &ctx) {
  withElementType(call.outputs[0].dtype,
                  [&](auto e) { launchAs<decltype(e)>(call, ctx); });
}

} // namespace remat::runtime::cuda

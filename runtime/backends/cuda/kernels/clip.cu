//===- clip.cu - clip and clip_grad ---------------------------------------===//
//
// As the CPU (clip.cpp): y = x < min ? min : x > max ? max : x; dx = dy
// where min < y < max, else 0 (clip_grad takes clip's output y).
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/kernels/common.cuh"

namespace remat::runtime::cuda {

namespace {

__global__ void clipKernel(OpKind op, const float *x, const float *dy,
                           float *out, int64_t n, float lo, float hi) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float v = x[i];
    if (op == OpKind::Clip)
      out[i] = v < lo ? lo : v > hi ? hi : v;
    else if (op == OpKind::ClipGrad)
      out[i] = v > lo && v < hi ? dy[i] : 0.0f;
    else // an op of the family without a case: NaN (CudaOpCoverageTest.cpp)
      out[i] = __int_as_float(0x7fc00000);
  }
}

} // namespace

void launchClip(const KernelCall &call, const DeviceContext &ctx) {
  int64_t n = call.inputs[0].numElements;
  const float *dy =
      call.numInputs > 1 ? call.inputs[1].as<const float>() : nullptr;
  REMAT_LAUNCH(gridFor(n), kThreads, 0, ctx.stream, clipKernel)
  (call.op, call.inputs[0].as<const float>(), dy, call.outputs[0].as<float>(),
   n, call.attrs->min, call.attrs->max);
  REMAT_CUDA_CHECK_LAUNCH("clipKernel");
}

} // namespace remat::runtime::cuda

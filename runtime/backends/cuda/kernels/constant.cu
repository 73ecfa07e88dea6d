//===- constant.cu - constant: fill a buffer with one value --------------===//
#include "runtime/backends/cuda/kernels/common.cuh"

namespace remat::runtime::cuda {

namespace {

__global__ void fillKernel(float *y, float value, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = value;
}

} // namespace

void launchConstant(const KernelCall &call, const DeviceContext &ctx) {
  int64_t n = call.outputs[0].numElements;
  REMAT_LAUNCH(gridFor(n), kThreads, 0, ctx.stream, fillKernel)
  (call.outputs[0].as<float>(), call.attrs->value, n);
  REMAT_CUDA_CHECK_LAUNCH("fillKernel");
}

} // namespace remat::runtime::cuda

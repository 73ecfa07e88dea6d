//===- softmax.cu - softmax and softmax_grad over the last dimension -----===//
//
// One block per row. As on the CPU: the max in f32, the denominator summed
// in double (deterministic block tree), y = exp(x - max) * float(1 / sum);
// softmax_grad's row dot product in double.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/kernels/common.cuh"

namespace remat::runtime::cuda {

namespace {

__global__ void softmaxKernel(const float *x, float *y, int64_t d) {
  int64_t row = blockIdx.x;
  softmaxRow(x + row * d, y + row * d, d, d);
}

__global__ void softmaxGradKernel(const float *y, const float *dy, float *dx,
                                  int64_t d) {
  __shared__ double shared[32];
  int64_t row = blockIdx.x;
  const float *yr = y + row * d, *dyr = dy + row * d;
  double local = 0;
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x)
    local += double(dyr[j]) * double(yr[j]);
  float dot = float(blockSum(local, shared));
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x)
    dx[row * d + j] = yr[j] * (dyr[j] - dot);
}

} // namespace

void launchSoftmax(const KernelCall &call, const DeviceContext &ctx) {
  int64_t d = call.inputs[0].shape.back();
  int64_t rows = call.inputs[0].numElements / d;
  REMAT_LAUNCH(rowGrid(rows, "softmaxKernel"), rowThreads(d), 0, ctx.stream,
               softmaxKernel)
  (call.inputs[0].as<const float>(), call.outputs[0].as<float>(), d);
  REMAT_CUDA_CHECK_LAUNCH("softmaxKernel");
}

void launchSoftmaxGrad(const KernelCall &call, const DeviceContext &ctx) {
  int64_t d = call.inputs[0].shape.back();
  int64_t rows = call.inputs[0].numElements / d;
  REMAT_LAUNCH(rowGrid(rows, "softmaxGradKernel"), rowThreads(d), 0, ctx.stream,
               softmaxGradKernel)
  (call.inputs[0].as<const float>(), call.inputs[1].as<const float>(),
   call.outputs[0].as<float>(), d);
  REMAT_CUDA_CHECK_LAUNCH("softmaxGradKernel");
}

} // namespace remat::runtime::cuda

//===- batch_norm.cu - batch_norm, its gradient and running statistics ---===//
//
// One block per channel of x viewed as [N, C, S] (as the CPU kernels in
// batch_norm.cpp): mean and biased variance in double (two passes, block
// sums), y = float((x - mean)·rstd)·gamma + beta. The gradient recomputes
// the statistics, block-sums dy and dy·x̂ in double, and writes dx and the
// channel's dgamma / dbeta. The running updates compute the batch mean or
// the unbiased variance the same way. Block sums run in a fixed order, so
// results are the same every run; they differ from the CPU's sequential
// sums in the last bits only.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/kernels/common.cuh"

namespace remat::runtime::cuda {

namespace {

/// Offset of element m (of n·s) of channel c in [n, C, s].
__device__ inline int64_t channelOffset(int64_t m, int64_t c, int64_t channels,
                                        int64_t s) {
  return ((m / s) * channels + c) * s + m % s;
}

/// Mean and sum of squared deviations of channel blockIdx.x; every thread
/// gets them.
__device__ void channelMoments(const float *x, int64_t count, int64_t channels,
                               int64_t s, double &mean, double &squares) {
  __shared__ double shared[32];
  int64_t c = blockIdx.x;
  double local = 0;
  for (int64_t m = threadIdx.x; m < count; m += blockDim.x)
    local += double(x[channelOffset(m, c, channels, s)]);
  mean = blockSum(local, shared) / double(count);
  local = 0;
  for (int64_t m = threadIdx.x; m < count; m += blockDim.x) {
    double d = double(x[channelOffset(m, c, channels, s)]) - mean;
    local += d * d;
  }
  squares = blockSum(local, shared);
}

__global__ void batchNormKernel(const float *x, const float *gamma,
                                const float *beta, float *y, int64_t count,
                                int64_t channels, int64_t s, float epsilon) {
  int64_t c = blockIdx.x;
  double mean, squares;
  channelMoments(x, count, channels, s, mean, squares);
  double rstd = 1.0 / sqrt(squares / double(count) + double(epsilon));
  for (int64_t m = threadIdx.x; m < count; m += blockDim.x) {
    int64_t o = channelOffset(m, c, channels, s);
    y[o] = float((double(x[o]) - mean) * rstd) * gamma[c] + beta[c];
  }
}

__global__ void batchNormGradKernel(const float *x, const float *gamma,
                                    const float *dy, float *dx, float *dgamma,
                                    float *dbeta, int64_t count,
                                    int64_t channels, int64_t s,
                                    float epsilon) {
  __shared__ double shared[32];
  int64_t c = blockIdx.x;
  double mean, squares;
  channelMoments(x, count, channels, s, mean, squares);
  double rstd = 1.0 / sqrt(squares / double(count) + double(epsilon));
  double localDy = 0, localDyXhat = 0;
  for (int64_t m = threadIdx.x; m < count; m += blockDim.x) {
    int64_t o = channelOffset(m, c, channels, s);
    localDy += double(dy[o]);
    localDyXhat += double(dy[o]) * ((double(x[o]) - mean) * rstd);
  }
  double sumDy = blockSum(localDy, shared);
  double sumDyXhat = blockSum(localDyXhat, shared);
  double scale = rstd * double(gamma[c]);
  double meanDy = sumDy / double(count), meanDyXhat = sumDyXhat / double(count);
  for (int64_t m = threadIdx.x; m < count; m += blockDim.x) {
    int64_t o = channelOffset(m, c, channels, s);
    double xhat = (double(x[o]) - mean) * rstd;
    dx[o] = float(scale * (double(dy[o]) - meanDy - xhat * meanDyXhat));
  }
  if (threadIdx.x == 0) {
    dgamma[c] = float(sumDyXhat);
    dbeta[c] = float(sumDy);
  }
}

__global__ void runningStatKernel(OpKind op, const float *running,
                                  const float *x, float *out, int64_t count,
                                  int64_t channels, int64_t s,
                                  float momentum) {
  int64_t c = blockIdx.x;
  double mean, squares;
  channelMoments(x, count, channels, s, mean, squares);
  if (threadIdx.x != 0)
    return;
  double batch;
  if (op == OpKind::RunningMeanUpdate)
    batch = mean;
  else if (op == OpKind::RunningVarUpdate)
    batch = squares / double(count > 1 ? count - 1 : 1);
  else { // an op of the family without a case: NaN (CudaOpCoverageTest.cpp)
    out[c] = __int_as_float(0x7fc00000);
    return;
  }
  out[c] = float(double(running[c]) * double(momentum) +
                 batch * (1.0 - double(momentum)));
}

/// n·s, C and s of x [N, C, ...].
void channelView(const Shape &x, int64_t &count, int64_t &channels,
                 int64_t &s) {
  channels = x[1];
  s = 1;
  for (size_t d = 2; d < x.size(); ++d)
    s *= x[d];
  count = x[0] * s;
}

} // namespace

void launchBatchNorm(const KernelCall &call, const DeviceContext &ctx) {
  int64_t count, channels, s;
  channelView(call.inputs[0].shape, count, channels, s);
  REMAT_LAUNCH(unsigned(channels), rowThreads(count), 0, ctx.stream,
               batchNormKernel)
  (call.inputs[0].as<const float>(), call.inputs[1].as<const float>(),
   call.inputs[2].as<const float>(), call.outputs[0].as<float>(), count,
   channels, s, call.attrs->epsilon);
  REMAT_CUDA_CHECK_LAUNCH("batchNormKernel");
}

void launchBatchNormGrad(const KernelCall &call, const DeviceContext &ctx) {
  int64_t count, channels, s;
  channelView(call.inputs[0].shape, count, channels, s);
  REMAT_LAUNCH(unsigned(channels), rowThreads(count), 0, ctx.stream,
               batchNormGradKernel)
  (call.inputs[0].as<const float>(), call.inputs[1].as<const float>(),
   call.inputs[2].as<const float>(), call.outputs[0].as<float>(),
   call.outputs[1].as<float>(), call.outputs[2].as<float>(), count, channels,
   s, call.attrs->epsilon);
  REMAT_CUDA_CHECK_LAUNCH("batchNormGradKernel");
}

void launchRunningStatUpdate(const KernelCall &call, const DeviceContext &ctx) {
  int64_t count, channels, s;
  channelView(call.inputs[1].shape, count, channels, s);
  REMAT_LAUNCH(unsigned(channels), rowThreads(count), 0, ctx.stream,
               runningStatKernel)
  (call.op, call.inputs[0].as<const float>(), call.inputs[1].as<const float>(),
   call.outputs[0].as<float>(), count, channels, s, call.attrs->momentum);
  REMAT_CUDA_CHECK_LAUNCH("runningStatKernel");
}

} // namespace remat::runtime::cuda

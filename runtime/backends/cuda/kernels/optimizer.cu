//===- optimizer.cu - optimizer updates, grad_accumulate -----------------===//
//
// Elementwise, same operation order as the CPU. adamw's bias corrections
// use t = trainingStep + 1 read from DeviceStatus (graph replays see the
// current step), computed in double as the CPU does.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/kernels/common.cuh"

namespace remat::runtime::cuda {

namespace {

__global__ void sgdKernel(const float *paramIn, const float *grad,
                          const float *momIn, float *param, float *mom,
                          int64_t n, float lr, float mu, float wd) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float g = grad[i] + wd * paramIn[i];
    float m = g;
    if (mom) { // null for sgd_plain_update
      m = mu * momIn[i] + g;
      mom[i] = m;
    }
    param[i] = paramIn[i] - lr * m;
  }
}

__global__ void adamwKernel(const float *paramIn, const float *grad,
                            const float *mIn, const float *vIn, float *param,
                            float *mOut, float *vOut, int64_t n, float lr,
                            float b1, float b2, float eps, float weightDecay,
                            const DeviceStatus *status) {
  double t = double(status->trainingStep + 1);
  float correction1 = float(1.0 - pow(double(b1), t));
  float correction2 = float(1.0 - pow(double(b2), t));
  float decay = 1.0f - lr * weightDecay;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float g = grad[i];
    float p = paramIn[i] * decay;
    float m = b1 * mIn[i] + (1.0f - b1) * g;
    float v = b2 * vIn[i] + (1.0f - b2) * g * g;
    mOut[i] = m;
    vOut[i] = v;
    param[i] = p - lr * (m / correction1) / (sqrtf(v / correction2) + eps);
  }
}

__global__ void gradAccumulateKernel(const float *acc, const float *grad,
                                     float *out, int64_t n, float scale,
                                     bool first) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = first ? scale * grad[i] : acc[i] + scale * grad[i];
}

} // namespace

void launchGradAccumulate(const KernelCall &call, const DeviceContext &ctx) {
  int64_t n = call.inputs[0].numElements;
  REMAT_LAUNCH(gridFor(n), kThreads, 0, ctx.stream, gradAccumulateKernel)
  (call.inputs[0].as<const float>(), call.inputs[1].as<const float>(),
   call.outputs[0].as<float>(), n, call.attrs->scale, call.microbatch == 0);
  REMAT_CUDA_CHECK_LAUNCH("gradAccumulateKernel");
}

void launchSgdUpdate(const KernelCall &call, const DeviceContext &ctx) {
  const OpAttrs &at = *call.attrs;
  int64_t n = call.inputs[0].numElements;
  bool plain = call.op == OpKind::SgdPlainUpdate;
  REMAT_LAUNCH(gridFor(n), kThreads, 0, ctx.stream, sgdKernel)
  (call.inputs[0].as<const float>(), call.inputs[1].as<const float>(),
   plain ? nullptr : call.inputs[2].as<const float>(),
   call.outputs[0].as<float>(), plain ? nullptr : call.outputs[1].as<float>(),
   n, at.lr, at.momentum, at.weightDecay);
  REMAT_CUDA_CHECK_LAUNCH("sgdKernel");
}

void launchAdamwUpdate(const KernelCall &call, const DeviceContext &ctx) {
  const OpAttrs &at = *call.attrs;
  int64_t n = call.inputs[0].numElements;
  REMAT_LAUNCH(gridFor(n), kThreads, 0, ctx.stream, adamwKernel)
  (call.inputs[0].as<const float>(), call.inputs[1].as<const float>(),
   call.inputs[2].as<const float>(), call.inputs[3].as<const float>(),
   call.outputs[0].as<float>(), call.outputs[1].as<float>(),
   call.outputs[2].as<float>(), n, at.lr, at.beta1, at.beta2, at.eps,
   at.weightDecay, ctx.status);
  REMAT_CUDA_CHECK_LAUNCH("adamwKernel");
}

} // namespace remat::runtime::cuda

//===- unary.cu - Elementwise activations and their gradients ------------===//
//
// gelu is the tanh form with the CPU's constants and the CPU's sigmoid
// evaluation (x / (1 + exp(-2u)), unary.cpp), in f32; gelu_exact and
// its gradient are the CPU's formulas with erff and expf; silu
// is x s with s = 1 / (1 + exp(-x)), in the CPU's order; erf and pow are
// CUDA's erff and powf.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/kernels/common.cuh"

namespace remat::runtime::cuda {

namespace {

constexpr float kGeluC = 0.7978845608028654f; // sqrt(2/pi)
constexpr float kGeluA = 0.044715f;
constexpr float kTwoOverSqrtPi = 1.1283791670955126f; // 2/sqrt(pi)
constexpr float kSqrtHalf = 0.70710678118654752440f;   // 1/sqrt(2)
constexpr float kInvSqrtTwoPi = 0.39894228040143267794f; // 1/sqrt(2 pi)

__device__ inline float geluExp(float x) {
  float u = kGeluC * (x + kGeluA * x * x * x);
  return expf(fminf(-2.0f * u, 80.0f));
}

__device__ inline float gelu(float x) { return x / (1.0f + geluExp(x)); }

__device__ inline float geluDerivative(float x) {
  float e = geluExp(x);
  float s = 1.0f / (1.0f + e);
  float du = kGeluC * (1.0f + 3.0f * kGeluA * x * x);
  return s * (1.0f + 2.0f * x * (e * s) * du);
}

__device__ inline float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/// `exponent`: pow's (the other ops ignore it).
__global__ void unaryKernel(OpKind op, const float *x, float *y, int64_t n,
                            float exponent) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float v = x[i];
    switch (op) {
    case OpKind::Relu:
      y[i] = v > 0.0f ? v : 0.0f;
      break;
    case OpKind::Gelu:
      y[i] = gelu(v);
      break;
    case OpKind::GeluExact:
      y[i] = v * 0.5f * (1.0f + erff(v * kSqrtHalf));
      break;
    case OpKind::Tanh:
      y[i] = tanhf(v);
      break;
    case OpKind::Exp:
      y[i] = expf(v);
      break;
    case OpKind::Silu:
      y[i] = v * sigmoid(v);
      break;
    case OpKind::Erf:
      y[i] = erff(v);
      break;
    case OpKind::Pow:
      y[i] = powf(v, exponent);
      break;
    default: // an op of the family without a case here: NaN, which the
             // every-op test (CudaOpCoverageTest.cpp) reports
      y[i] = __int_as_float(0x7fc00000);
      break;
    }
  }
}

/// dx from (x or y, dy): relu_grad and tanh_grad take y, the others x.
__global__ void unaryGradKernel(OpKind op, const float *x, const float *dy,
                                float *dx, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float v = x[i], g = dy[i];
    switch (op) {
    case OpKind::ReluGrad:
      dx[i] = v > 0.0f ? g : 0.0f;
      break;
    case OpKind::GeluGrad:
      dx[i] = g * geluDerivative(v);
      break;
    case OpKind::GeluExactGrad: {
      float pdf = kInvSqrtTwoPi * expf(-0.5f * v * v);
      dx[i] = g * (0.5f * (1.0f + erff(v * kSqrtHalf)) + v * pdf);
      break;
    }
    case OpKind::TanhGrad:
      dx[i] = g * (1.0f - v * v);
      break;
    case OpKind::SiluGrad: {
      float s = sigmoid(v);
      dx[i] = g * (s * (1.0f + v * (1.0f - s)));
      break;
    }
    case OpKind::ErfGrad:
      dx[i] = g * (kTwoOverSqrtPi * expf(-(v * v)));
      break;
    default: // as in unaryKernel
      dx[i] = __int_as_float(0x7fc00000);
      break;
    }
  }
}

} // namespace

void launchUnary(const KernelCall &call, const DeviceContext &ctx) {
  int64_t n = call.inputs[0].numElements;
  REMAT_LAUNCH(gridFor(n), kThreads, 0, ctx.stream, unaryKernel)
  (call.op, call.inputs[0].as<const float>(), call.outputs[0].as<float>(), n,
   call.attrs->exponent);
  REMAT_CUDA_CHECK_LAUNCH("unaryKernel");
}

void launchUnaryGrad(const KernelCall &call, const DeviceContext &ctx) {
  int64_t n = call.inputs[0].numElements;
  REMAT_LAUNCH(gridFor(n), kThreads, 0, ctx.stream, unaryGradKernel)
  (call.op, call.inputs[0].as<const float>(), call.inputs[1].as<const float>(),
   call.outputs[0].as<float>(), n);
  REMAT_CUDA_CHECK_LAUNCH("unaryGradKernel");
}

} // namespace remat::runtime::cuda

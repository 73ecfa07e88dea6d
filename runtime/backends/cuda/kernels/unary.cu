//===- unary.cu - Elementwise activations and their gradients ------------===//
//
// gelu is the tanh form with the CPU's constants and the CPU's sigmoid
// evaluation (x / (1 + exp(-2u)), unary.cpp), in f32; gelu_exact and
// its gradient are the CPU's formulas with erff and expf; silu
// is x s with s = 1 / (1 + exp(-x)), in the CPU's order; erf and pow are
// CUDA's erff and powf. Operands and result all f32, or all bf16 (computed
// in float on the widened values, the result rounded to bf16).
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
template <typename E>
__global__ void unaryKernel(OpKind op, const E *x, E *y, int64_t n,
                            float exponent) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float v = loadFloat(x, i), r;
    switch (op) {
    case OpKind::Relu:
      r = v > 0.0f ? v : 0.0f;
      break;
    case OpKind::Gelu:
      r = gelu(v);
      break;
    case OpKind::GeluExact:
      r = v * 0.5f * (1.0f + erff(v * kSqrtHalf));
      break;
    case OpKind::Tanh:
      r = tanhf(v);
      break;
    case OpKind::Exp:
      r = expf(v);
      break;
    case OpKind::Silu:
      r = v * sigmoid(v);
      break;
    case OpKind::Erf:
      r = erff(v);
      break;
    case OpKind::Pow:
      r = powf(v, exponent);
      break;
    default: // an op of the family without a case here: NaN, which the
             // every-op test (CudaOpCoverageTest.cpp) reports
      r = __int_as_float(0x7fc00000);
      break;
    }
    storeFloat(y, i, r);
  }
}

/// dx from (x or y, dy): relu_grad and tanh_grad take y, the others x.
template <typename E>
__global__ void unaryGradKernel(OpKind op, const E *x, const E *dy, E *dx,
                                int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float v = loadFloat(x, i), g = loadFloat(dy, i), r;
    switch (op) {
    case OpKind::ReluGrad:
      r = v > 0.0f ? g : 0.0f;
      break;
    case OpKind::GeluGrad:
      r = g * geluDerivative(v);
      break;
    case OpKind::GeluExactGrad: {
      float pdf = kInvSqrtTwoPi * expf(-0.5f * v * v);
      r = g * (0.5f * (1.0f + erff(v * kSqrtHalf)) + v * pdf);
      break;
    }
    case OpKind::TanhGrad:
      r = g * (1.0f - v * v);
      break;
    case OpKind::SiluGrad: {
      float s = sigmoid(v);
      r = g * (s * (1.0f + v * (1.0f - s)));
      break;
    }
    case OpKind::ErfGrad:
      r = g * (kTwoOverSqrtPi * expf(-(v * v)));
      break;
    default: // as in unaryKernel
      r = __int_as_float(0x7fc00000);
      break;
    }
    storeFloat(dx, i, r);
  }
}

template <typename E>
void launchUnaryAs(const KernelCall &call, const DeviceContext &ctx) {
  int64_t n = call.inputs[0].numElements;
  REMAT_LAUNCH(gridFor(n), kThreads, 0, ctx.stream, unaryKernel<E>)
  (call.op, call.inputs[0].as<const E>(), call.outputs[0].as<E>(), n,
   call.attrs->exponent);
  REMAT_CUDA_CHECK_LAUNCH("unaryKernel");
}

template <typename E>
void launchUnaryGradAs(const KernelCall &call, const DeviceContext &ctx) {
  int64_t n = call.inputs[0].numElements;
  REMAT_LAUNCH(gridFor(n), kThreads, 0, ctx.stream, unaryGradKernel<E>)
  (call.op, call.inputs[0].as<const E>(), call.inputs[1].as<const E>(),
   call.outputs[0].as<E>(), n);
  REMAT_CUDA_CHECK_LAUNCH("unaryGradKernel");
}

} // namespace

void launchUnary(const KernelCall &call, const DeviceContext &ctx) {
  withElementType(call.outputs[0].dtype,
                  [&](auto e) { launchUnaryAs<decltype(e)>(call, ctx); });
}

void launchUnaryGrad(const KernelCall &call, const DeviceContext &ctx) {
  withElementType(call.outputs[0].dtype,
                  [&](auto e) { launchUnaryGradAs<decltype(e)>(call, ctx); });
}

} // namespace remat::runtime::cuda

//===- resize.cu - resize_nearest and resize_nearest_grad -----------------===//
//
// One thread per result element (grid-stride). The gradient gathers: each
// dx element sums its copies in dy in the CPU's order (resize.cpp), so the
// two backends agree bitwise.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/kernels/common.cuh"

namespace remat::runtime::cuda {

namespace {

/// The result shape, the operand's row-major strides and the scales.
struct ResizeGeometry {
  int rank = 0;
  int64_t out[kMaxRank] = {};
  int64_t inStride[kMaxRank] = {};
  int64_t scale[kMaxRank] = {};
  int64_t copies = 1;
};

__global__ void resizeNearestKernel(const float *x, float *y, int64_t n,
                                    ResizeGeometry g) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = i, source = 0;
    for (int d = g.rank - 1; d >= 0; --d) {
      source += (rest % g.out[d]) / g.scale[d] * g.inStride[d];
      rest /= g.out[d];
    }
    y[i] = x[source];
  }
}

__global__ void resizeNearestGradKernel(const float *dy, float *dx, int64_t n,
                                        ResizeGeometry g) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = i, first = 0;
    for (int d = g.rank - 1; d >= 0; --d) {
      first += (rest % g.out[d]) * g.scale[d] * g.inStride[d];
      rest /= g.out[d];
    }
    float sum = 0.0f;
    for (int64_t k = 0; k < g.copies; ++k) {
      int64_t krest = k, offset = first;
      for (int d = g.rank - 1; d >= 0; --d) {
        offset += (krest % g.scale[d]) * g.inStride[d];
        krest /= g.scale[d];
      }
      sum += dy[offset];
    }
    dx[i] = sum;
  }
}

__global__ void resizeNoKernel(float *out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = __int_as_float(0x7fc00000);
}

} // namespace

void launchResize(const KernelCall &call, const DeviceContext &ctx) {
  ResizeGeometry g;
  const Shape &in = call.inputs[0].shape, &out = call.outputs[0].shape;
  g.rank = int(in.size());
  int64_t stride = 1;
  for (int d = g.rank - 1; d >= 0; --d) {
    g.out[d] = out[size_t(d)];
    g.inStride[d] = stride;
    g.scale[d] = call.attrs->scales[size_t(d)];
    g.copies *= g.scale[d];
    stride *= in[size_t(d)];
  }
  int64_t n = call.outputs[0].numElements;
  if (call.op == OpKind::ResizeNearest) {
    REMAT_LAUNCH(gridFor(n), kThreads, 0, ctx.stream, resizeNearestKernel)
    (call.inputs[0].as<const float>(), call.outputs[0].as<float>(), n, g);
    REMAT_CUDA_CHECK_LAUNCH("resizeNearestKernel");
  } else if (call.op == OpKind::ResizeNearestGrad) {
    REMAT_LAUNCH(gridFor(n), kThreads, 0, ctx.stream, resizeNearestGradKernel)
    (call.inputs[0].as<const float>(), call.outputs[0].as<float>(), n, g);
    REMAT_CUDA_CHECK_LAUNCH("resizeNearestGradKernel");
  } else { // an op of the family without a case: NaN (CudaOpCoverageTest.cpp)
    REMAT_LAUNCH(gridFor(n), kThreads, 0, ctx.stream, resizeNoKernel)
    (call.outputs[0].as<float>(), n);
    REMAT_CUDA_CHECK_LAUNCH("resizeNoKernel");
  }
}

} // namespace remat::runtime::cuda

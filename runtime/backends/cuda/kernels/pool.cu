//===- pool.cu - max_pool2d, avg_pool2d and their gradients --------------===//
//
// The CPU twin's window arithmetic (pool.cpp): one thread per result
// element. The forward kernels compute one window; the gradients gather,
// per input element, the dy of every window that reaches it, in row-major
// window order — the order in which the CPU scatters them — so the sums
// match it bit for bit (max_pool2d_grad recomputes each window's argmax,
// first maximum or first NaN).
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/kernels/common.cuh"

namespace remat::runtime::cuda {

namespace {

struct PoolDims {
  int64_t h, w, oh, ow, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
  bool countIncludePad;
};

PoolDims poolDims(const Shape &x, const Shape &y, const OpAttrs &attrs,
                  bool dilated) {
  return {x[2],
          x[3],
          y[2],
          y[3],
          attrs.kernelShape[0],
          attrs.kernelShape[1],
          attrs.strides[0],
          attrs.strides[1],
          attrs.pads[0],
          attrs.pads[1],
          attrs.pads[2],
          attrs.pads[3],
          dilated ? attrs.dilations[0] : 1,
          dilated ? attrs.dilations[1] : 1,
          attrs.countIncludePad};
}

/// Offset in the plane of window (y, x)'s maximum; -1 when it holds no
/// input element.
__device__ int64_t windowArgmax(const PoolDims &d, const float *plane,
                                int64_t y, int64_t x) {
  int64_t best = -1;
  for (int64_t i = 0; i < d.kh; ++i) {
    int64_t ih = y * d.sh - d.pt + i * d.dh;
    if (ih < 0 || ih >= d.h)
      continue;
    for (int64_t j = 0; j < d.kw; ++j) {
      int64_t iw = x * d.sw - d.pl + j * d.dw;
      if (iw < 0 || iw >= d.w)
        continue;
      int64_t at = ih * d.w + iw;
      float v = plane[at];
      // The first maximum, or the first NaN (v != v).
      if (best < 0 || v > plane[best] || (v != v && plane[best] == plane[best]))
        best = at;
    }
  }
  return best;
}

__device__ inline int64_t lesser(int64_t a, int64_t b) { return a < b ? a : b; }
__device__ inline int64_t greater(int64_t a, int64_t b) {
  return a > b ? a : b;
}

/// Window (y, x)'s rows [r0, r1) and columns [c0, c1) inside the input and
/// its divisor (pool.cpp's avgBounds).
__device__ void windowBounds(const PoolDims &d, int64_t y, int64_t x,
                             int64_t &r0, int64_t &r1, int64_t &c0, int64_t &c1,
                             int64_t &divisor) {
  r0 = y * d.sh - d.pt;
  c0 = x * d.sw - d.pl;
  r1 = lesser(r0 + d.kh, d.h + d.pb);
  c1 = lesser(c0 + d.kw, d.w + d.pr);
  int64_t padded = (r1 - r0) * (c1 - c0);
  r0 = greater(r0, 0);
  c0 = greater(c0, 0);
  r1 = lesser(r1, d.h);
  c1 = lesser(c1, d.w);
  divisor =
      d.countIncludePad ? padded : greater(r1 - r0, 0) * greater(c1 - c0, 0);
}

__global__ void poolKernel(bool isMax, PoolDims d, const float *x, float *y,
                           int64_t total) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t ox = i % d.ow, oy = (i / d.ow) % d.oh, p = i / (d.ow * d.oh);
    const float *plane = x + p * d.h * d.w;
    if (isMax) {
      int64_t at = windowArgmax(d, plane, oy, ox);
      y[i] = at >= 0 ? plane[at] : 0.0f;
      continue;
    }
    int64_t r0, r1, c0, c1, divisor;
    windowBounds(d, oy, ox, r0, r1, c0, c1, divisor);
    float sum = 0.0f;
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = c0; c < c1; ++c)
        sum += plane[r * d.w + c];
    y[i] = divisor > 0 ? sum / float(divisor) : 0.0f;
  }
}

/// The output indices [lo, hi] along one dim whose windows may reach input
/// index `at` (window k starts at k·stride - pad, spans dilation·(k-1)+1).
__device__ void reachingWindows(int64_t at, int64_t pad, int64_t k,
                                int64_t stride, int64_t dilation,
                                int64_t outSize, int64_t &lo, int64_t &hi) {
  int64_t first = at + pad - (k - 1) * dilation;
  lo = first <= 0 ? 0 : (first + stride - 1) / stride;
  hi = lesser((at + pad) / stride, outSize - 1);
}

__global__ void poolGradKernel(bool isMax, PoolDims d, const float *x,
                               const float *dy, float *dx, int64_t total) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t iw = i % d.w, ih = (i / d.w) % d.h, p = i / (d.w * d.h);
    int64_t at = ih * d.w + iw;
    const float *g = dy + p * d.oh * d.ow;
    int64_t ylo, yhi, xlo, xhi;
    reachingWindows(ih, d.pt, d.kh, d.sh, d.dh, d.oh, ylo, yhi);
    reachingWindows(iw, d.pl, d.kw, d.sw, d.dw, d.ow, xlo, xhi);
    float sum = 0.0f;
    for (int64_t oy = ylo; oy <= yhi; ++oy)
      for (int64_t ox = xlo; ox <= xhi; ++ox) {
        if (isMax) {
          if (windowArgmax(d, x + p * d.h * d.w, oy, ox) == at)
            sum += g[oy * d.ow + ox];
          continue;
        }
        int64_t r0, r1, c0, c1, divisor;
        windowBounds(d, oy, ox, r0, r1, c0, c1, divisor);
        if (divisor > 0 && ih >= r0 && ih < r1 && iw >= c0 && iw < c1)
          sum += g[oy * d.ow + ox] / float(divisor);
      }
    dx[i] = sum;
  }
}

} // namespace

void launchPool(const KernelCall &call, const DeviceContext &ctx) {
  bool isMax = call.op == OpKind::MaxPool2d;
  int64_t total = call.outputs[0].numElements;
  float *y = call.outputs[0].as<float>();
  if (!isMax && call.op != OpKind::AvgPool2d) {
    // An op of the family without a kernel: NaN, which the every-op test
    // (CudaOpCoverageTest.cpp) reports.
    cudaMemsetAsync(y, 0xff, size_t(total) * sizeof(float), ctx.stream);
    return;
  }
  REMAT_LAUNCH(gridFor(total), kThreads, 0, ctx.stream, poolKernel)
  (isMax,
   poolDims(call.inputs[0].shape, call.outputs[0].shape, *call.attrs, isMax),
   call.inputs[0].as<const float>(), y, total);
  REMAT_CUDA_CHECK_LAUNCH("poolKernel");
}

void launchPoolGrad(const KernelCall &call, const DeviceContext &ctx) {
  bool isMax = call.op == OpKind::MaxPool2dGrad;
  int64_t total = call.outputs[0].numElements;
  float *dx = call.outputs[0].as<float>();
  if (!isMax && call.op != OpKind::AvgPool2dGrad) {
    cudaMemsetAsync(dx, 0xff, size_t(total) * sizeof(float), ctx.stream);
    return;
  }
  const TensorRef &dy = call.inputs[isMax ? 1 : 0];
  REMAT_LAUNCH(gridFor(total), kThreads, 0, ctx.stream, poolGradKernel)
  (isMax, poolDims(call.outputs[0].shape, dy.shape, *call.attrs, isMax),
   isMax ? call.inputs[0].as<const float>() : nullptr, dy.as<const float>(), dx,
   total);
  REMAT_CUDA_CHECK_LAUNCH("poolGradKernel");
}

} // namespace remat::runtime::cuda

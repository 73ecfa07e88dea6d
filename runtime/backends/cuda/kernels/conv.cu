//===- conv.cu - conv2d and its gradients (direct kernels) ---------------===//
//
// Direct kernels, no scratch: conv2d and conv2d_grad_input give each
// thread one result element and sum its window in f32 in the order
// (channel, kernel row, kernel column) — the CPU twin sums the same terms
// through im2col + gemm, so results differ in the last bits only.
// conv2d_grad_weight gives each weight element a block, whose threads
// stride over (image, output position) and meet in the deterministic
// blockSum. Neither uses cuBLAS or cuDNN (docs/cuda.md).
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/kernels/common.cuh"

#include <algorithm>

namespace remat::runtime::cuda {

namespace {

/// The sizes of one convolution: x [N, C, H, W], w [O, C/g, kh, kw],
/// y [N, O, OH, OW].
struct ConvDims {
  int64_t n, c, h, w, o, cg, kh, kw, oh, ow, og;
  int64_t sh, sw, pt, pl, dh, dw;
};

ConvDims convDims(const Shape &x, const Shape &w, const Shape &y,
                  const OpAttrs &attrs) {
  return {x[0],
          x[1],
          x[2],
          x[3],
          w[0],
          w[1],
          w[2],
          w[3],
          y[2],
          y[3],
          w[0] / int64_t(attrs.groups),
          attrs.strides[0],
          attrs.strides[1],
          attrs.pads[0],
          attrs.pads[1],
          attrs.dilations[0],
          attrs.dilations[1]};
}

__global__ void conv2dKernel(ConvDims d, const float *x, const float *w,
                             float *y, int64_t total) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t ox = i % d.ow, t = i / d.ow;
    int64_t oy = t % d.oh;
    t /= d.oh;
    int64_t o = t % d.o, n = t / d.o;
    int64_t group = o / d.og;
    const float *xg = x + (n * d.c + group * d.cg) * d.h * d.w;
    const float *wo = w + o * d.cg * d.kh * d.kw;
    float sum = 0.0f;
    for (int64_t c = 0; c < d.cg; ++c)
      for (int64_t ki = 0; ki < d.kh; ++ki) {
        int64_t ih = oy * d.sh - d.pt + ki * d.dh;
        if (ih < 0 || ih >= d.h)
          continue;
        for (int64_t kj = 0; kj < d.kw; ++kj) {
          int64_t iw = ox * d.sw - d.pl + kj * d.dw;
          if (iw < 0 || iw >= d.w)
            continue;
          sum +=
              xg[(c * d.h + ih) * d.w + iw] * wo[(c * d.kh + ki) * d.kw + kj];
        }
      }
    y[i] = sum;
  }
}

/// One dx element (n, channel, ih, iw): the windows that read it.
__global__ void conv2dGradInputKernel(ConvDims d, const float *w,
                                      const float *dy, float *dx,
                                      int64_t total) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t iw = i % d.w, t = i / d.w;
    int64_t ih = t % d.h;
    t /= d.h;
    int64_t channel = t % d.c, n = t / d.c;
    int64_t group = channel / d.cg, c = channel % d.cg;
    float sum = 0.0f;
    for (int64_t o = group * d.og; o < (group + 1) * d.og; ++o)
      for (int64_t ki = 0; ki < d.kh; ++ki) {
        int64_t ty = ih + d.pt - ki * d.dh;
        if (ty < 0 || ty % d.sh)
          continue;
        int64_t oy = ty / d.sh;
        if (oy >= d.oh)
          continue;
        for (int64_t kj = 0; kj < d.kw; ++kj) {
          int64_t tx = iw + d.pl - kj * d.dw;
          if (tx < 0 || tx % d.sw)
            continue;
          int64_t ox = tx / d.sw;
          if (ox >= d.ow)
            continue;
          sum += w[((o * d.cg + c) * d.kh + ki) * d.kw + kj] *
                 dy[((n * d.o + o) * d.oh + oy) * d.ow + ox];
        }
      }
    dx[i] = sum;
  }
}

/// One block per dw element (o, c, ki, kj), grid-stride over elements.
__global__ void conv2dGradWeightKernel(ConvDims d, const float *x,
                                       const float *dy, float *dw,
                                       int64_t total) {
  __shared__ float shared[32];
  int64_t positions = d.oh * d.ow, terms = d.n * positions;
  for (int64_t e = blockIdx.x; e < total; e += gridDim.x) {
    int64_t kj = e % d.kw, t = e / d.kw;
    int64_t ki = t % d.kh;
    t /= d.kh;
    int64_t c = t % d.cg, o = t / d.cg;
    int64_t channel = (o / d.og) * d.cg + c;
    float partial = 0.0f;
    for (int64_t q = threadIdx.x; q < terms; q += blockDim.x) {
      int64_t n = q / positions, p = q % positions;
      int64_t ih = (p / d.ow) * d.sh - d.pt + ki * d.dh;
      int64_t iw = (p % d.ow) * d.sw - d.pl + kj * d.dw;
      if (ih < 0 || ih >= d.h || iw < 0 || iw >= d.w)
        continue;
      partial += dy[(n * d.o + o) * positions + p] *
                 x[((n * d.c + channel) * d.h + ih) * d.w + iw];
    }
    float sum = blockSum(partial, shared);
    if (threadIdx.x == 0)
      dw[e] = sum;
  }
}

} // namespace

void launchConv(const KernelCall &call, const DeviceContext &ctx) {
  const OpAttrs &attrs = *call.attrs;
  const Shape &in0 = call.inputs[0].shape, &in1 = call.inputs[1].shape;
  const Shape &out = call.outputs[0].shape;
  const float *a = call.inputs[0].as<const float>();
  const float *b = call.inputs[1].as<const float>();
  float *result = call.outputs[0].as<float>();
  int64_t total = call.outputs[0].numElements;
  switch (call.op) {
  case OpKind::Conv2d:
    REMAT_LAUNCH(gridFor(total), kThreads, 0, ctx.stream, conv2dKernel)
    (convDims(in0, in1, out, attrs), a, b, result, total);
    REMAT_CUDA_CHECK_LAUNCH("conv2dKernel");
    return;
  case OpKind::Conv2dGradInput:
    REMAT_LAUNCH(gridFor(total), kThreads, 0, ctx.stream, conv2dGradInputKernel)
    (convDims(out, in0, in1, attrs), a, b, result, total);
    REMAT_CUDA_CHECK_LAUNCH("conv2dGradInputKernel");
    return;
  case OpKind::Conv2dGradWeight: {
    unsigned blocks =
        unsigned(std::max<int64_t>(1, std::min<int64_t>(total, 1 << 20)));
    REMAT_LAUNCH(blocks, kThreads, 0, ctx.stream, conv2dGradWeightKernel)
    (convDims(in0, out, in1, attrs), a, b, result, total);
    REMAT_CUDA_CHECK_LAUNCH("conv2dGradWeightKernel");
    return;
  }
  default: // an op of the family without a kernel: NaN, which the every-op
           // test (CudaOpCoverageTest.cpp) reports
    cudaMemsetAsync(result, 0xff, size_t(total) * sizeof(float), ctx.stream);
    return;
  }
}

} // namespace remat::runtime::cuda

//===- conv.cpp - conv2d and its gradients (im2col + gemm) ---------------===//
//
// Per image and group, the receptive fields of a block of output positions
// are unfolded into the workspace (im2col: K = C/groups·kh·kw rows, one
// column per output position) and multiplied by the group's weights with
// gemm (Gemm.h). The workspace holds K x `convChunkColumns` elements, at
// most about kConvScratchElements, so the scratch is small and fixed
// whatever the image size. A pointwise convolution (1x1, stride 1, no
// padding) is a plain gemm on the input and needs no workspace.
//
// In float32, where the build has oneDNN and the workspace holds the
// scratchpad its primitive needs, the op goes through oneDNN instead
// (runtime/backends/cpu/DnnlConv.h), on the same layouts.
//
//   conv2d              y[o, p]   = Σ_k w[o, k] · cols[k, p]
//   conv2d_grad_input   cols      = wᵀ · dy, folded back into dx (col2im,
//                       adding in row-major order of the columns)
//   conv2d_grad_weight  dw[o, k] += dy[o, p] · cols[k, p], over images in
//                       order, then over the column blocks
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/kernels/Common.h"

#include "runtime/backends/cpu/CpuWorkspace.h"
#include "runtime/backends/cpu/DnnlConv.h"
#include "runtime/backends/cpu/Gemm.h"

#include <type_traits>

namespace remat::runtime::cpu {

namespace {

/// The sizes of one convolution, from x [N, C, H, W], w [O, C/g, kh, kw]
/// and y [N, O, OH, OW].
struct ConvGeometry {
  int64_t n, c, h, w, o, cg, kh, kw, oh, ow, groups, og;
  int64_t sh, sw, pt, pl, dh, dw;
  bool pointwise;

  ConvGeometry(const Shape &x, const Shape &weight, const Shape &y,
               const OpAttrs &attrs)
      : n(x[0]), c(x[1]), h(x[2]), w(x[3]), o(weight[0]), cg(weight[1]),
        kh(weight[2]), kw(weight[3]), oh(y[2]), ow(y[3]),
        groups(int64_t(attrs.groups)), og(weight[0] / int64_t(attrs.groups)),
        sh(attrs.strides[0]), sw(attrs.strides[1]), pt(attrs.pads[0]),
        pl(attrs.pads[1]), dh(attrs.dilations[0]), dw(attrs.dilations[1]) {
    pointwise = kh == 1 && kw == 1 && sh == 1 && sw == 1 &&
                attrs.pads == std::vector<int64_t>{0, 0, 0, 0};
  }
  int64_t k() const { return cg * kh * kw; }
  int64_t positions() const { return oh * ow; }
  int64_t chunk() const { return convChunkColumns(k(), positions()); }
};

/// Visits the input element of every (row, column) of the unfolded block
/// of columns [p0, p0 + count): fn(row, column, input offset or -1 for
/// padding). Rows are (channel, i, j) of the window in row-major order.
template <typename Fn>
void forEachUnfolded(const ConvGeometry &g, int64_t p0, int64_t count, Fn fn) {
  for (int64_t c = 0; c < g.cg; ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j) {
        int64_t row = (c * g.kh + i) * g.kw + j;
        int64_t p = p0, end = p0 + count;
        while (p < end) {
          int64_t y = p / g.ow, x0 = p % g.ow;
          int64_t x1 = std::min(g.ow, x0 + (end - p));
          int64_t ih = y * g.sh - g.pt + i * g.dh;
          bool rowInside = ih >= 0 && ih < g.h;
          int64_t base = (c * g.h + ih) * g.w;
          for (int64_t x = x0; x < x1; ++x) {
            int64_t iw = x * g.sw - g.pl + j * g.dw;
            fn(row, p - p0 + (x - x0),
               rowInside && iw >= 0 && iw < g.w ? base + iw : -1);
          }
          p += x1 - x0;
        }
      }
}

/// cols[K, count] = the receptive fields of positions [p0, p0 + count) of
/// one image's group of channels `x` ([C/g, H, W]).
template <typename T>
void im2col(const ConvGeometry &g, const T *x, int64_t p0, int64_t count,
            T *cols) {
  forEachUnfolded(g, p0, count, [&](int64_t row, int64_t col, int64_t at) {
    cols[row * count + col] = at >= 0 ? x[at] : T(0);
  });
}

/// dx += the columns folded back onto one image's group of channels.
template <typename T>
void col2im(const ConvGeometry &g, const T *cols, int64_t p0, int64_t count,
            T *dx) {
  forEachUnfolded(g, p0, count, [&](int64_t row, int64_t col, int64_t at) {
    if (at >= 0)
      dx[at] += cols[row * count + col];
  });
}

template <typename T>
void conv2d(const ConvGeometry &g, const T *x, const T *w, T *y, T *cols) {
  int64_t k = g.k(), positions = g.positions(), chunk = g.chunk();
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t gr = 0; gr < g.groups; ++gr) {
      const T *xg = x + (n * g.c + gr * g.cg) * g.h * g.w;
      const T *wg = w + gr * g.og * k;
      T *yg = y + (n * g.o + gr * g.og) * positions;
      if (g.pointwise) {
        gemm<T>(false, false, g.og, positions, k, T(1), wg, k, xg, positions,
                T(0), yg, positions);
        continue;
      }
      for (int64_t p0 = 0; p0 < positions; p0 += chunk) {
        int64_t count = std::min(chunk, positions - p0);
        im2col(g, xg, p0, count, cols);
        gemm<T>(false, false, g.og, count, k, T(1), wg, k, cols, count, T(0),
                yg + p0, positions);
      }
    }
}

template <typename T>
void conv2dGradInput(const ConvGeometry &g, const T *w, const T *dy, T *dx,
                     T *cols) {
  int64_t k = g.k(), positions = g.positions(), chunk = g.chunk();
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t gr = 0; gr < g.groups; ++gr) {
      T *dxg = dx + (n * g.c + gr * g.cg) * g.h * g.w;
      const T *wg = w + gr * g.og * k;
      const T *dyg = dy + (n * g.o + gr * g.og) * positions;
      if (g.pointwise) {
        gemm<T>(true, false, k, positions, g.og, T(1), wg, k, dyg, positions,
                T(0), dxg, positions);
        continue;
      }
      std::fill(dxg, dxg + g.cg * g.h * g.w, T(0));
      for (int64_t p0 = 0; p0 < positions; p0 += chunk) {
        int64_t count = std::min(chunk, positions - p0);
        gemm<T>(true, false, k, count, g.og, T(1), wg, k, dyg + p0, positions,
                T(0), cols, count);
        col2im(g, cols, p0, count, dxg);
      }
    }
}

template <typename T>
void conv2dGradWeight(const ConvGeometry &g, const T *x, const T *dy, T *dw,
                      T *cols) {
  int64_t k = g.k(), positions = g.positions(), chunk = g.chunk();
  for (int64_t gr = 0; gr < g.groups; ++gr) {
    T *dwg = dw + gr * g.og * k;
    bool first = true;
    for (int64_t n = 0; n < g.n; ++n) {
      const T *xg = x + (n * g.c + gr * g.cg) * g.h * g.w;
      const T *dyg = dy + (n * g.o + gr * g.og) * positions;
      if (g.pointwise) {
        gemm<T>(false, true, g.og, k, positions, T(1), dyg, positions, xg,
                positions, first ? T(0) : T(1), dwg, k);
        first = false;
        continue;
      }
      for (int64_t p0 = 0; p0 < positions; p0 += chunk) {
        int64_t count = std::min(chunk, positions - p0);
        im2col(g, xg, p0, count, cols);
        gemm<T>(false, true, g.og, k, count, T(1), dyg + p0, positions, cols,
                count, first ? T(0) : T(1), dwg, k);
        first = false;
      }
    }
    if (first) // no image: the gradient is 0
      std::fill(dwg, dwg + g.og * k, T(0));
  }
}

} // namespace

template <typename T>
void runConv(const KernelCall &call, T *workspace, uint64_t workspaceElements) {
  const OpAttrs &attrs = *call.attrs;
  const Shape &in0 = call.inputs[0].shape, &in1 = call.inputs[1].shape;
  const Shape &out = call.outputs[0].shape;
  if constexpr (std::is_same_v<T, float>) {
    if (cpu::dnnlConvRun(call.op, attrs, {in0, in1}, {out}, inData<T>(call, 0),
                         inData<T>(call, 1), outData<T>(call, 0), workspace,
                         workspaceElements * sizeof(float)))
      return;
  }
  switch (call.op) {
  case OpKind::Conv2d:
    return conv2d(ConvGeometry(in0, in1, out, attrs), inData<T>(call, 0),
                  inData<T>(call, 1), outData<T>(call, 0), workspace);
  case OpKind::Conv2dGradInput:
    return conv2dGradInput(ConvGeometry(out, in0, in1, attrs),
                           inData<T>(call, 0), inData<T>(call, 1),
                           outData<T>(call, 0), workspace);
  case OpKind::Conv2dGradWeight:
    return conv2dGradWeight(ConvGeometry(in0, out, in1, attrs),
                            inData<T>(call, 0), inData<T>(call, 1),
                            outData<T>(call, 0), workspace);
  default:
    throwNoKernel(call.op);
  }
}

template void runConv<float>(const KernelCall &, float *, uint64_t);
template void runConv<double>(const KernelCall &, double *, uint64_t);

} // namespace remat::runtime::cpu

//===- pool.cpp - max_pool2d, avg_pool2d and their gradients -------------===//
//
// Direct loops over the windows of each (image, channel) plane in
// row-major output order; a window's elements in row-major order.
// max_pool2d keeps the first maximum (a NaN wins, as in PyTorch); its
// gradient recomputes that argmax from x and adds dy there. avg_pool2d sums
// the window's input elements in the float type and divides by the
// divisor (its input elements, or with count_include_pad the window up to
// the end padding); its gradient adds dy / divisor to each input element.
// The gradients add into dx in row-major output order, which the CUDA
// kernels, gathering per input element, reproduce exactly. Planes are
// independent: parallelFor shares them among threads.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/kernels/Common.h"

namespace remat::runtime::cpu {

namespace {

/// One window of a pool: its first row and column (may be negative: begin
/// padding), its size and the strides between its elements.
struct PoolWindows {
  int64_t h, w, oh, ow, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
  bool countIncludePad;

  PoolWindows(const Shape &x, const Shape &y, const OpAttrs &attrs,
              bool dilated)
      : h(x[2]), w(x[3]), oh(y[2]), ow(y[3]), kh(attrs.kernelShape[0]),
        kw(attrs.kernelShape[1]), sh(attrs.strides[0]), sw(attrs.strides[1]),
        pt(attrs.pads[0]), pl(attrs.pads[1]), pb(attrs.pads[2]),
        pr(attrs.pads[3]), dh(dilated ? attrs.dilations[0] : 1),
        dw(dilated ? attrs.dilations[1] : 1),
        countIncludePad(attrs.countIncludePad) {}

  /// Offset in the plane of the maximum of window (y, x) (the first, or the
  /// first NaN); -1 when the window holds no input element.
  template <typename T>
  int64_t argmax(const T *plane, int64_t y, int64_t x) const {
    int64_t r0 = y * sh - pt, c0 = x * sw - pl;
    if (r0 >= 0 && r0 + (kh - 1) * dh < h && c0 >= 0 &&
        c0 + (kw - 1) * dw < w) {
      // The window inside the plane (the common case): the same first
      // maximum, or first NaN, without bounds checks.
      int64_t best = r0 * w + c0;
      T top = plane[best];
      if (std::isnan(top))
        return best;
      for (int64_t i = 0; i < kh; ++i) {
        const T *row = plane + (r0 + i * dh) * w + c0;
        for (int64_t j = 0; j < kw; ++j) {
          T v = row[j * dw];
          if (v > top) {
            top = v;
            best = (r0 + i * dh) * w + c0 + j * dw;
          } else if (std::isnan(v)) {
            return (r0 + i * dh) * w + c0 + j * dw;
          }
        }
      }
      return best;
    }
    int64_t best = -1;
    for (int64_t i = 0; i < kh; ++i) {
      int64_t ih = y * sh - pt + i * dh;
      if (ih < 0 || ih >= h)
        continue;
      for (int64_t j = 0; j < kw; ++j) {
        int64_t iw = x * sw - pl + j * dw;
        if (iw < 0 || iw >= w)
          continue;
        int64_t at = ih * w + iw;
        T v = plane[at];
        if (best < 0 || v > plane[best] ||
            (std::isnan(v) && !std::isnan(plane[best])))
          best = at;
      }
    }
    return best;
  }

  /// The rows [r0, r1) and columns [c0, c1) of window (y, x) inside the
  /// input, and its divisor.
  void avgBounds(int64_t y, int64_t x, int64_t &r0, int64_t &r1, int64_t &c0,
                 int64_t &c1, int64_t &divisor) const {
    r0 = y * sh - pt;
    c0 = x * sw - pl;
    r1 = std::min(r0 + kh, h + pb);
    c1 = std::min(c0 + kw, w + pr);
    int64_t padded = (r1 - r0) * (c1 - c0);
    r0 = std::max<int64_t>(r0, 0);
    c0 = std::max<int64_t>(c0, 0);
    r1 = std::min(r1, h);
    c1 = std::min(c1, w);
    divisor = countIncludePad ? padded
                              : std::max<int64_t>(r1 - r0, 0) *
                                    std::max<int64_t>(c1 - c0, 0);
  }
};

} // namespace

template <typename T> void runPool(const KernelCall &call, T *, uint64_t) {
  const Shape &xs = call.inputs[0].shape, &ys = call.outputs[0].shape;
  bool isMax = call.op == OpKind::MaxPool2d;
  if (!isMax && call.op != OpKind::AvgPool2d)
    throwNoKernel(call.op);
  PoolWindows win(xs, ys, *call.attrs, isMax);
  const T *x = inData<T>(call, 0);
  T *y = outData<T>(call, 0);
  int64_t planes = xs[0] * xs[1];
  parallelRows(
      planes, planes * win.oh * win.ow * win.kh * win.kw, [&](int64_t p) {
        const T *plane = x + p * win.h * win.w;
        T *out = y + p * win.oh * win.ow;
        for (int64_t oy = 0; oy < win.oh; ++oy)
          for (int64_t ox = 0; ox < win.ow; ++ox) {
            if (isMax) {
              int64_t at = win.argmax(plane, oy, ox);
              out[oy * win.ow + ox] = at >= 0 ? plane[at] : T(0);
              continue;
            }
            int64_t r0, r1, c0, c1, divisor;
            win.avgBounds(oy, ox, r0, r1, c0, c1, divisor);
            T sum = T(0);
            for (int64_t r = r0; r < r1; ++r)
              for (int64_t c = c0; c < c1; ++c)
                sum += plane[r * win.w + c];
            out[oy * win.ow + ox] = divisor > 0 ? sum / T(divisor) : T(0);
          }
      });
}

template <typename T> void runPoolGrad(const KernelCall &call, T *, uint64_t) {
  bool isMax = call.op == OpKind::MaxPool2dGrad;
  if (!isMax && call.op != OpKind::AvgPool2dGrad)
    throwNoKernel(call.op);
  const TensorRef &dyRef = call.inputs[isMax ? 1 : 0];
  const Shape &xs = call.outputs[0].shape, &ys = dyRef.shape;
  PoolWindows win(xs, ys, *call.attrs, isMax);
  const T *x = isMax ? inData<T>(call, 0) : nullptr;
  const T *dy = dyRef.template as<const T>();
  T *dx = outData<T>(call, 0);
  int64_t planes = xs[0] * xs[1];
  parallelRows(planes, planes * win.oh * win.ow * win.kh * win.kw,
               [&](int64_t p) {
                 T *dplane = dx + p * win.h * win.w;
                 std::fill(dplane, dplane + win.h * win.w, T(0));
                 const T *g = dy + p * win.oh * win.ow;
                 for (int64_t oy = 0; oy < win.oh; ++oy)
                   for (int64_t ox = 0; ox < win.ow; ++ox) {
                     T grad = g[oy * win.ow + ox];
                     if (isMax) {
                       int64_t at = win.argmax(x + p * win.h * win.w, oy, ox);
                       if (at >= 0)
                         dplane[at] += grad;
                       continue;
                     }
                     int64_t r0, r1, c0, c1, divisor;
                     win.avgBounds(oy, ox, r0, r1, c0, c1, divisor);
                     if (divisor <= 0)
                       continue;
                     T share = grad / T(divisor);
                     for (int64_t r = r0; r < r1; ++r)
                       for (int64_t c = c0; c < c1; ++c)
                         dplane[r * win.w + c] += share;
                   }
               });
}

template void runPool<float>(const KernelCall &, float *, uint64_t);
template void runPool<double>(const KernelCall &, double *, uint64_t);
template void runPoolGrad<float>(const KernelCall &, float *, uint64_t);
template void runPoolGrad<double>(const KernelCall &, double *, uint64_t);

} // namespace remat::runtime::cpu

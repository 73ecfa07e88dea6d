//===- resize.cpp - resize_nearest, resize_linear and their gradients -----===//
//
// resize_nearest: y[i] = x[i / scales] per dim. Its gradient gathers: each
// dx element sums, in the float type, the dy elements that copy it, in
// row-major order of their offsets within the copy block (the CUDA kernel
// sums in the same order, so the two agree bitwise).
// resize_linear: each output element blends four x elements (LinearTaps,
// torch's upsample_bilinear2d order); its gradient scatters dy plane by
// plane in dy's order (the CUDA kernel too: a thread a plane).
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/kernels/Common.h"

namespace remat::runtime::cpu {

namespace {

/// Row-major strides of a shape.
std::vector<int64_t> rowMajorStrides(const Shape &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  return strides;
}

/// Per output position along one axis: the two source positions and
/// their weights (resize_linear; ir/GraphLayoutOps.td).
struct LinearTaps {
  std::vector<int64_t> lo, hi;
  std::vector<double> wLo, wHi;
};

LinearTaps linearTaps(int64_t in, int64_t out, bool alignCorners) {
  LinearTaps t;
  double scale = alignCorners ? (out > 1 ? double(in - 1) / double(out - 1)
                                         : 0.0)
                              : double(in) / double(out);
  for (int64_t o = 0; o < out; ++o) {
    double s = alignCorners ? scale * double(o)
                            : std::max(0.0, scale * (double(o) + 0.5) - 0.5);
    int64_t lo = std::min(int64_t(s), in - 1);
    double frac = s - double(lo);
    t.lo.push_back(lo);
    t.hi.push_back(lo < in - 1 ? lo + 1 : lo);
    t.wHi.push_back(frac);
    t.wLo.push_back(1.0 - frac);
  }
  return t;
}

} // namespace

template <typename T> void runResize(const KernelCall &call, T *, uint64_t) {
  const std::vector<int64_t> &scales = call.attrs->scales;
  const T *in = inData<T>(call, 0);
  T *out = outData<T>(call, 0);
  size_t rank = scales.size();
  switch (call.op) {
  case OpKind::ResizeNearest: {
    const Shape &y = call.outputs[0].shape;
    std::vector<int64_t> xStrides = rowMajorStrides(call.inputs[0].shape);
    for (int64_t i = 0, n = call.outputs[0].numElements; i < n; ++i) {
      int64_t rest = i, source = 0;
      for (size_t d = rank; d-- > 0;) {
        source += (rest % y[d]) / scales[d] * xStrides[d];
        rest /= y[d];
      }
      out[i] = in[source];
    }
    return;
  }
  case OpKind::ResizeNearestGrad: {
    const Shape &dx = call.outputs[0].shape;
    std::vector<int64_t> dyStrides = rowMajorStrides(call.inputs[0].shape);
    int64_t copies = product(scales.begin(), scales.end());
    for (int64_t i = 0, n = call.outputs[0].numElements; i < n; ++i) {
      // The first copy's offset in dy.
      int64_t rest = i, first = 0;
      for (size_t d = rank; d-- > 0;) {
        first += (rest % dx[d]) * scales[d] * dyStrides[d];
        rest /= dx[d];
      }
      T sum = T(0);
      for (int64_t k = 0; k < copies; ++k) {
        int64_t krest = k, offset = first;
        for (size_t d = rank; d-- > 0;) {
          offset += (krest % scales[d]) * dyStrides[d];
          krest /= scales[d];
        }
        sum += in[offset];
      }
      out[i] = sum;
    }
    return;
  }
  case OpKind::ResizeLinear:
  case OpKind::ResizeLinearGrad: {
    // Planes of [N·C]; the spatial dims of x (in) and y (out).
    bool grad = call.op == OpKind::ResizeLinearGrad;
    const Shape &x = grad ? call.outputs[0].shape : call.inputs[0].shape;
    const Shape &y = grad ? call.inputs[0].shape : call.outputs[0].shape;
    bool align = call.attrs->alignCorners;
    LinearTaps h = linearTaps(x[2], y[2], align);
    LinearTaps w = linearTaps(x[3], y[3], align);
    int64_t planes = x[0] * x[1], inPlane = x[2] * x[3],
            outPlane = y[2] * y[3];
    if (grad)
      std::fill(out, out + planes * inPlane, T(0));
    for (int64_t p = 0; p < planes; ++p) {
      const T *src = in + p * (grad ? outPlane : inPlane);
      T *dst = out + p * (grad ? inPlane : outPlane);
      for (int64_t oh = 0; oh < y[2]; ++oh) {
        T h0 = T(h.wLo[size_t(oh)]), h1 = T(h.wHi[size_t(oh)]);
        int64_t r0 = h.lo[size_t(oh)] * x[3], r1 = h.hi[size_t(oh)] * x[3];
        for (int64_t ow = 0; ow < y[3]; ++ow) {
          T w0 = T(w.wLo[size_t(ow)]), w1 = T(w.wHi[size_t(ow)]);
          int64_t c0 = w.lo[size_t(ow)], c1 = w.hi[size_t(ow)];
          if (!grad) {
            dst[oh * y[3] + ow] = h0 * (w0 * src[r0 + c0] + w1 * src[r0 + c1]) +
                                  h1 * (w0 * src[r1 + c0] + w1 * src[r1 + c1]);
            continue;
          }
          T g = src[oh * y[3] + ow];
          dst[r0 + c0] += h0 * w0 * g;
          dst[r0 + c1] += h0 * w1 * g;
          dst[r1 + c0] += h1 * w0 * g;
          dst[r1 + c1] += h1 * w1 * g;
        }
      }
    }
    return;
  }
  default:
    throwNoKernel(call.op);
  }
}

template void runResize<float>(const KernelCall &, float *, uint64_t);
template void runResize<double>(const KernelCall &, double *, uint64_t);

} // namespace remat::runtime::cpu

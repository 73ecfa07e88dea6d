//===- Kernels.cpp - CPU reference kernels for every op of docs/ops.md ---===//
#include "runtime/backends/cpu/Kernels.h"

#include "runtime/Philox.h"
#include "runtime/Strides.h"
#include "runtime/backends/cpu/Gemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace remat::runtime::cpu {

namespace {

int64_t product(Shape::const_iterator begin, Shape::const_iterator end) {
  int64_t n = 1;
  for (auto it = begin; it != end; ++it)
    n *= *it;
  return n;
}

/// Walks `shape` in row-major order, keeping one running offset per strided
/// operand: fn(linear index, offsets).
template <size_t N, typename Fn>
void walk(const Shape &shape, const std::vector<int64_t> (&strides)[N], Fn fn) {
  int64_t total = product(shape.begin(), shape.end());
  size_t rank = shape.size();
  std::vector<int64_t> idx(rank, 0);
  int64_t off[N] = {};
  for (int64_t i = 0; i < total; ++i) {
    fn(i, off);
    for (int64_t d = int64_t(rank) - 1; d >= 0; --d) {
      ++idx[d];
      for (size_t k = 0; k < N; ++k)
        off[k] += strides[k][d];
      if (idx[d] < shape[d])
        break;
      for (size_t k = 0; k < N; ++k)
        off[k] -= strides[k][d] * shape[d];
      idx[d] = 0;
    }
  }
}

int64_t readIndex(const TensorRef &t, int64_t i) {
  return t.dtype == DType::I32 ? int64_t(t.as<int32_t>()[i])
                               : t.as<int64_t>()[i];
}

template <typename T> struct Kernels {
  const KernelCall &call;
  T *workspace;
  uint64_t workspaceElements;

  const TensorRef &in(int i) const { return call.inputs[i]; }
  const TensorRef &out(int i) const { return call.outputs[i]; }
  const T *inData(int i) const { return in(i).template as<const T>(); }
  T *outData(int i) const { return out(i).template as<T>(); }
  const OpAttrs &attrs() const { return *call.attrs; }

  void run() {
    switch (call.op) {
    case OpKind::Matmul:
      return matmul();
    case OpKind::Add:
      return binary([](T a, T b) { return a + b; });
    case OpKind::Sub:
      return binary([](T a, T b) { return a - b; });
    case OpKind::Mul:
      return binary([](T a, T b) { return a * b; });
    case OpKind::Div:
      return binary([](T a, T b) { return a / b; });
    case OpKind::Relu:
      return unary([](T x) { return x > T(0) ? x : T(0); });
    case OpKind::Gelu:
      return unary([](T x) { return gelu(x); });
    case OpKind::Tanh:
      return unary([](T x) { return std::tanh(x); });
    case OpKind::Exp:
      return unary([](T x) { return std::exp(x); });
    case OpKind::Softmax:
      return softmax();
    case OpKind::LayerNorm:
      return layerNorm();
    case OpKind::Embedding:
      return embedding();
    case OpKind::Reshape:
      if (out(0).data != in(0).data)
        std::memmove(out(0).data, in(0).data,
                     size_t(in(0).numElements) * dtypeSize(in(0).dtype));
      return;
    case OpKind::Transpose:
      return transpose();
    case OpKind::ReduceSum:
    case OpKind::ReduceMean:
      return reduce(call.op == OpKind::ReduceMean);
    case OpKind::BroadcastTo:
      return broadcastTo();
    case OpKind::SumTo:
      return sumTo();
    case OpKind::CrossEntropy:
      return crossEntropy(false);
    case OpKind::CrossEntropyGrad:
      return crossEntropy(true);
    case OpKind::Mse:
      return mse();
    case OpKind::MseGrad:
      return mseGrad();
    case OpKind::Dropout:
      return dropout();
    case OpKind::Attention:
      return attention();
    case OpKind::AttentionGrad:
      return attentionGrad();
    case OpKind::Constant: {
      T *y = outData(0);
      std::fill(y, y + out(0).numElements, T(attrs().value));
      return;
    }
    case OpKind::ReluGrad:
      return unaryGrad([](T x, T dy) { return x > T(0) ? dy : T(0); });
    case OpKind::GeluGrad:
      return unaryGrad([](T x, T dy) { return dy * geluDerivative(x); });
    case OpKind::TanhGrad:
      return unaryGrad([](T y, T dy) { return dy * (T(1) - y * y); });
    case OpKind::SoftmaxGrad:
      return softmaxGrad();
    case OpKind::LayerNormGrad:
      return layerNormGrad();
    case OpKind::EmbeddingGrad:
      return embeddingGrad();
    case OpKind::SgdUpdate:
      return sgdUpdate();
    case OpKind::AdamwUpdate:
      return adamwUpdate();
    }
  }

  static constexpr T kGeluC = T(0.7978845608028654); // sqrt(2/pi)
  static constexpr T kGeluA = T(0.044715);

  static T gelu(T x) {
    T u = kGeluC * (x + kGeluA * x * x * x);
    return T(0.5) * x * (T(1) + std::tanh(u));
  }
  static T geluDerivative(T x) {
    T u = kGeluC * (x + kGeluA * x * x * x);
    T t = std::tanh(u);
    T du = kGeluC * (T(1) + T(3) * kGeluA * x * x);
    return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * du;
  }

  template <typename Fn> void unary(Fn fn) {
    const T *x = inData(0);
    T *y = outData(0);
    for (int64_t i = 0, n = in(0).numElements; i < n; ++i)
      y[i] = fn(x[i]);
  }

  template <typename Fn> void unaryGrad(Fn fn) {
    const T *x = inData(0), *dy = inData(1);
    T *dx = outData(0);
    for (int64_t i = 0, n = in(0).numElements; i < n; ++i)
      dx[i] = fn(x[i], dy[i]);
  }

  template <typename Fn> void binary(Fn fn) {
    const T *a = inData(0), *b = inData(1);
    T *c = outData(0);
    int64_t n = out(0).numElements;
    if (in(0).shape == out(0).shape && in(1).shape == out(0).shape) {
      for (int64_t i = 0; i < n; ++i)
        c[i] = fn(a[i], b[i]);
      return;
    }
    if (in(0).shape == out(0).shape && in(1).numElements == 1) {
      T s = b[0];
      for (int64_t i = 0; i < n; ++i)
        c[i] = fn(a[i], s);
      return;
    }
    if (in(0).shape == out(0).shape && isSuffix(in(1).shape, out(0).shape)) {
      // Bias-style broadcast: b repeats every numel(b) elements.
      int64_t nb = in(1).numElements;
      for (int64_t i = 0; i < n; i += nb)
        for (int64_t j = 0; j < nb; ++j)
          c[i + j] = fn(a[i + j], b[j]);
      return;
    }
    std::vector<int64_t> strides[2] = {
        broadcastStrides(in(0).shape, out(0).shape),
        broadcastStrides(in(1).shape, out(0).shape)};
    walk(out(0).shape, strides, [&](int64_t i, const int64_t *off) {
      c[i] = fn(a[off[0]], b[off[1]]);
    });
  }

  void matmul() {
    const OpAttrs &at = attrs();
    const Shape &as = in(0).shape, &bs = in(1).shape;
    size_t ra = as.size(), rb = bs.size();
    int64_t m = at.transposeA ? as[ra - 1] : as[ra - 2];
    int64_t k = at.transposeA ? as[ra - 2] : as[ra - 1];
    int64_t n = at.transposeB ? bs[rb - 2] : bs[rb - 1];
    int64_t batch = product(as.begin(), as.end() - 2);
    bool sharedB = rb == 2;
    const T *a = inData(0), *b = inData(1);
    T *c = outData(0);
    int64_t lda = at.transposeA ? m : k, ldb = at.transposeB ? k : n;
    if (sharedB && !at.transposeA) {
      // [batch*M, K] x [K, N]: one GEMM over all batches.
      gemm<T>(false, at.transposeB, batch * m, n, k, T(1), a, lda, b, ldb, T(0),
              c, n);
      return;
    }
    for (int64_t i = 0; i < batch; ++i)
      gemm<T>(at.transposeA, at.transposeB, m, n, k, T(1), a + i * m * k, lda,
              b + (sharedB ? 0 : i * k * n), ldb, T(0), c + i * m * n, n);
  }

  void softmax() {
    const T *x = inData(0);
    T *y = outData(0);
    int64_t d = in(0).shape.back(), rows = in(0).numElements / d;
    for (int64_t r = 0; r < rows; ++r)
      softmaxRow(x + r * d, y + r * d, d);
  }

  static void softmaxRow(const T *x, T *y, int64_t d) {
    T maxValue = x[0];
    for (int64_t j = 1; j < d; ++j)
      maxValue = std::max(maxValue, x[j]);
    double sum = 0;
    for (int64_t j = 0; j < d; ++j) {
      y[j] = std::exp(x[j] - maxValue);
      sum += double(y[j]);
    }
    T inv = T(1.0 / sum);
    for (int64_t j = 0; j < d; ++j)
      y[j] *= inv;
  }

  void softmaxGrad() {
    const T *y = inData(0), *dy = inData(1);
    T *dx = outData(0);
    int64_t d = in(0).shape.back(), rows = in(0).numElements / d;
    for (int64_t r = 0; r < rows; ++r) {
      const T *yr = y + r * d, *dyr = dy + r * d;
      double dot = 0;
      for (int64_t j = 0; j < d; ++j)
        dot += double(dyr[j]) * double(yr[j]);
      for (int64_t j = 0; j < d; ++j)
        dx[r * d + j] = yr[j] * (dyr[j] - T(dot));
    }
  }

  /// Mean and 1/sqrt(var + eps) of one row (biased variance, two passes).
  void rowStats(const T *x, int64_t d, double &mean, double &rstd) const {
    double sum = 0;
    for (int64_t j = 0; j < d; ++j)
      sum += double(x[j]);
    mean = sum / double(d);
    double var = 0;
    for (int64_t j = 0; j < d; ++j) {
      double c = double(x[j]) - mean;
      var += c * c;
    }
    var /= double(d);
    rstd = 1.0 / std::sqrt(var + double(attrs().epsilon));
  }

  void layerNorm() {
    const T *x = inData(0), *gamma = inData(1), *beta = inData(2);
    T *y = outData(0);
    int64_t d = in(0).shape.back(), rows = in(0).numElements / d;
    for (int64_t r = 0; r < rows; ++r) {
      double mean, rstd;
      rowStats(x + r * d, d, mean, rstd);
      for (int64_t j = 0; j < d; ++j)
        y[r * d + j] =
            T((double(x[r * d + j]) - mean) * rstd) * gamma[j] + beta[j];
    }
  }

  void layerNormGrad() {
    const T *x = inData(0), *gamma = inData(1), *dy = inData(2);
    T *dx = outData(0), *dgamma = outData(1), *dbeta = outData(2);
    int64_t d = in(0).shape.back(), rows = in(0).numElements / d;
    std::fill(dgamma, dgamma + d, T(0));
    std::fill(dbeta, dbeta + d, T(0));
    for (int64_t r = 0; r < rows; ++r) {
      const T *xr = x + r * d, *dyr = dy + r * d;
      double mean, rstd;
      rowStats(xr, d, mean, rstd);
      double sumDxhat = 0, sumDxhatXhat = 0;
      for (int64_t j = 0; j < d; ++j) {
        double xhat = (double(xr[j]) - mean) * rstd;
        double dxhat = double(dyr[j]) * double(gamma[j]);
        sumDxhat += dxhat;
        sumDxhatXhat += dxhat * xhat;
        dgamma[j] += T(double(dyr[j]) * xhat);
        dbeta[j] += dyr[j];
      }
      double meanDxhat = sumDxhat / double(d);
      double meanDxhatXhat = sumDxhatXhat / double(d);
      for (int64_t j = 0; j < d; ++j) {
        double xhat = (double(xr[j]) - mean) * rstd;
        double dxhat = double(dyr[j]) * double(gamma[j]);
        dx[r * d + j] = T(rstd * (dxhat - meanDxhat - xhat * meanDxhatXhat));
      }
    }
  }

  int64_t checkedIndex(const TensorRef &t, int64_t i, int64_t limit,
                       const char *what) const {
    int64_t v = readIndex(t, i);
    if (v < 0 || v >= limit)
      throw std::runtime_error(
          std::string(what) + " " + std::to_string(v) + " at position " +
          std::to_string(i) + " is outside [0, " + std::to_string(limit) + ")");
    return v;
  }

  void embedding() {
    const T *table = inData(0);
    T *y = outData(0);
    int64_t v = in(0).shape[0], d = in(0).shape[1];
    // Validate every index before writing (no partial result on error).
    for (int64_t p = 0, n = in(1).numElements; p < n; ++p)
      checkedIndex(in(1), p, v, "index");
    for (int64_t p = 0, n = in(1).numElements; p < n; ++p) {
      int64_t row = readIndex(in(1), p);
      std::copy(table + row * d, table + (row + 1) * d, y + p * d);
    }
  }

  void embeddingGrad() {
    const T *dy = inData(1);
    T *dtable = outData(0);
    int64_t v = out(0).shape[0], d = out(0).shape[1];
    // Validate every index before writing, so a bad one leaves no partial
    // result behind.
    for (int64_t p = 0, n = in(0).numElements; p < n; ++p)
      checkedIndex(in(0), p, v, "index");
    std::fill(dtable, dtable + out(0).numElements, T(0));
    for (int64_t p = 0, n = in(0).numElements; p < n; ++p) {
      int64_t row = readIndex(in(0), p);
      for (int64_t j = 0; j < d; ++j)
        dtable[row * d + j] += dy[p * d + j];
    }
  }

  void transpose() {
    // transpose also moves index tensors, whose elements are not T.
    if (in(0).dtype == DType::I64)
      return transposeAs<int64_t>();
    if (in(0).dtype == DType::I32)
      return transposeAs<int32_t>();
    transposeAs<T>();
  }

  template <typename E> void transposeAs() {
    const Shape &xs = in(0).shape;
    std::vector<int64_t> xStrides = stridesOf(xs);
    std::vector<int64_t> strides[1] = {std::vector<int64_t>(xs.size())};
    for (size_t d = 0; d < xs.size(); ++d)
      strides[0][d] = xStrides[attrs().permutation[d]];
    const E *x = in(0).template as<const E>();
    E *y = out(0).template as<E>();
    walk(out(0).shape, strides,
         [&](int64_t i, const int64_t *off) { y[i] = x[off[0]]; });
  }

  /// Sums x into y where `yStrides` maps each x dim to y (0 = reduced).
  void sumInto(const std::vector<int64_t> &yStrides, T *y) {
    const T *x = inData(0);
    std::fill(y, y + out(0).numElements, T(0));
    if (std::all_of(yStrides.begin(), yStrides.end(),
                    [](int64_t s) { return s == 0; })) {
      // A full reduction: one running sum in row-major order.
      T total = T(0);
      for (int64_t i = 0, n = in(0).numElements; i < n; ++i)
        total += x[i];
      y[0] = total;
      return;
    }
    std::vector<int64_t> strides[1] = {yStrides};
    walk(in(0).shape, strides,
         [&](int64_t i, const int64_t *off) { y[off[0]] += x[i]; });
  }

  void reduce(bool mean) {
    const Shape &xs = in(0).shape;
    const std::vector<int64_t> &axes = attrs().axes;
    Shape kept(xs.size());
    int64_t count = 1;
    for (size_t d = 0; d < xs.size(); ++d) {
      bool reduced =
          std::find(axes.begin(), axes.end(), int64_t(d)) != axes.end();
      kept[d] = reduced ? 1 : xs[d];
      if (reduced)
        count *= xs[d];
    }
    // y has x's layout with reduced dims of size 1 (keep_dims or not).
    std::vector<int64_t> yStrides = stridesOf(kept);
    for (size_t d = 0; d < xs.size(); ++d)
      if (kept[d] == 1)
        yStrides[d] = 0;
    T *y = outData(0);
    sumInto(yStrides, y);
    if (mean) {
      T inv = T(1.0 / double(count));
      for (int64_t i = 0, n = out(0).numElements; i < n; ++i)
        y[i] *= inv;
    }
  }

  void broadcastTo() {
    const T *x = inData(0);
    T *y = outData(0);
    std::vector<int64_t> strides[1] = {
        broadcastStrides(in(0).shape, out(0).shape)};
    walk(out(0).shape, strides,
         [&](int64_t i, const int64_t *off) { y[i] = x[off[0]]; });
  }

  void sumTo() {
    if (isSuffix(out(0).shape, in(0).shape)) {
      // Bias-gradient shape: y[j] sums x over whole rows of numel(y), in
      // the same row-major order as the general walk, so the bits match.
      const T *x = inData(0);
      T *y = outData(0);
      int64_t ny = out(0).numElements, n = in(0).numElements;
      std::fill(y, y + ny, T(0));
      for (int64_t i = 0; i < n; i += ny)
        for (int64_t j = 0; j < ny; ++j)
          y[j] += x[i + j];
      return;
    }
    sumInto(broadcastStrides(out(0).shape, in(0).shape), outData(0));
  }

  void crossEntropy(bool grad) {
    const T *logits = inData(0);
    int64_t c = in(0).shape.back(), rows = in(0).numElements / c;
    for (int64_t r = 0; r < rows; ++r)
      checkedIndex(in(1), r, c, "label");
    if (!grad) {
      double total = 0;
      for (int64_t r = 0; r < rows; ++r) {
        const T *row = logits + r * c;
        T maxValue = *std::max_element(row, row + c);
        double sum = 0;
        for (int64_t j = 0; j < c; ++j)
          sum += std::exp(double(row[j] - maxValue));
        double logSumExp = double(maxValue) + std::log(sum);
        total += logSumExp - double(row[readIndex(in(1), r)]);
      }
      outData(0)[0] = T(total / double(rows));
      return;
    }
    T scale = T(double(inData(2)[0]) / double(rows));
    T *dlogits = outData(0);
    for (int64_t r = 0; r < rows; ++r) {
      softmaxRow(logits + r * c, dlogits + r * c, c);
      dlogits[r * c + readIndex(in(1), r)] -= T(1);
      for (int64_t j = 0; j < c; ++j)
        dlogits[r * c + j] *= scale;
    }
  }

  void mse() {
    const T *a = inData(0), *b = inData(1);
    int64_t n = in(0).numElements;
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      double d = double(a[i]) - double(b[i]);
      sum += d * d;
    }
    outData(0)[0] = T(sum / double(n));
  }

  void mseGrad() {
    const T *a = inData(0), *b = inData(1);
    int64_t n = in(0).numElements;
    T scale = T(2.0 * double(inData(2)[0]) / double(n));
    T *da = outData(0);
    for (int64_t i = 0; i < n; ++i)
      da[i] = scale * (a[i] - b[i]);
  }

  void dropout() {
    const T *x = inData(0);
    T *y = outData(0);
    float rate = attrs().rate;
    T scale = T(1) / (T(1) - T(rate));
    uint64_t seed = attrs().seed, step = uint64_t(call.trainingStep);
    for (int64_t i = 0, n = in(0).numElements; i < n; ++i)
      y[i] = dropoutKeeps(seed, step, uint64_t(i), rate) ? x[i] * scale : T(0);
  }

  /// Probabilities of one (batch, head): p = softmax(scale * q k^T + mask).
  void attentionProbs(const T *q, const T *k, int64_t s, int64_t dh, T *p) {
    gemm<T>(false, true, s, s, dh, T(attrs().scale), q, dh, k, dh, T(0), p, s);
    for (int64_t i = 0; i < s; ++i) {
      int64_t visible = attrs().causal ? i + 1 : s;
      softmaxRow(p + i * s, p + i * s, visible);
      std::fill(p + i * s + visible, p + (i + 1) * s, T(0));
    }
  }

  void attention() {
    const Shape &shape = in(0).shape;
    int64_t heads = shape[0] * shape[1], s = shape[2], dh = shape[3];
    T *p = workspace;
    for (int64_t bh = 0; bh < heads; ++bh) {
      int64_t base = bh * s * dh;
      attentionProbs(inData(0) + base, inData(1) + base, s, dh, p);
      gemm<T>(false, false, s, dh, s, T(1), p, s, inData(2) + base, dh, T(0),
              outData(0) + base, dh);
    }
  }

  void attentionGrad() {
    const Shape &shape = in(0).shape;
    int64_t heads = shape[0] * shape[1], s = shape[2], dh = shape[3];
    T *p = workspace, *dp = workspace + s * s;
    T scale = T(attrs().scale);
    for (int64_t bh = 0; bh < heads; ++bh) {
      int64_t base = bh * s * dh;
      const T *q = inData(0) + base, *k = inData(1) + base,
              *v = inData(2) + base, *dout = inData(3) + base;
      T *dq = outData(0) + base, *dk = outData(1) + base,
        *dv = outData(2) + base;
      attentionProbs(q, k, s, dh, p);
      // dv = p^T dout; dp = dout v^T.
      gemm<T>(true, false, s, dh, s, T(1), p, s, dout, dh, T(0), dv, dh);
      gemm<T>(false, true, s, s, dh, T(1), dout, dh, v, dh, T(0), dp, s);
      // ds = p * (dp - rowsum(dp * p)), in place of dp.
      for (int64_t i = 0; i < s; ++i) {
        double dot = 0;
        for (int64_t j = 0; j < s; ++j)
          dot += double(dp[i * s + j]) * double(p[i * s + j]);
        for (int64_t j = 0; j < s; ++j)
          dp[i * s + j] = p[i * s + j] * (dp[i * s + j] - T(dot));
      }
      // dq = scale * ds k; dk = scale * ds^T q.
      gemm<T>(false, false, s, dh, s, scale, dp, s, k, dh, T(0), dq, dh);
      gemm<T>(true, false, s, dh, s, scale, dp, s, q, dh, T(0), dk, dh);
    }
  }

  void sgdUpdate() {
    const OpAttrs &at = attrs();
    const T *grad = inData(1);
    T *param = outData(0), *mom = outData(1);
    const T *paramIn = inData(0), *momIn = inData(2);
    T lr = T(at.lr), mu = T(at.momentum), wd = T(at.weightDecay);
    for (int64_t i = 0, n = in(0).numElements; i < n; ++i) {
      T g = grad[i] + wd * paramIn[i];
      T m = mu * momIn[i] + g;
      mom[i] = m;
      param[i] = paramIn[i] - lr * m;
    }
  }

  void adamwUpdate() {
    const OpAttrs &at = attrs();
    const T *grad = inData(1);
    const T *paramIn = inData(0), *mIn = inData(2), *vIn = inData(3);
    T *param = outData(0), *mOut = outData(1), *vOut = outData(2);
    double t = double(call.trainingStep + 1);
    T correction1 = T(1.0 - std::pow(double(at.beta1), t));
    T correction2 = T(1.0 - std::pow(double(at.beta2), t));
    T lr = T(at.lr), b1 = T(at.beta1), b2 = T(at.beta2), eps = T(at.eps);
    T decay = T(1) - lr * T(at.weightDecay);
    for (int64_t i = 0, n = in(0).numElements; i < n; ++i) {
      T g = grad[i];
      T p = paramIn[i] * decay;
      T m = b1 * mIn[i] + (T(1) - b1) * g;
      T v = b2 * vIn[i] + (T(1) - b2) * g * g;
      mOut[i] = m;
      vOut[i] = v;
      param[i] =
          p - lr * (m / correction1) / (std::sqrt(v / correction2) + eps);
    }
  }
};

} // namespace

uint64_t kernelWorkspaceElements(OpKind op,
                                 const std::vector<Shape> &inputShapes) {
  if (op == OpKind::Attention || op == OpKind::AttentionGrad) {
    uint64_t s = uint64_t(inputShapes[0][2]);
    uint64_t factor = op == OpKind::Attention ? 1 : 2;
    // Saturates instead of wrapping: a wrapped count would let the
    // backend allocate too little scratch.
    if (s != 0 && s > UINT64_MAX / s / factor)
      return UINT64_MAX;
    return factor * s * s;
  }
  return 0;
}

template <typename T>
void runKernel(const KernelCall &call, T *workspace,
               uint64_t workspaceElements) {
  bool needsScratch =
      call.op == OpKind::Attention || call.op == OpKind::AttentionGrad;
  if (needsScratch && kernelWorkspaceElements(call.op, {call.inputs[0].shape}) >
                          workspaceElements)
    throw std::logic_error(std::string("cpu kernel '") + opName(call.op) +
                           "' needs more workspace than it was given");
  Kernels<T>{call, workspace, workspaceElements}.run();
}

template void runKernel<float>(const KernelCall &, float *, uint64_t);
template void runKernel<double>(const KernelCall &, double *, uint64_t);

} // namespace remat::runtime::cpu

//===- loss.cpp - cross_entropy, mse and their gradients -----------------===//
//
// The losses accumulate in double: cross_entropy sums each row's
// logsumexp - logit[label] (exp and log in double) and divides by the row
// count, mse sums squared differences and divides by the element count.
// The gradients scale by dloss / count: cross_entropy_grad's rows are
// softmaxRow (Common.h) minus the label's one-hot. Every label is checked
// against [0, C) before anything is written. Rows run on OpenMP's threads,
// the loss's row terms added in row order, so the bits do not depend on
// the thread count. bf16 logits (--precision bf16) are widened as read and
// the float32 loss computed from them; bf16 dlogits are each row's float
// result rounded to bf16.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/kernels/Common.h"

#include "ops/BFloat16.h"

#include <vector>

namespace remat::runtime::cpu {

namespace {

/// Logit j of row r as T: float32 logits as they are, bf16 ones widened
/// (exactly).
template <typename T> struct Logits {
  const void *data;
  bool bf16;
  int64_t c;
  T operator()(int64_t r, int64_t j) const {
    int64_t i = r * c + j;
    return bf16 ? T(ops::bf16ToFloat(static_cast<const uint16_t *>(data)[i]))
                : static_cast<const T *>(data)[i];
  }
};

/// Rows at a time whose loss terms the forward keeps before adding them in
/// row order.
constexpr int64_t kLossRows = 4096;

template <typename T> void crossEntropy(const KernelCall &call, bool grad) {
  const TensorRef &labels = call.inputs[1];
  int64_t c = call.inputs[0].shape.back(),
          rows = call.inputs[0].numElements / c;
  for (int64_t r = 0; r < rows; ++r)
    checkedIndex(labels, r, c, "label");
  Logits<T> x{call.inputs[0].data, call.inputs[0].dtype == DType::BF16, c};
  auto rowMax = [&](int64_t r) {
    T m = x(r, 0);
    for (int64_t j = 1; j < c; ++j)
      m = std::max(m, x(r, j));
    return m;
  };
  if (!grad) {
    // Each row's logsumexp - logit[label] in double, on the threads; then
    // added in row order, so the bits do not depend on the thread count.
    double total = 0;
    std::vector<double> terms(size_t(std::min(rows, kLossRows)));
    for (int64_t r0 = 0; r0 < rows; r0 += kLossRows) {
      int64_t n = std::min(kLossRows, rows - r0);
      parallelFor(n, n * c, [&](int64_t i) {
        int64_t r = r0 + i;
        T maxValue = rowMax(r);
        double sum = 0;
        for (int64_t j = 0; j < c; ++j)
          sum += std::exp(double(x(r, j) - maxValue));
        terms[size_t(i)] = double(maxValue) + std::log(sum) -
                           double(x(r, readIndex(labels, r)));
      });
      for (int64_t i = 0; i < n; ++i)
        total += terms[size_t(i)];
    }
    outData<T>(call, 0)[0] = T(total / double(rows));
    return;
  }
  // dlogits = (softmaxRow(x) - onehot(label)) * dloss / rows, each row on
  // its own (softmaxRow's arithmetic, Common.h, the exp computed twice
  // instead of kept), bf16 dlogits rounded once.
  T scale = T(double(inData<T>(call, 2)[0]) / double(rows));
  bool bf16Out = call.outputs[0].dtype == DType::BF16;
  parallelFor(rows, rows * c, [&](int64_t r) {
    T maxValue = rowMax(r);
    double sum = 0;
    for (int64_t j = 0; j < c; ++j)
      sum += double(T(std::exp(x(r, j) - maxValue)));
    T inv = T(1.0 / sum);
    int64_t label = readIndex(labels, r);
    for (int64_t j = 0; j < c; ++j) {
      T y = T(std::exp(x(r, j) - maxValue)) * inv;
      if (j == label)
        y -= T(1);
      y *= scale;
      if (bf16Out)
        call.outputs[0].as<uint16_t>()[r * c + j] = ops::floatToBf16(float(y));
      else
        outData<T>(call, 0)[r * c + j] = y;
    }
  });
}

} // namespace

template <typename T>
void runCrossEntropy(const KernelCall &call, T *, uint64_t) {
  crossEntropy<T>(call, false);
}

template <typename T>
void runCrossEntropyGrad(const KernelCall &call, T *, uint64_t) {
  crossEntropy<T>(call, true);
}

template <typename T> void runMse(const KernelCall &call, T *, uint64_t) {
  const T *a = inData<T>(call, 0), *b = inData<T>(call, 1);
  int64_t n = call.inputs[0].numElements;
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    double d = double(a[i]) - double(b[i]);
    sum += d * d;
  }
  outData<T>(call, 0)[0] = T(sum / double(n));
}

template <typename T> void runMseGrad(const KernelCall &call, T *, uint64_t) {
  const T *a = inData<T>(call, 0), *b = inData<T>(call, 1);
  int64_t n = call.inputs[0].numElements;
  T scale = T(2.0 * double(inData<T>(call, 2)[0]) / double(n));
  T *da = outData<T>(call, 0);
  for (int64_t i = 0; i < n; ++i)
    da[i] = scale * (a[i] - b[i]);
}

template void runCrossEntropy<float>(const KernelCall &, float *, uint64_t);
template void runCrossEntropy<double>(const KernelCall &, double *, uint64_t);
template void runCrossEntropyGrad<float>(const KernelCall &, float *, uint64_t);
template void runCrossEntropyGrad<double>(const KernelCall &, double *,
                                          uint64_t);
template void runMse<float>(const KernelCall &, float *, uint64_t);
template void runMse<double>(const KernelCall &, double *, uint64_t);
template void runMseGrad<float>(const KernelCall &, float *, uint64_t);
template void runMseGrad<double>(const KernelCall &, double *, uint64_t);

} // namespace remat::runtime::cpu

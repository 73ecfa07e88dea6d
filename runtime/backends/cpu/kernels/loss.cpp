//===- loss.cpp - cross_entropy, mse and their gradients -----------------===//
//
// The losses accumulate in double: cross_entropy sums each row's
// logsumexp - logit[label] (exp and log in double) and divides by the row
// count, mse sums squared differences and divides by the element count.
// The gradients scale by dloss / count: cross_entropy_grad's rows are
// softmaxRow (Common.h) minus the label's one-hot. Every label is checked
// against [0, C) before anything is written.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/kernels/Common.h"

namespace remat::runtime::cpu {

namespace {

template <typename T> void crossEntropy(const KernelCall &call, bool grad) {
  const TensorRef &labels = call.inputs[1];
  const T *logits = inData<T>(call, 0);
  int64_t c = call.inputs[0].shape.back(),
          rows = call.inputs[0].numElements / c;
  for (int64_t r = 0; r < rows; ++r)
    checkedIndex(labels, r, c, "label");
  if (!grad) {
    double total = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const T *row = logits + r * c;
      T maxValue = *std::max_element(row, row + c);
      double sum = 0;
      for (int64_t j = 0; j < c; ++j)
        sum += std::exp(double(row[j] - maxValue));
      double logSumExp = double(maxValue) + std::log(sum);
      total += logSumExp - double(row[readIndex(labels, r)]);
    }
    outData<T>(call, 0)[0] = T(total / double(rows));
    return;
  }
  T scale = T(double(inData<T>(call, 2)[0]) / double(rows));
  T *dlogits = outData<T>(call, 0);
  for (int64_t r = 0; r < rows; ++r) {
    softmaxRow(logits + r * c, dlogits + r * c, c);
    dlogits[r * c + readIndex(labels, r)] -= T(1);
    for (int64_t j = 0; j < c; ++j)
      dlogits[r * c + j] *= scale;
  }
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

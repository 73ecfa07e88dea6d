//===- loss.cpp - cross_entropy, mse and their gradients -----------------===//
//
// The losses accumulate in double: cross_entropy sums each row's
// logsumexp - logit[label] (exp and log in double) and divides by the row
// count, mse sums squared differences and divides by the element count.
// The gradients scale by dloss / count: cross_entropy_grad's rows are
// softmaxRow (Common.h) minus the label's one-hot. Every label is checked
// against [0, C) before anything is written. bf16 logits (--precision bf16)
// are read a row at a time into the workspace (C floats) and the float32
// loss computed from them; bf16 dlogits are each row's float result
// rounded to bf16.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/kernels/Common.h"

#include "ops/BFloat16.h"

namespace remat::runtime::cpu {

namespace {

/// cross_entropy and its gradient on bf16 logits: each row widened into
/// `row` (C floats), the loss and dloss float32, dlogits rounded to bf16.
template <typename T>
void crossEntropyBf16(const KernelCall &call, bool grad, T *row,
                      uint64_t rowElements) {
  const TensorRef &labels = call.inputs[1];
  const uint16_t *logits = call.inputs[0].as<const uint16_t>();
  int64_t c = call.inputs[0].shape.back(),
          rows = call.inputs[0].numElements / c;
  if (rowElements < uint64_t(c))
    throw std::logic_error("cross_entropy on bf16 logits needs a workspace "
                           "of a row");
  auto widen = [&](int64_t r) {
    for (int64_t j = 0; j < c; ++j)
      row[j] = T(ops::bf16ToFloat(logits[r * c + j]));
  };
  if (!grad) {
    double total = 0;
    for (int64_t r = 0; r < rows; ++r) {
      widen(r);
      T maxValue = *std::max_element(row, row + c);
      double sum = 0;
      for (int64_t j = 0; j < c; ++j)
        sum += std::exp(double(row[j] - maxValue));
      total +=
          double(maxValue) + std::log(sum) - double(row[readIndex(labels, r)]);
    }
    outData<T>(call, 0)[0] = T(total / double(rows));
    return;
  }
  T scale = T(double(inData<T>(call, 2)[0]) / double(rows));
  uint16_t *dlogits = call.outputs[0].as<uint16_t>();
  for (int64_t r = 0; r < rows; ++r) {
    widen(r);
    softmaxRow(row, row, c);
    row[readIndex(labels, r)] -= T(1);
    for (int64_t j = 0; j < c; ++j)
      dlogits[r * c + j] = ops::floatToBf16(float(row[j] * scale));
  }
}

template <typename T>
void crossEntropy(const KernelCall &call, bool grad, T *workspace,
                  uint64_t workspaceElements) {
  const TensorRef &labels = call.inputs[1];
  const T *logits = inData<T>(call, 0);
  int64_t c = call.inputs[0].shape.back(),
          rows = call.inputs[0].numElements / c;
  for (int64_t r = 0; r < rows; ++r)
    checkedIndex(labels, r, c, "label");
  if (call.inputs[0].dtype == DType::BF16)
    return crossEntropyBf16<T>(call, grad, workspace, workspaceElements);
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
void runCrossEntropy(const KernelCall &call, T *workspace,
                     uint64_t workspaceElements) {
  crossEntropy<T>(call, false, workspace, workspaceElements);
}

template <typename T>
void runCrossEntropyGrad(const KernelCall &call, T *workspace,
                         uint64_t workspaceElements) {
  crossEntropy<T>(call, true, workspace, workspaceElements);
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

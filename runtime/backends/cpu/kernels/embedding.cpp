//===- embedding.cpp - embedding (gather), embedding_grad (scatter-add) --===//
//
// Both check every index against [0, V) before writing anything, so a bad
// index throws std::runtime_error and leaves no partial result.
// embedding_grad adds the rows of dy into dtable in the float type, in
// position order.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/kernels/Common.h"

namespace remat::runtime::cpu {

template <typename T> void runEmbedding(const KernelCall &call, T *, uint64_t) {
  const TensorRef &indices = call.inputs[1];
  const T *table = inData<T>(call, 0);
  T *y = outData<T>(call, 0);
  int64_t v = call.inputs[0].shape[0], d = call.inputs[0].shape[1];
  // Validate every index before writing (no partial result on error).
  for (int64_t p = 0, n = indices.numElements; p < n; ++p)
    checkedIndex(indices, p, v, "index");
  for (int64_t p = 0, n = indices.numElements; p < n; ++p) {
    int64_t row = readIndex(indices, p);
    std::copy(table + row * d, table + (row + 1) * d, y + p * d);
  }
}

template <typename T>
void runEmbeddingGrad(const KernelCall &call, T *, uint64_t) {
  const TensorRef &indices = call.inputs[0];
  const T *dy = inData<T>(call, 1);
  T *dtable = outData<T>(call, 0);
  int64_t v = call.outputs[0].shape[0], d = call.outputs[0].shape[1];
  // Validate every index before writing, so a bad one leaves no partial
  // result behind.
  for (int64_t p = 0, n = indices.numElements; p < n; ++p)
    checkedIndex(indices, p, v, "index");
  std::fill(dtable, dtable + call.outputs[0].numElements, T(0));
  for (int64_t p = 0, n = indices.numElements; p < n; ++p) {
    int64_t row = readIndex(indices, p);
    for (int64_t j = 0; j < d; ++j)
      dtable[row * d + j] += dy[p * d + j];
  }
}

template void runEmbedding<float>(const KernelCall &, float *, uint64_t);
template void runEmbedding<double>(const KernelCall &, double *, uint64_t);
template void runEmbeddingGrad<float>(const KernelCall &, float *, uint64_t);
template void runEmbeddingGrad<double>(const KernelCall &, double *, uint64_t);

} // namespace remat::runtime::cpu

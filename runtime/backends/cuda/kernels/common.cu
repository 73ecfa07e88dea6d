//===- common.cu - Shared host helpers, status kernel, scratch sizing ----===//
#include "runtime/backends/cuda/kernels/common.cuh"

#include <stdexcept>

namespace remat::runtime::cuda {

StridedIndex makeStridedIndex(const Shape &shape,
                              const std::vector<int64_t> &strides) {
  if (shape.size() > size_t(kMaxRank))
    throw std::runtime_error("cuda: rank " + std::to_string(shape.size()) +
                             " exceeds the strided kernels' limit of " +
                             std::to_string(kMaxRank));
  StridedIndex ix;
  ix.rank = int(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    ix.size[d] = shape[d];
    ix.stride[d] = strides[d];
  }
  return ix;
}

int64_t numElementsOf(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

unsigned rowGrid(int64_t rows, const char *kernel) {
  if (rows > kMaxGridX)
    throw std::runtime_error(std::string("cuda: ") + kernel + " over " +
                             std::to_string(rows) +
                             " rows: one block per row exceeds the grid's " +
                             std::to_string(kMaxGridX) + " blocks");
  return unsigned(rows);
}

void checkLaunch(const char *kernel, const char *file, int line) {
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    throw std::runtime_error(std::string("cuda: launch of ") + kernel +
                             " failed: " + cudaGetErrorString(err) + " (" +
                             file + ":" + std::to_string(line) + ")");
}

namespace {

__global__ void setTrainingStepKernel(DeviceStatus *status, int64_t step) {
  status->trainingStep = step;
}

/// One block: per-thread strided double sums, then the fixed block tree.
__global__ void sumDoublesKernel(const double *values, int64_t count,
                                 double divisor, float *out) {
  __shared__ double shared[32];
  double sum = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x)
    sum += values[i];
  sum = blockSum(sum, shared);
  if (threadIdx.x == 0)
    *out = float(sum / divisor);
}

} // namespace

void launchSetTrainingStep(DeviceStatus *status, int64_t step,
                           cudaStream_t stream) {
  REMAT_LAUNCH(1, 1, 0, stream, setTrainingStepKernel)(status, step);
  REMAT_CUDA_CHECK_LAUNCH("setTrainingStepKernel");
}

void launchSumDoubles(const double *values, int64_t count, double divisor,
                      float *out, cudaStream_t stream) {
  REMAT_LAUNCH(1, 1024, 0, stream, sumDoublesKernel)
  (values, count, divisor, out);
  REMAT_CUDA_CHECK_LAUNCH("sumDoublesKernel");
}

int64_t rowBlocksFor(OpKind op, const std::vector<TensorType> &inputs) {
  switch (op) {
  case OpKind::Softmax:
  case OpKind::SoftmaxGrad:
  case OpKind::LayerNorm:
  case OpKind::LayerNormGrad:
  case OpKind::CrossEntropy:
  case OpKind::CrossEntropyGrad: {
    const Shape &x = inputs[0].shape;
    int64_t d = x.empty() ? 1 : x.back();
    return d > 0 ? numElementsOf(x) / d : 0;
  }
  default:
    return 0;
  }
}

uint64_t scratchBytesFor(OpKind op, const OpAttrs &attrs,
                         const std::vector<TensorType> &inputs,
                         const std::vector<TensorType> &outputs) {
  switch (op) {
  case OpKind::ReduceSum:
  case OpKind::ReduceMean:
    return reduceScratchBytes(inputs[0].shape, outputs[0].shape, false,
                              attrs.axes);
  case OpKind::SumTo:
    return reduceScratchBytes(inputs[0].shape, outputs[0].shape, true, {});
  case OpKind::LayerNormGrad:
    return layerNormGradScratchBytes(inputs[0].shape);
  case OpKind::EmbeddingGrad:
    return embeddingGradScratchBytes(numElementsOf(inputs[0].shape),
                                     outputs[0].shape[0]);
  case OpKind::CrossEntropy:
  case OpKind::Mse:
    return lossScratchBytes(op, inputs[0].shape);
  case OpKind::Attention:
  case OpKind::AttentionGrad:
    return attentionScratchBytes(op, inputs[0].shape);
  default:
    return 0;
  }
}

} // namespace remat::runtime::cuda

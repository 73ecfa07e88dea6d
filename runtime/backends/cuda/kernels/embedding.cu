//===- embedding.cu - embedding (gather) and embedding_grad (segmented) --===//
//
// embedding: one thread per output element; an index outside [0, V) is
// recorded in DeviceStatus (reported at synchronize) and its row is 0.
//
// embedding_grad without float atomics, so it is bitwise reproducible:
//   1. keys[p] = index p as unsigned (V for a bad index, which sorts last and
//   is
//      dropped), values[p] = p;
//   2. stable radix sort of (key, p) pairs (CUB): positions grouped by row,
//      increasing p within a row;
//   3. segment starts: start[v] = lower_bound(sorted keys, v), v <= V;
//   4. dtable[v, j] = sum of dy[p, j] over row v's positions in increasing p,
//      in f32 from 0: the CPU's order, so the result is bitwise equal.
// Scratch: 4 P + V + 1 32-bit words and CUB's temporary storage.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/kernels/common.cuh"

#include "runtime/backends/cuda/CudaCheck.h"

#include <cub/device/device_radix_sort.cuh>

#include <climits>
#include <stdexcept>

namespace remat::runtime::cuda {

namespace {

uint64_t alignUp(uint64_t v) { return (v + 255) / 256 * 256; }

int endBitFor(int64_t maxKey) {
  int bits = 1;
  while (bits < 31 && (int64_t(1) << bits) <= maxKey)
    ++bits;
  return bits;
}

__global__ void embeddingKernel(const float *table, const void *indices,
                                bool indices64, int64_t positions, int64_t v,
                                int64_t d, float *y, DeviceStatus *status,
                                int64_t stepIndex) {
  int64_t n = positions * d;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t p = i / d, j = i % d;
    int64_t row = loadIndex(indices, indices64, p);
    if (row < 0 || row >= v) {
      if (j == 0)
        recordIndexError(status, 0, stepIndex, row, p, v);
      y[i] = 0.0f;
    } else {
      y[i] = table[row * d + j];
    }
  }
}

__global__ void embeddingKeysKernel(const void *indices, bool indices64,
                                    int64_t positions, int64_t v,
                                    unsigned *keys, int *values,
                                    DeviceStatus *status, int64_t stepIndex) {
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       p < positions; p += int64_t(gridDim.x) * blockDim.x) {
    int64_t row = loadIndex(indices, indices64, p);
    if (row < 0 || row >= v) {
      recordIndexError(status, 0, stepIndex, row, p, v);
      row = v;
    }
    keys[p] = unsigned(row);
    values[p] = int(p);
  }
}

__global__ void segmentStartKernel(const unsigned *sortedKeys,
                                   int64_t positions, int64_t v, int *start) {
  for (int64_t row = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; row <= v;
       row += int64_t(gridDim.x) * blockDim.x) {
    int64_t lo = 0, hi = positions;
    while (lo < hi) {
      int64_t mid = (lo + hi) / 2;
      if (int64_t(sortedKeys[mid]) < row)
        lo = mid + 1;
      else
        hi = mid;
    }
    start[row] = int(lo);
  }
}

__global__ void segmentSumKernel(const float *dy, const int *order,
                                 const int *start, int64_t v, int64_t d,
                                 float *dtable) {
  int64_t n = v * d;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t row = i / d, j = i % d;
    float sum = 0.0f;
    for (int s = start[row], e = start[row + 1]; s < e; ++s)
      sum += dy[int64_t(order[s]) * d + j];
    dtable[i] = sum;
  }
}

size_t cubTempBytes(int64_t positions, int64_t v) {
  size_t bytes = 0;
  REMAT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, bytes, static_cast<const unsigned *>(nullptr),
      static_cast<unsigned *>(nullptr), static_cast<const int *>(nullptr),
      static_cast<int *>(nullptr), int(positions), 0, endBitFor(v)));
  return bytes;
}

void checkSizes(int64_t positions, int64_t v) {
  if (positions >= INT_MAX || v >= INT_MAX)
    throw std::runtime_error("cuda: embedding_grad with " +
                             std::to_string(positions) + " positions and " +
                             std::to_string(v) +
                             " rows exceeds the 32-bit sort keys");
}

} // namespace

uint64_t embeddingGradScratchBytes(int64_t positions, int64_t vocab) {
  checkSizes(positions, vocab);
  return 4 * alignUp(uint64_t(positions) * sizeof(int)) +
         alignUp(uint64_t(vocab + 1) * sizeof(int)) +
         alignUp(cubTempBytes(positions, vocab));
}

void launchEmbedding(const KernelCall &call, const DeviceContext &ctx) {
  const TensorRef &table = call.inputs[0], &indices = call.inputs[1];
  int64_t v = table.shape[0], d = table.shape[1];
  REMAT_LAUNCH(gridFor(indices.numElements * d), kThreads, 0, ctx.stream,
               embeddingKernel)
  (table.as<const float>(), indices.data, indices.dtype == DType::I64,
   indices.numElements, v, d, call.outputs[0].as<float>(), ctx.status,
   int64_t(call.stepIndex));
  REMAT_CUDA_CHECK_LAUNCH("embeddingKernel");
}

void launchEmbeddingGrad(const KernelCall &call, const DeviceContext &ctx) {
  const TensorRef &indices = call.inputs[0], &dy = call.inputs[1];
  const TensorRef &dtable = call.outputs[0];
  int64_t positions = indices.numElements;
  int64_t v = dtable.shape[0], d = dtable.shape[1];
  checkSizes(positions, v);
  char *scratch = static_cast<char *>(ctx.scratch);
  uint64_t keyBytes = alignUp(uint64_t(positions) * sizeof(int));
  unsigned *keysIn = reinterpret_cast<unsigned *>(scratch);
  unsigned *keysOut = reinterpret_cast<unsigned *>(scratch + keyBytes);
  int *valuesIn = reinterpret_cast<int *>(scratch + 2 * keyBytes);
  int *valuesOut = reinterpret_cast<int *>(scratch + 3 * keyBytes);
  int *start = reinterpret_cast<int *>(scratch + 4 * keyBytes);
  void *temp = scratch + 4 * keyBytes + alignUp(uint64_t(v + 1) * sizeof(int));
  size_t tempBytes = cubTempBytes(positions, v);

  REMAT_LAUNCH(gridFor(positions), kThreads, 0, ctx.stream, embeddingKeysKernel)
  (indices.data, indices.dtype == DType::I64, positions, v, keysIn, valuesIn,
   ctx.status, int64_t(call.stepIndex));
  REMAT_CUDA_CHECK_LAUNCH("embeddingKeysKernel");
  REMAT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      temp, tempBytes, keysIn, keysOut, valuesIn, valuesOut, int(positions), 0,
      endBitFor(v), ctx.stream));
  REMAT_LAUNCH(gridFor(v + 1), kThreads, 0, ctx.stream, segmentStartKernel)
  (keysOut, positions, v, start);
  REMAT_CUDA_CHECK_LAUNCH("segmentStartKernel");
  REMAT_LAUNCH(gridFor(v * d), kThreads, 0, ctx.stream, segmentSumKernel)
  (dy.as<const float>(), valuesOut, start, v, d, dtable.as<float>());
  REMAT_CUDA_CHECK_LAUNCH("segmentSumKernel");
}

} // namespace remat::runtime::cuda

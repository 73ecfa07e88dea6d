//===- common.cuh - Shared device helpers of the CUDA kernels ------------===//
//
// Launch geometry, strided index walking (rank <= kMaxRank), deterministic
// block reductions (fixed shuffle tree, then warps in index order: the same
// bits every run, no atomics on floats) and the device-side error record
// that embedding / cross_entropy write when an index is out of range.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_BACKENDS_CUDA_KERNELS_COMMON_CUH
#define REMAT_RUNTIME_BACKENDS_CUDA_KERNELS_COMMON_CUH

#include "runtime/Strides.h"
#include "runtime/backends/cuda/kernels/Kernels.h"

#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>
#include <string>
#include <vector>

namespace remat::runtime::cuda {

inline constexpr int kThreads = 256;

/// `REMAT_LAUNCH(grid, block, sharedBytes, stream, kernel)(args...)` is
/// `kernel<<<grid, block, sharedBytes, stream>>>(args...)`, written so that
/// the host compiler parses it too: the CUDA emulator
/// (REMAT_CUDA_EMULATOR=ON, emu/include/cuda_runtime.h) runs the same
/// kernels on the CPU. The kernel comes last, so a template's commas need
/// no parentheses. It first clears the runtime's last error (every failed
/// runtime call sets it, a cudaMalloc that REMAT_CUDA_CHECK already threw
/// for included), so REMAT_CUDA_CHECK_LAUNCH reports this launch's error
/// only. A sticky device error survives the clear: the launch fails again.
#ifdef REMAT_CUDA_EMULATION
#define REMAT_LAUNCH(grid, block, sharedBytes, stream, ...)                    \
  (void)cudaGetLastError(),                                                    \
      REMAT_EMU_LAUNCH(grid, block, sharedBytes, stream, __VA_ARGS__)
#else
#define REMAT_LAUNCH(grid, block, sharedBytes, stream, ...)                    \
  (void)cudaGetLastError(), __VA_ARGS__<<<grid, block, sharedBytes, stream>>>
#endif

/// Blocks for a grid-stride loop over n elements.
inline unsigned gridFor(int64_t n, int threads = kThreads) {
  int64_t blocks = (n + threads - 1) / threads;
  if (blocks < 1)
    blocks = 1;
  if (blocks > (int64_t(1) << 20))
    blocks = int64_t(1) << 20; // grid-stride loops cover the rest
  return unsigned(blocks);
}

/// Throws (naming the kernel, file and line) if the last launch failed.
#define REMAT_CUDA_CHECK_LAUNCH(kernelName)                                    \
  ::remat::runtime::cuda::checkLaunch(kernelName, __FILE__, __LINE__)

/// Row-major walk of a shape with one stride set per operand.
struct StridedIndex {
  int rank = 0;
  int64_t size[kMaxRank] = {};
  int64_t stride[kMaxRank] = {};
};

/// Offset of linear row-major index `linear` of `ix`'s shape under its
/// strides.
__device__ inline int64_t stridedOffset(const StridedIndex &ix,
                                        int64_t linear) {
  int64_t offset = 0;
  for (int d = ix.rank - 1; d >= 0; --d) {
    int64_t i = linear % ix.size[d];
    linear /= ix.size[d];
    offset += i * ix.stride[d];
  }
  return offset;
}

/// stridedOffset in 32-bit arithmetic. Valid when the walk has fewer than
/// 2^31 elements and so has the operand (every stride and offset then fits):
/// a 64-bit division is a long software sequence on the GPU, a 32-bit one a
/// few instructions, and strided kernels divide once per dim per element.
__device__ inline uint32_t stridedOffset32(const StridedIndex &ix,
                                           uint32_t linear) {
  uint32_t offset = 0;
  for (int d = ix.rank - 1; d >= 0; --d) {
    uint32_t size = uint32_t(ix.size[d]);
    uint32_t next = linear / size;
    offset += (linear - next * size) * uint32_t(ix.stride[d]);
    linear = next;
  }
  return offset;
}

/// stridedOffset for an index type: uint32_t (the fast path, see
/// stridedOffset32) or int64_t.
template <typename Index>
__device__ inline Index stridedOffsetAs(const StridedIndex &ix, Index linear) {
  if constexpr (sizeof(Index) == 4)
    return stridedOffset32(ix, linear);
  else
    return stridedOffset(ix, linear);
}

/// Whether a grid-stride loop over n elements (and operands no larger) may
/// use 32-bit indices: i < n < 2^31 and i + the grid's stride (at most
/// 2^20 blocks * 1024 threads = 2^30) stays below 2^32, so unsigned
/// arithmetic never wraps.
inline bool fitsIndex32(int64_t n) { return n < (int64_t(1) << 31); }

/// bf16 (its bits: the upper half of a float) to float, exactly.
__device__ inline float widenBf16(uint16_t h) {
  return __uint_as_float(uint32_t(h) << 16);
}

/// float to bf16 bits, to nearest, ties to even; a NaN stays a quiet NaN
/// (as ops/BFloat16.h on the CPU).
__device__ inline uint16_t narrowToBf16(float f) {
  uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((u >> 16) | 0x40);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/// Element i of a float tensor or of a bf16 one (uint16_t bits), as float;
/// and a float stored into either (rounded to bf16 there). The elementwise
/// kernels are templates over the element type through these.
template <typename Index>
__device__ inline float loadFloat(const float *p, Index i) {
  return p[i];
}
template <typename Index>
__device__ inline float loadFloat(const uint16_t *p, Index i) {
  return widenBf16(p[i]);
}
template <typename Index>
__device__ inline void storeFloat(float *p, Index i, float v) {
  p[i] = v;
}
template <typename Index>
__device__ inline void storeFloat(uint16_t *p, Index i, float v) {
  p[i] = narrowToBf16(v);
}

/// Calls fn(E{}) with E the element type a kernel template over both takes
/// for `dtype`: uint16_t (the bits) for bf16, float otherwise.
template <typename Fn> inline void withElementType(DType dtype, Fn &&fn) {
  if (dtype == DType::BF16)
    fn(uint16_t{});
  else
    fn(float{});
}

/// StridedIndex of `shape` with `strides` (throws past kMaxRank).
StridedIndex makeStridedIndex(const Shape &shape,
                              const std::vector<int64_t> &strides);
int64_t numElementsOf(const Shape &shape);

/// Deterministic warp sum: a fixed xor-butterfly, every lane gets the sum.
template <typename T> __device__ inline T warpSum(T v) {
  for (int offset = 16; offset > 0; offset >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

template <typename T> __device__ inline T warpMax(T v) {
  for (int offset = 16; offset > 0; offset >>= 1)
    v = max(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

/// Deterministic block sum (blockDim.x a multiple of 32, <= 1024): every
/// thread gets the same value. `shared` holds 32 T. Call from all threads.
template <typename T> __device__ inline T blockSum(T v, T *shared) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int numWarps = int(blockDim.x) >> 5;
  v = warpSum(v);
  __syncthreads(); // shared may still be read by a previous call
  if (lane == 0)
    shared[warp] = v;
  __syncthreads();
  T total = lane < numWarps ? shared[lane] : T(0);
  total = warpSum(total);
  return total;
}

template <typename T> __device__ inline T blockMax(T v, T *shared, T lowest) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int numWarps = int(blockDim.x) >> 5;
  v = warpMax(v);
  __syncthreads();
  if (lane == 0)
    shared[warp] = v;
  __syncthreads();
  T total = lane < numWarps ? shared[lane] : lowest;
  return warpMax(total);
}

/// Threads per block for a row of length d: a multiple of 32, <= 256.
inline int rowThreads(int64_t d) {
  int t = 32;
  while (t < 256 && t < d)
    t *= 2;
  return t;
}

/// Records the first out-of-range index (flag 0 -> 1 by integer CAS; only
/// the winner writes the details). Never throws; checked at synchronize.
__device__ inline void recordIndexError(DeviceStatus *status, int kind,
                                        int64_t stepIndex, int64_t value,
                                        int64_t position, int64_t limit) {
  if (atomicCAS(&status->errorFlag, 0, 1) == 0) {
    status->errorKind = kind;
    status->errorStep = stepIndex;
    status->errorValue = value;
    status->errorPosition = position;
    status->errorLimit = limit;
    __threadfence_system();
  }
}

__device__ inline int64_t loadIndex(const void *data, bool is64, int64_t i) {
  return is64 ? static_cast<const int64_t *>(data)[i]
              : int64_t(static_cast<const int32_t *>(data)[i]);
}

/// y[0..visible) = softmax(x[0..visible)), y[visible..d) = 0 (attention's
/// causal rows use visible < d). In place is allowed. All threads call.
__device__ inline void softmaxRow(const float *x, float *y, int64_t visible,
                                  int64_t d) {
  __shared__ float sharedMax[32];
  __shared__ double sharedSum[32];
  float localMax = -FLT_MAX;
  for (int64_t j = threadIdx.x; j < visible; j += blockDim.x)
    localMax = fmaxf(localMax, x[j]);
  float rowMax = blockMax(localMax, sharedMax, -FLT_MAX);
  double localSum = 0;
  for (int64_t j = threadIdx.x; j < visible; j += blockDim.x) {
    float e = expf(x[j] - rowMax);
    y[j] = e;
    localSum += double(e);
  }
  double sum = blockSum(localSum, sharedSum);
  float inv = float(1.0 / sum);
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x)
    y[j] = j < visible ? y[j] * inv : 0.0f;
}

} // namespace remat::runtime::cuda

#endif // REMAT_RUNTIME_BACKENDS_CUDA_KERNELS_COMMON_CUH

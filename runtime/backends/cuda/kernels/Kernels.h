//===- Kernels.h - Host entry points of the CUDA kernels -----------------===//
//
// One launcher per op family (kernels/<op>.cu). Every launcher enqueues on
// ctx.stream only (so a whole training step can be captured into a CUDA
// graph), reads step-dependent values (the training step of dropout and
// adamw) from ctx.status on the device rather than from host arguments (so
// a captured graph replays correctly at later steps), uses no scratch
// beyond ctx.scratch, and throws std::runtime_error naming the failing
// launch on error. Math mirrors the CPU kernel of the same family, in
// runtime/backends/cpu/kernels/ (same file names, .cpp for .cu).
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_BACKENDS_CUDA_KERNELS_KERNELS_H
#define REMAT_RUNTIME_BACKENDS_CUDA_KERNELS_KERNELS_H

#include "runtime/Backend.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

namespace remat::runtime::cuda {

/// Largest tensor rank the strided kernels (transpose, broadcast, reduce)
/// handle; checkSupport rejects plans with larger ranks.
inline constexpr int kMaxRank = 8;

/// Device-resident state at the start of the workspace: the current
/// training step (written by a 1-thread kernel before each step, so graph
/// replays see it) and the first index error of the step.
struct DeviceStatus {
  int64_t trainingStep;
  int errorFlag;
  int errorKind; ///< 0 = embedding index, 1 = cross_entropy label
  int64_t errorStep;
  int64_t errorValue;
  int64_t errorPosition;
  int64_t errorLimit;
};

/// What a launcher needs besides the call.
struct DeviceContext {
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  DeviceStatus *status = nullptr; ///< device pointer
  void *scratch = nullptr;        ///< per-step scratch, scratchBytes long
  uint64_t scratchBytes = 0;
};

/// The most blocks a launch may have in grid.x (2^31 - 1).
inline constexpr int64_t kMaxGridX = 2147483647;

/// Blocks in grid.x of the op's one-block-per-row kernel (a block for each
/// row of its first input, the row being the last dimension), or 0 when
/// its kernels use grid-stride loops (whose grids are capped). checkSupport
/// refuses plans where this exceeds kMaxGridX; the launchers check it too
/// (rowGrid in common.cuh).
int64_t rowBlocksFor(OpKind op, const std::vector<TensorType> &inputs);

/// grid.x of a one-block-per-row launch of `kernel`: `rows`, or a
/// std::runtime_error when rows exceed kMaxGridX (checkSupport refuses such
/// plans first, naming the step; an unsigned cast would launch too few).
unsigned rowGrid(int64_t rows, const char *kernel);

/// Scratch bytes the kernel of `op` needs for these operand/result types
/// (0 for most ops). Must agree with what the launcher uses.
uint64_t scratchBytesFor(OpKind op, const OpAttrs &attrs,
                         const std::vector<TensorType> &inputs,
                         const std::vector<TensorType> &outputs);

/// Throws std::runtime_error "cuda: launch of <kernel> failed: <error>
/// (<file>:<line>)" if the last launch failed.
void checkLaunch(const char *kernel, const char *file, int line);

/// Writes `step` into status->trainingStep (enqueued on stream).
void launchSetTrainingStep(DeviceStatus *status, int64_t step,
                           cudaStream_t stream);

/// Generates a randn / randint input at dst (enqueued on stream).
void launchSynthetic(void *dst, const SyntheticRequest &request,
                     cudaStream_t stream);

// One launcher per kernel family of the op table (ops/OpTable.h):
// launchMatmul, launchBinary, ...
#define REMAT_KERNEL_FAMILY(Family)                                            \
  void launch##Family(const KernelCall &call, const DeviceContext &ctx);
#include "ops/generated/OpTable.inc"

// Scratch sizing of the families that need it (see scratchBytesFor).
uint64_t reduceScratchBytes(const Shape &x, const Shape &y, bool isSumTo,
                            const std::vector<int64_t> &axes);
uint64_t layerNormGradScratchBytes(const Shape &x);
uint64_t embeddingGradScratchBytes(int64_t positions, int64_t vocab);
uint64_t lossScratchBytes(OpKind op, const Shape &x);
uint64_t attentionScratchBytes(OpKind op, const Shape &q);
/// One (batch, head) slice of attention's scratch (S*S floats, twice for
/// attention_grad): the least it works with, in chunks of what it holds.
uint64_t attentionSliceBytes(OpKind op, const Shape &q);

/// Row-major strided-batched GEMM through cuBLAS:
/// C_i = alpha * op(A_i) op(B_i) + beta * C_i for i < batch, where
/// op(A) is m x k, op(B) is k x n, C is m x n with leading dim ldc.
void gemmRowMajor(const DeviceContext &ctx, bool transA, bool transB, int64_t m,
                  int64_t n, int64_t k, float alpha, const float *a,
                  int64_t lda, int64_t strideA, const float *b, int64_t ldb,
                  int64_t strideB, float beta, float *c, int64_t ldc,
                  int64_t strideC, int64_t batch);
/// The element types of a GEMM's A, B and C.
enum class GemmIo {
  F32,     ///< float32 throughout (cuBLAS's Sgemm)
  Bf16,    ///< bf16 A, B and C, float compute (GemmEx), C rounded
  Bf16F32, ///< bf16 A and B, float32 C (GemmEx): a parameter's gradient
};

/// gemmRowMajor on operands and result of `io`.
void gemmRowMajorOf(const DeviceContext &ctx, GemmIo io, bool transA,
                    bool transB, int64_t m, int64_t n, int64_t k, float alpha,
                    const void *a, int64_t lda, int64_t strideA, const void *b,
                    int64_t ldb, int64_t strideB, float beta, void *c,
                    int64_t ldc, int64_t strideC, int64_t batch);

/// *out = float(sum of `count` doubles at `values` / divisor): one block,
/// fixed order (deterministic).
void launchSumDoubles(const double *values, int64_t count, double divisor,
                      float *out, cudaStream_t stream);

} // namespace remat::runtime::cuda

#endif // REMAT_RUNTIME_BACKENDS_CUDA_KERNELS_KERNELS_H

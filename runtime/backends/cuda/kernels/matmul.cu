//===- matmul.cu - matmul through cuBLAS (row-major on column-major) -----===//
//
// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, so every
// GEMM swaps the operands and passes n, m instead of m, n. Math mode: plain
// f32 unless REMAT_CUDA_TF32=1 set CUBLAS_TF32_TENSOR_OP_MATH on the handle.
// A matmul on bf16 operands (--precision bf16) is one GemmEx: bf16 inputs,
// float compute, the result rounded to bf16 or (a parameter's gradient)
// float32.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/kernels/common.cuh"

#include <climits>
#include <stdexcept>

namespace remat::runtime::cuda {

namespace {

int checkedInt(int64_t v, const char *what) {
  if (v < 0 || v > INT_MAX)
    throw std::runtime_error(std::string("cuda: GEMM ") + what + " " +
                             std::to_string(v) +
                             " exceeds cuBLAS's 32-bit limit");
  return int(v);
}

} // namespace

void gemmRowMajor(const DeviceContext &ctx, bool transA, bool transB, int64_t m,
                  int64_t n, int64_t k, float alpha, const float *a,
                  int64_t lda, int64_t strideA, const float *b, int64_t ldb,
                  int64_t strideB, float beta, float *c, int64_t ldc,
                  int64_t strideC, int64_t batch) {
  gemmRowMajorOf(ctx, GemmIo::F32, transA, transB, m, n, k, alpha, a, lda,
                 strideA, b, ldb, strideB, beta, c, ldc, strideC, batch);
}

void gemmRowMajorOf(const DeviceContext &ctx, GemmIo io, bool transA,
                    bool transB, int64_t m, int64_t n, int64_t k, float alpha,
                    const void *a, int64_t lda, int64_t strideA, const void *b,
                    int64_t ldb, int64_t strideB, float beta, void *c,
                    int64_t ldc, int64_t strideC, int64_t batch) {
  if (m == 0 || n == 0 || batch == 0)
    return;
  cublasOperation_t opA = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  int cm = checkedInt(n, "n"), cn = checkedInt(m, "m"), ck = checkedInt(k, "k");
  int cldb = checkedInt(ldb, "ldb"), clda = checkedInt(lda, "lda");
  int cldc = checkedInt(ldc, "ldc"), cbatch = checkedInt(batch, "batch");
  bool bf16 = io != GemmIo::F32;
  cublasStatus_t status =
      bf16 ? cublasGemmStridedBatchedEx(
                 ctx.cublas, opB, opA, cm, cn, ck, &alpha, b, CUDA_R_16BF, cldb,
                 strideB, a, CUDA_R_16BF, clda, strideA, &beta, c,
                 io == GemmIo::Bf16 ? CUDA_R_16BF : CUDA_R_32F, cldc, strideC,
                 cbatch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)
           : cublasSgemmStridedBatched(
                 ctx.cublas, opB, opA, cm, cn, ck, &alpha,
                 static_cast<const float *>(b), cldb, strideB,
                 static_cast<const float *>(a), clda, strideA, &beta,
                 static_cast<float *>(c), cldc, strideC, cbatch);
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(
        std::string("cuda: ") +
        (bf16 ? "cublasGemmStridedBatchedEx" : "cublasSgemmStridedBatched") +
        "(m=" + std::to_string(m) + ", n=" + std::to_string(n) +
        ", k=" + std::to_string(k) + ", batch=" + std::to_string(batch) +
        ") failed: " + cublasGetStatusString(status) + " (" + __FILE__ + ":" +
        std::to_string(__LINE__) + ")");
}

void launchMatmul(const KernelCall &call, const DeviceContext &ctx) {
  const OpAttrs &at = *call.attrs;
  const Shape &as = call.inputs[0].shape, &bs = call.inputs[1].shape;
  size_t ra = as.size(), rb = bs.size();
  int64_t m = at.transposeA ? as[ra - 1] : as[ra - 2];
  int64_t k = at.transposeA ? as[ra - 2] : as[ra - 1];
  int64_t n = at.transposeB ? bs[rb - 2] : bs[rb - 1];
  int64_t batch = 1;
  for (size_t d = 0; d + 2 < ra; ++d)
    batch *= as[d];
  bool sharedB = rb == 2;
  // (dispatch sends a bf16 matmul here only with bf16 A and B, and C bf16
  // or float32.)
  GemmIo io = call.inputs[0].dtype != DType::BF16    ? GemmIo::F32
              : call.outputs[0].dtype == DType::BF16 ? GemmIo::Bf16
                                                     : GemmIo::Bf16F32;
  const void *a = call.inputs[0].data, *b = call.inputs[1].data;
  void *c = call.outputs[0].data;
  int64_t lda = at.transposeA ? m : k, ldb = at.transposeB ? k : n;
  if (at.sumBatch) {
    // [batch*K, M]^T x [batch*K, N]: one GEMM over the flattened rows.
    gemmRowMajorOf(ctx, io, true, false, m, n, batch * k, 1.0f, a, lda, 0, b,
                   ldb, 0, 0.0f, c, n, 0, 1);
    return;
  }
  if (sharedB && !at.transposeA) {
    // [batch*M, K] x [K, N]: one GEMM over all batches (as the CPU does).
    gemmRowMajorOf(ctx, io, false, at.transposeB, batch * m, n, k, 1.0f, a, lda,
                   0, b, ldb, 0, 0.0f, c, n, 0, 1);
    return;
  }
  gemmRowMajorOf(ctx, io, at.transposeA, at.transposeB, m, n, k, 1.0f, a, lda,
                 m * k, b, ldb, sharedB ? 0 : k * n, 0.0f, c, n, m * n, batch);
}

} // namespace remat::runtime::cuda

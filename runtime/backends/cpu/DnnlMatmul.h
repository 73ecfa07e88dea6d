//===- DnnlMatmul.h - float32 GEMMs through oneDNN's matmul -----*- C++ -*-===//
//
// The CPU backend runs its float32 GEMMs (matmul, attention's products,
// every gradient of them, im2col convolutions) through oneDNN's matmul
// primitive where the build found oneDNN: on this project's CPUs it reaches
// a higher fraction of the machine's peak than Debian's OpenBLAS, whose
// dynamic kernel choice stops at AVX2 (docs/benchmarks.md). One primitive
// per GEMM shape (transposes, sizes, leading dimensions, alpha, beta), made
// on first use and kept for the process; each uses a user-provided
// scratchpad, so oneDNN allocates nothing per call. The compiler asks the
// same functions how much scratchpad each op's GEMMs need and reserves it
// in the step's workspace (CpuWorkspace.h), as it does for convolutions;
// oneDNN runs only the GEMMs whose implementation needs at most
// kMaxGemmScratchpadBytes (none), so that a plan's bytes stay those of
// every CPU it may be compiled on.
//
// Without oneDNN, with REMAT_CPU_GEMM=blas, or for a GEMM oneDNN refuses or
// whose scratchpad does not fit the scratch the kernel passes (im2col
// convolutions pass none), gemm() (Gemm.h) runs on OpenBLAS instead. Which one
// runs depends on the shape and the scratch the plan reserves for it, never on
// the budget.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_BACKENDS_CPU_DNNLMATMUL_H
#define REMAT_RUNTIME_BACKENDS_CPU_DNNLMATMUL_H

#include <cstdint>
#include <optional>

namespace remat::runtime::cpu {

/// One row-major GEMM: C[m,n] = alpha * op(A) op(B) + beta * C, where op
/// transposes or not and lda, ldb, ldc are the row strides as stored.
struct GemmShape {
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
  float alpha = 1, beta = 0;
};

/// The largest scratchpad a GEMM oneDNN runs may need; a GEMM whose
/// implementation needs more (brgemm's packing buffers on some CPUs) runs
/// on OpenBLAS.
inline constexpr uint64_t kMaxGemmScratchpadBytes = 0;

/// The alignment gemm() (Gemm.h) gives oneDNN's scratchpad within the
/// scratch a kernel passes, which therefore holds this much more.
inline constexpr uint64_t kGemmScratchAlignment = 64;

/// Whether float32 GEMMs go through oneDNN: built with it, and neither
/// REMAT_CPU_GEMM=blas nor setDnnlMatmulEnabled(false) turned it off.
bool dnnlMatmulEnabled();

/// Turns oneDNN's GEMMs on or off for this process (tests compare both
/// paths; on has no effect in a build without oneDNN).
void setDnnlMatmulEnabled(bool on);

/// oneDNN's scratchpad bytes for `gemm`; nullopt when oneDNN does not run
/// it (off, an empty or refused shape).
std::optional<uint64_t> dnnlMatmulScratchBytes(const GemmShape &gemm);

/// Runs `gemm` through oneDNN on dense float32 buffers with `scratch`
/// holding `scratchBytes`. Returns false, having done nothing, when oneDNN
/// does not run it or its scratchpad needs more than `scratchBytes`.
bool dnnlMatmulRun(const GemmShape &gemm, const float *a, const float *b,
                   float *c, void *scratch, uint64_t scratchBytes);

/// GEMMs run through oneDNN and GEMMs that fell back to OpenBLAS because
/// the scratch passed was too small, since the process started (tests
/// check that a plan's reserved scratch covers every GEMM).
struct DnnlMatmulCounts {
  uint64_t run = 0, scratchTooSmall = 0;
};
DnnlMatmulCounts dnnlMatmulCounts();

} // namespace remat::runtime::cpu

#endif // REMAT_RUNTIME_BACKENDS_CPU_DNNLMATMUL_H

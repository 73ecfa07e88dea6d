//===- DnnlMatmul.h - GEMMs through oneDNN's matmul -------------*- C++ -*-===//
//
// The CPU backend runs its float32 GEMMs (matmul, attention's products,
// every gradient of them, im2col convolutions) through oneDNN's matmul
// primitive where the build found oneDNN, unless OpenBLAS runs an AVX-512
// kernel on this CPU: Debian's OpenBLAS picks its AVX2 kernel on AMD's
// AVX-512 CPUs, where oneDNN is twice as fast, and its SkylakeX kernel on
// Intel's, where it beats oneDNN 2.6 (docs/cli.md, "CPU GEMMs"). It also
// runs the bf16 plans' all-bf16 matmuls on the bf16 buffers themselves
// (summed in float32, rounded once) where the CPU has bf16 instructions
// (avx512_bf16, AMX). One primitive per GEMM shape and types (transposes,
// sizes, leading dimensions, alpha, beta), made on first use and kept for
// the process; each uses a user-provided scratchpad, so oneDNN allocates
// nothing per call. The compiler asks the same functions how much
// scratchpad each op's GEMMs need and reserves it in the step's scratch
// (CpuWorkspace.h), as it does for convolutions. oneDNN runs no GEMM for
// which it has only its reference implementation, nor one whose
// scratchpad is over kMaxGemmScratchpadBytes.
//
// Without oneDNN, with REMAT_CPU_GEMM=blas, or for a float32 GEMM oneDNN
// refuses or whose scratchpad does not fit the scratch the kernel passes
// (im2col convolutions pass none), gemm() (Gemm.h) runs on OpenBLAS
// instead; a bf16 matmul oneDNN does not run goes on float copies
// (Bf16Staging.h). Which one runs depends on the CPU, the shape and the
// scratch the plan holds for it. REMAT_CPU_GEMM=onednn runs every float32
// GEMM oneDNN takes on oneDNN.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_BACKENDS_CPU_DNNLMATMUL_H
#define REMAT_RUNTIME_BACKENDS_CPU_DNNLMATMUL_H

#include <cstdint>
#include <optional>
#include <string>

namespace remat::runtime::cpu {

/// One row-major GEMM: C[m,n] = alpha * op(A) op(B) + beta * C, where op
/// transposes or not and lda, ldb, ldc are the row strides as stored. With
/// a batch over 1, `batch` such GEMMs in one oneDNN call, the (i+1)-th's A,
/// B and C strideA, strideB and strideC elements after the i-th's (gemm()
/// of Gemm.h runs one: batched GEMMs go to dnnlMatmulRun alone).
struct GemmShape {
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
  float alpha = 1, beta = 0;
  int64_t batch = 1, strideA = 0, strideB = 0, strideC = 0;
};

/// One GEMM of a batch: `g` with batch 1 and no strides.
inline GemmShape oneGemm(GemmShape g) {
  g.batch = 1;
  g.strideA = g.strideB = g.strideC = 0;
  return g;
}

/// The element types of a GEMM's A, B and C.
enum class GemmTypes : uint8_t {
  F32,     ///< float32 throughout
  Bf16,    ///< bf16 A, B and C; the products summed in float32
  Bf16F32, ///< bf16 A and B, float32 C (the sums themselves)
};

/// The largest scratchpad a GEMM oneDNN runs may need (brgemm's packing
/// buffers, on AVX-512 CPUs well under 1 MiB for GPT-2's shapes); a GEMM
/// whose implementation needs more runs as if oneDNN refused it.
inline constexpr uint64_t kMaxGemmScratchpadBytes = uint64_t(64) << 20;

/// The alignment gemm() (Gemm.h) gives oneDNN's scratchpad within the
/// scratch a kernel passes, which therefore holds this much more.
inline constexpr uint64_t kGemmScratchAlignment = 64;

/// Whether GEMMs go through oneDNN: built with it, and neither
/// REMAT_CPU_GEMM=blas nor setDnnlMatmulEnabled(false) turned it off
/// (float32 GEMMs may still stay on OpenBLAS by the rule above).
bool dnnlMatmulEnabled();

/// Turns oneDNN's GEMMs on (every float32 GEMM it takes, as
/// REMAT_CPU_GEMM=onednn) or off for this process (tests compare both
/// paths; on has no effect in a build without oneDNN).
void setDnnlMatmulEnabled(bool on);

/// setDnnlMatmulEnabled(on) while it lives; then the mode it found again
/// (REMAT_CPU_GEMM's rule included). For tests.
class DnnlMatmulSwitch {
public:
  explicit DnnlMatmulSwitch(bool on);
  ~DnnlMatmulSwitch();
  DnnlMatmulSwitch(const DnnlMatmulSwitch &) = delete;
  DnnlMatmulSwitch &operator=(const DnnlMatmulSwitch &) = delete;

private:
  int saved;
};

/// oneDNN's scratchpad bytes for `gemm` on operands of `types`; nullopt
/// when oneDNN does not run it (off, an empty or refused shape, types this
/// CPU has no kernel for).
std::optional<uint64_t>
dnnlMatmulScratchBytes(const GemmShape &gemm, GemmTypes types = GemmTypes::F32);

/// Runs `gemm` through oneDNN on dense buffers of `types` with `scratch`
/// (64-byte aligned) holding `scratchBytes`. Returns false, having done
/// nothing, when oneDNN does not run it or its scratchpad needs more than
/// `scratchBytes`.
bool dnnlMatmulRun(const GemmShape &gemm, GemmTypes types, const void *a,
                   const void *b, void *c, void *scratch,
                   uint64_t scratchBytes);

/// The implementation oneDNN runs `gemm` of `types` with (its
/// impl_info_str: "brg:avx512_core_amx_bf16"), or why none runs it.
std::string dnnlMatmulImplementation(const GemmShape &gemm, GemmTypes types);

/// GEMMs run through oneDNN and GEMMs that fell back to OpenBLAS because
/// the scratch passed was too small, since the process started (tests
/// check that a plan's reserved scratch covers every GEMM).
struct DnnlMatmulCounts {
  uint64_t run = 0, scratchTooSmall = 0;
};
DnnlMatmulCounts dnnlMatmulCounts();

} // namespace remat::runtime::cpu

#endif // REMAT_RUNTIME_BACKENDS_CPU_DNNLMATMUL_H

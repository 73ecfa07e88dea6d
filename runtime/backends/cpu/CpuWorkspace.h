//===- CpuWorkspace.h - The CPU backend's kernel scratch, by op ---*- C++ -*-===//
//
// The scratch the CPU backend's kernels need beside the arena, as a function
// of an op and its operand shapes only. MLIR-free and BLAS-free, so that the
// compiler reserves exactly what the runtime will allocate (the budget
// covers it: docs/cli.md, `workspace_bytes`) and the runtime sizes its
// workspace with the same function.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_BACKENDS_CPU_CPUWORKSPACE_H
#define REMAT_RUNTIME_BACKENDS_CPU_CPUWORKSPACE_H

#include "ops/OpTable.h"
#include "runtime/backends/cpu/DnnlMatmul.h"

#include <vector>

namespace remat::runtime::cpu {

using ops::DType;
using ops::OpAttrs;
using ops::OpKind;
using ops::Shape;

/// Scratch elements (of the float type the kernel computes in) the CPU
/// backend's own kernel of `op` needs for these operand and result shapes;
/// UINT64_MAX when the count does not fit 64 bits. Attention: S*S (the
/// scores of one batch and head); attention_grad: 2*S*S; conv2d and its
/// gradients: convWorkspaceElements; every other op: 0. The backend cannot
/// run `op` with less.
uint64_t cpuMinimumWorkspaceElements(OpKind op, const OpAttrs &attrs,
                                     const std::vector<Shape> &inputs,
                                     const std::vector<Shape> &outputs);

/// The scratch elements the CPU backend wants for `op`: the minimum and,
/// for matmul and attention, room after that for the scratchpad of the
/// op's largest GEMM where oneDNN runs it (gemmScratchElements); where
/// oneDNN runs a convolution (DnnlConv.h), its workspace where that is
/// more. What the compiler reserves in the budget; the backend runs a
/// GEMM or convolution through oneDNN only where its scratch holds the
/// scratchpad, else on its own kernels.
uint64_t cpuWorkspaceElements(OpKind op, const OpAttrs &attrs,
                              const std::vector<Shape> &inputs,
                              const std::vector<Shape> &outputs);

/// The GEMMs the CPU backend's matmul kernel runs for operands of shapes
/// `a` and `b`: `batch` of them at the shape's strides (in elements), each
/// its own call (oneGemm, DnnlMatmul.h); batch 1 where one GEMM covers
/// every batch (a shared 2-D B, sum_batch).
GemmShape matmulGemms(const OpAttrs &attrs, const Shape &a, const Shape &b);

/// Rows of C a piece holds where a bf16 GEMM C = A^T B runs on oneDNN as
/// C^T = B^T A, a piece of C^T's columns at a time, each transposed into
/// C: where C has over 8 times more rows than columns (GPT-2's logits
/// weight gradient, 50,257 x 768 over the batch's tokens), brgemm's copies
/// of a transposed A cost more than the pieces and their transposes
/// (docs/benchmarks.md). 0 where the GEMM runs whole.
int64_t transposedPieceRows(const GemmShape &gemm);
inline constexpr int64_t kTransposedPieceRows = 2048;

/// The GEMMs of attention or attention_grad on bf16 q, k, v (and dout)
/// (kernels/attention.cpp, runAttentionBf16), in the kernel's order: the
/// scores (bf16 products into float32), then O = P V (forward) or dV =
/// P^T dO, dP = dO V^T (bf16 products into float32), dQ = scale dS K,
/// dK = scale dS^T Q (backward), the others in float32 on a head's
/// widened operands; for heads of length `s` and width `dh`, `group`
/// heads at a time (each GEMM a batch of `group`). The op runs so where
/// oneDNN runs both bf16 ones.
struct AttentionBf16Gemm {
  GemmShape gemm;
  GemmTypes types;
};
std::vector<AttentionBf16Gemm> attentionBf16Gemms(OpKind op, float scale,
                                                  int64_t s, int64_t dh,
                                                  int64_t group);
/// The heads runAttentionBf16 takes at a time, of the `heads` (batch times
/// heads) of length `s`: the most, dividing `heads`, whose rows (group *
/// s) are at most kAttentionBf16GroupRows; 1 where s alone is. A head's
/// GEMMs at GPT-2's 256 x 64 are too small for oneDNN's threads (each a
/// few microseconds); a group's are one call each. For GPT-2 124M (96
/// heads of 256) its bf16 attention and gradient run in 0.27 s a step in
/// groups of 8 and 0.46 s a head at a time, with 7 MiB of scratch against
/// 0.9 MiB (docs/benchmarks.md).
int64_t attentionBf16Group(int64_t heads, int64_t s);
inline constexpr int64_t kAttentionBf16GroupRows = 2048;
/// The bytes runAttentionBf16 keeps per group of heads before the GEMMs'
/// scratchpad, each block 64-aligned, in float32: P, and for
/// attention_grad dP; then V and O (forward) or dO, K, Q, dV, dQ and dK.
uint64_t attentionBf16OwnBytes(OpKind op, int64_t s, int64_t dh, int64_t group);
/// The GEMM of a piece of `rows` rows of C: C^T's columns, B^T times those
/// columns of A, into a buffer of `rows` columns.
GemmShape transposedPiece(const GemmShape &gemm, int64_t rows);

/// Elements (4 bytes each) that hold oneDNN's scratchpad for the largest of
/// the GEMMs the CPU backend runs for an op of the Gemm shape rule,
/// attention or attention_grad; 0 for other ops, and where the GEMMs run
/// on OpenBLAS.
uint64_t gemmScratchElements(OpKind op, const OpAttrs &attrs,
                             const std::vector<Shape> &inputs);

/// x [N, C, H, W], w [O, C/groups, kh, kw] and y [N, O, OH, OW] of
/// conv2d, conv2d_grad_input or conv2d_grad_weight, wherever the op has
/// them among its operands and result.
struct ConvShapes {
  const Shape &x, &w, &y;
  ConvShapes(OpKind op, const std::vector<Shape> &inputs,
             const std::vector<Shape> &outputs)
      : x(op == OpKind::Conv2dGradInput ? outputs[0] : inputs[0]),
        w(op == OpKind::Conv2d            ? inputs[1]
          : op == OpKind::Conv2dGradInput ? inputs[0]
                                          : outputs[0]),
        y(op == OpKind::Conv2d ? outputs[0] : inputs[1]) {}
};

/// conv2d and its gradients unfold blocks of output positions into the
/// workspace (runtime/backends/cpu/kernels/conv.cpp): K = C/groups·kh·kw
/// rows of kConvScratchElements / K columns (4 MiB of f32), at least one.
inline constexpr int64_t kConvScratchElements = int64_t(1) << 20;

/// Output positions unfolded at once for a window of k elements and
/// `positions` = OH·OW output positions.
int64_t convChunkColumns(int64_t k, int64_t positions);

/// Workspace elements of conv2d, conv2d_grad_input or conv2d_grad_weight:
/// K x convChunkColumns, 0 for a pointwise (1x1, stride 1, unpadded) one.
uint64_t convWorkspaceElements(OpKind op, const OpAttrs &attrs,
                               const std::vector<Shape> &inputs,
                               const std::vector<Shape> &outputs);

/// The workspace bytes the CPU backend allocates for a step that wants
/// `wanted` and runs with no less than `least`, beside an arena of
/// `arenaBytes` under a budget of `budget` (0: none): what it wants, as far
/// as the budget leaves room beside the arena, never under the least. The
/// compiler reports it (workspace_bytes) and the runtime allocates it.
uint64_t cpuBudgetedWorkspaceBytes(uint64_t wanted, uint64_t least,
                                   uint64_t budget, uint64_t arenaBytes);

/// The operand whose channel moments op `op` takes: the one named x in the
/// op table, of batch normalization's three kernel families (its forward,
/// gradient and running statistics: SharedMoments.h); -1 for another op.
int momentsOperand(OpKind op);

/// `elements` of `elementBytes` each, in bytes, saturating at UINT64_MAX.
/// The CPU backend's workspace is the largest single op's need (ops run one
/// at a time).
uint64_t cpuWorkspaceBytes(uint64_t elements, uint64_t elementBytes);

/// The scratch bytes of `op` on operands and results of these types: what
/// it wants, or with `least` the least it runs with. The kernels compute in
/// double where a tensor is f64 (`--precision fp64`, where oneDNN takes no
/// part), else in float; an op that reads or writes bf16 tensors
/// (`--precision bf16`) also holds float copies of them (cpuBf16Staging).
uint64_t cpuStepScratchBytes(OpKind op, const OpAttrs &attrs,
                             const std::vector<ops::TensorType> &inputs,
                             const std::vector<ops::TensorType> &outputs,
                             bool least);

/// How the cpu backend runs an op on float copies of its bf16 operands and
/// results (Bf16Staging.cpp), and the bytes those copies take, each piece
/// rounded up to kStagingAlignment. They follow the kernel's own scratch in
/// the step's scratch.
struct Bf16Staging {
  enum class Kind {
    None,          ///< no bf16 tensor, or the kernel reads bf16 itself
    Whole,         ///< a float copy of every bf16 tensor
    Rows,          ///< elementwise: `block` rows (result dim 0) at a time; an
                   ///< operand broadcast along dim 0 copied whole
    GemmRows,      ///< GEMMs op(A) B, A untransposed: B copied whole,
                   ///< `block` rows of A and C at a time
    GemmCols,      ///< the same with A copied whole, `block` columns of
                   ///< op(B) and C at a time (B is read once)
    GemmSum,       ///< the same with C in float, `block` columns of A and
                   ///< rows of op(B) (the summed dimension) at a time; of
                   ///< the three, the one whose whole copy is smallest
    GemmDepth,     ///< GEMMs A^T B, m <= k: C in float, `block` rows of A and
                   ///< B (the summed dimension) at a time
    GemmDepthRows, ///< the same with m > k: B copied whole, `block` rows of
                   ///< C (columns of A) at a time, each over the whole
                   ///< depth
    Dnnl,          ///< no copies: oneDNN runs the op on the bf16 tensors
                   ///< (matmul: DnnlMatmul.h; conv2d and its gradients:
                   ///< DnnlConv.h); `bytes` holds its scratch; a matmul
                   ///< with `block` > 0 runs in transposed pieces of
                   ///< `block` rows of C (transposedPieceRows), the piece
                   ///< last in `bytes`
  };
  Kind kind = Kind::None;
  int64_t block = 0;
  uint64_t bytes = 0;
};
/// The types of a matmul on bf16 operands (--precision bf16): Bf16 for a
/// bf16 result, Bf16F32 for a float32 one (a parameter's gradient); nullopt
/// for any other op or types.
std::optional<GemmTypes>
bf16GemmTypes(OpKind op, const std::vector<ops::TensorType> &inputs,
              const std::vector<ops::TensorType> &outputs);

Bf16Staging cpuBf16Staging(OpKind op, const OpAttrs &attrs,
                           const std::vector<ops::TensorType> &inputs,
                           const std::vector<ops::TensorType> &outputs);
inline constexpr uint64_t kStagingAlignment = 64;
/// Elements of one piece of a Rows or Gemm staging (1 MiB of floats).
inline constexpr int64_t kStagingPieceElements = int64_t(1) << 18;
/// `bytes` rounded up to kStagingAlignment.
inline uint64_t stagingAligned(uint64_t bytes) {
  return (bytes + kStagingAlignment - 1) / kStagingAlignment *
         kStagingAlignment;
}
/// `elements` floats in bytes, rounded up to kStagingAlignment.
inline uint64_t stagedBytes(int64_t elements) {
  return stagingAligned(uint64_t(elements) * sizeof(float));
}

} // namespace remat::runtime::cpu

#endif // REMAT_RUNTIME_BACKENDS_CPU_CPUWORKSPACE_H

//===- DnnlConv.h - conv2d and its gradients through oneDNN -----*- C++ -*-===//
//
// The CPU backend runs conv2d, conv2d_grad_input and conv2d_grad_weight
// through oneDNN (Debian's libdnnl, what PyTorch uses for CPU
// convolutions) where the build found it, with oneDNN's scratchpad in the
// backend's workspace: on float32 operands, and on bf16 ones where the CPU
// has bf16 kernels (ConvTypes: with bf16 or float32 weights; the weights
// gradient summed in float32). Float32 pointwise and grouped convolutions run
// on remat's own layouts (nchw activations, oihw / goihw weights) in place;
// spatial ones (3x3, 7x7, ...), and every ungrouped bf16 one, in chunks of at
// most 8 images reordered into oneDNN's blocked layouts in the workspace, where
// its direct JIT kernels are faster. oneDNN's reference kernels are never
// used. Which one is a rule on shapes alone, so a kernel's
// bits never depend on the budget. Here so that the compiler, which
// reserves the workspace in the budget, and the runtime, which allocates
// and uses it, ask oneDNN the same question (CpuWorkspace.h).
//
// Without oneDNN, or with the environment variable REMAT_CPU_CONV=im2col,
// every function here answers "not through oneDNN" and the backend keeps
// its own im2col + GEMM kernels (runtime/backends/cpu/kernels/conv.cpp).
// REMAT_CPU_CONV=plain keeps every convolution on remat's layouts.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_BACKENDS_CPU_DNNLCONV_H
#define REMAT_RUNTIME_BACKENDS_CPU_DNNLCONV_H

#include "ops/OpTable.h"

#include <optional>
#include <string>
#include <vector>

namespace remat::runtime::cpu {

using ops::OpAttrs;
using ops::OpKind;
using ops::Shape;

/// Whether convolutions go through oneDNN: built with it, and neither
/// REMAT_CPU_CONV=im2col nor setDnnlConvEnabled(false) turned it off.
bool dnnlConvEnabled();

/// Turns oneDNN's convolutions on or off for this process (tests compare
/// both paths; on has no effect in a build without oneDNN).
void setDnnlConvEnabled(bool on);

/// Lets spatial convolutions use blocked layouts (the default), or keeps
/// every one on plain layouts, as REMAT_CPU_CONV=plain does; no effect
/// while oneDNN is off.
void setDnnlConvBlocked(bool on);

/// How oneDNN runs one convolution.
struct DnnlConvInfo {
  /// Workspace it needs: the scratchpad and, when blocked, the reordered
  /// copies of one chunk.
  uint64_t workspaceBytes = 0;
  /// Pieces of the batch it runs in blocked layouts; 0 on plain layouts.
  int64_t blockedChunks = 0;
};

/// The element types of a convolution's tensors.
enum class ConvTypes {
  F32,  ///< all float32
  Bf16, ///< all bf16 (the weights gradient summed in float32, rounded once)
  /// bf16 activations (x and y or their gradients) with float32 weights
  /// (--precision bf16): conv2d and conv2d_grad_input round the weights to
  /// bf16 in their reorder into the primitive's layout; conv2d_grad_weight
  /// gives the float32 sum unrounded
  Bf16FloatWeights,
};

/// The bf16 types of a convolution whose operands are `in0`, `in1` and
/// result `out` (DnnlConv.cpp's roles: x or dy, w or dy, y, dx or dw):
/// all bf16, or bf16 activations with float32 weights; nullopt for any
/// other op or mix.
std::optional<ConvTypes> bf16ConvTypes(OpKind op, ops::DType in0,
                                       ops::DType in1, ops::DType out);

/// How oneDNN runs `op` (conv2d, conv2d_grad_input or conv2d_grad_weight)
/// with these operand and result shapes and `types`; nullopt when it does
/// not (off, another op, a shape it refuses, bf16 on a CPU without bf16
/// kernels).
std::optional<DnnlConvInfo> dnnlConvInfo(OpKind op, const OpAttrs &attrs,
                                         const std::vector<Shape> &inputs,
                                         const std::vector<Shape> &outputs,
                                         ConvTypes types = ConvTypes::F32);

/// "oneDNN 2.6.3 (cpu runtime: OpenMP)", or why there is none.
std::string dnnlConvDescription();

/// Runs `op` through oneDNN: `in0`, `in1` are its two operands and `out`
/// its result, of `types`, dense row-major; `scratch` (64-byte aligned)
/// holds `scratchBytes`. Returns false, having done nothing, when oneDNN
/// does not run it or it needs more workspace than `scratchBytes`.
bool dnnlConvRun(OpKind op, const OpAttrs &attrs,
                 const std::vector<Shape> &inputs,
                 const std::vector<Shape> &outputs, const void *in0,
                 const void *in1, void *out, void *scratch,
                 uint64_t scratchBytes, ConvTypes types = ConvTypes::F32);

} // namespace remat::runtime::cpu

#endif // REMAT_RUNTIME_BACKENDS_CPU_DNNLCONV_H

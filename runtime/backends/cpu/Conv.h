//===- Conv.h - Workspace of the CPU convolution kernels -------*- C++ -*-===//
//
// conv2d and its gradients unfold blocks of output positions into the
// kernel workspace (kernels/conv.cpp); these say how large it is, for
// kernelWorkspaceElements (Kernels.h) and the kernels alike.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_BACKENDS_CPU_CONV_H
#define REMAT_RUNTIME_BACKENDS_CPU_CONV_H

#include "runtime/Backend.h"

#include <cstdint>
#include <vector>

namespace remat::runtime::cpu {

/// The unfolded block's target size in elements (4 MiB of f32): K rows of
/// kConvScratchElements / K columns, at least one column.
inline constexpr int64_t kConvScratchElements = int64_t(1) << 20;

/// Output positions unfolded at once for a window of k = C/groups·kh·kw
/// elements and `positions` = OH·OW output positions.
int64_t convChunkColumns(int64_t k, int64_t positions);

/// Workspace elements of conv2d, conv2d_grad_input or conv2d_grad_weight
/// with these operand and result shapes: K x convChunkColumns, 0 for a
/// pointwise convolution.
uint64_t convWorkspaceElements(OpKind op, const OpAttrs &attrs,
                               const std::vector<Shape> &inputs,
                               const std::vector<Shape> &outputs);

} // namespace remat::runtime::cpu

#endif // REMAT_RUNTIME_BACKENDS_CPU_CONV_H

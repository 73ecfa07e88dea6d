//===- CpuWorkspace.h - The CPU backend's kernel scratch, by op ---*- C++ -*-===//
//
// The scratch the CPU backend's kernels need beside the arena, as a function
// of an op and its operand shapes only. MLIR-free and BLAS-free, so that the
// compiler reserves exactly what the runtime will allocate (the budget
// covers it: docs/cli.md, `workspace_bytes`) and the runtime sizes its
// workspace with the same function.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_OPS_CPUWORKSPACE_H
#define REMAT_OPS_CPUWORKSPACE_H

#include "ops/OpTable.h"

#include <vector>

namespace remat::ops {

/// Scratch elements (of the float type the kernel computes in) the CPU
/// kernel of `op` needs for these input shapes; UINT64_MAX when the count
/// does not fit 64 bits. Attention: S*S (the scores of one batch and head);
/// attention_grad: 2*S*S; every other op: 0.
uint64_t cpuWorkspaceElements(OpKind op, const std::vector<Shape> &inputShapes);

/// `elements` of `elementBytes` each, in bytes, saturating at UINT64_MAX.
/// The CPU backend's workspace is the largest single op's need (ops run one
/// at a time).
uint64_t cpuWorkspaceBytes(uint64_t elements, uint64_t elementBytes);

} // namespace remat::ops

#endif // REMAT_OPS_CPUWORKSPACE_H

//===- Kernels.h - CPU reference kernels for every op of docs/ops.md -----===//
//
// Plain loops (and Gemm.h for matmul/attention), single-threaded apart from
// OpenBLAS, reductions in row-major index order: the numerical oracle the
// other backends are compared with. Templated on the float type so tests can
// run the same forward code in double for finite differences; the backend
// instantiates float. runKernel calls one function per kernel family of the
// op table, in kernels/ (kernels/Kernels.h).
//
// Accumulation (what another backend must mirror to stay close; each
// kernel file's header says what its ops do): row reductions inside one
// kernel (softmax denominators, normalization statistics, row dot
// products, losses) accumulate in double; reductions into a result tensor
// (sums over axes, gradients of broadcasts, gathers and normalization
// parameters) add in the float type in row-major order of the operand.
//
// Workspace: attention needs S*S elements for the scores of one (batch,
// head), attention_grad 2*S*S (probabilities and their gradient); conv2d
// and its gradients unfold blocks of output positions into about 2^20
// elements (runtime/backends/cpu/CpuWorkspace.h). Every other kernel works in its result
// buffers.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_BACKENDS_CPU_KERNELS_H
#define REMAT_RUNTIME_BACKENDS_CPU_KERNELS_H

#include "runtime/Backend.h"

#include <vector>

namespace remat::runtime::cpu {

/// Scratch elements (of the float type) the kernel of `op` wants for the
/// given operand and result shapes (cpu::cpuWorkspaceElements: with
/// oneDNN's scratchpad where oneDNN runs the op); UINT64_MAX when the
/// count does not fit 64 bits.
uint64_t kernelWorkspaceElements(OpKind op, const OpAttrs &attrs,
                                 const std::vector<Shape> &inputShapes,
                                 const std::vector<Shape> &outputShapes);

/// The fewest scratch elements the kernel of `op` runs with
/// (cpu::cpuMinimumWorkspaceElements): runKernel refuses less.
uint64_t kernelMinimumWorkspaceElements(OpKind op, const OpAttrs &attrs,
                                        const std::vector<Shape> &inputShapes,
                                        const std::vector<Shape> &outputShapes);

/// Runs one op. Float operands and results are T; index operands are read
/// as their dtype (i32/i64). Throws std::runtime_error for an index or label
/// outside its range (nothing is written past the results).
template <typename T>
void runKernel(const KernelCall &call, T *workspace,
               uint64_t workspaceElements);

extern template void runKernel<float>(const KernelCall &, float *, uint64_t);
extern template void runKernel<double>(const KernelCall &, double *, uint64_t);

} // namespace remat::runtime::cpu

#endif // REMAT_RUNTIME_BACKENDS_CPU_KERNELS_H

//===- DnnlConv.h - conv2d and its gradients through oneDNN -----*- C++ -*-===//
//
// The CPU backend runs float32 conv2d, conv2d_grad_input and
// conv2d_grad_weight through oneDNN (Debian's libdnnl, what PyTorch uses
// for CPU convolutions) where the build found it, on remat's own layouts
// (nchw activations, oihw / goihw weights: no reorders), with oneDNN's
// scratchpad in the backend's workspace. Here so that the compiler, which
// reserves the workspace in the budget, and the runtime, which allocates
// and uses it, ask oneDNN the same question (CpuWorkspace.h).
//
// Without oneDNN, or with the environment variable REMAT_CPU_CONV=im2col,
// every function here answers "not through oneDNN" and the backend keeps
// its own im2col + GEMM kernels (runtime/backends/cpu/kernels/conv.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_OPS_DNNLCONV_H
#define REMAT_OPS_DNNLCONV_H

#include "ops/OpTable.h"

#include <optional>
#include <string>
#include <vector>

namespace remat::ops {

/// Whether convolutions go through oneDNN: built with it, and neither
/// REMAT_CPU_CONV=im2col nor setDnnlConvEnabled(false) turned it off.
bool dnnlConvEnabled();

/// Turns oneDNN's convolutions on or off for this process (tests compare
/// both paths; on has no effect in a build without oneDNN).
void setDnnlConvEnabled(bool on);

/// "oneDNN 2.6.3 (cpu runtime: OpenMP)", or why there is none.
std::string dnnlConvDescription();

/// The scratchpad bytes oneDNN's primitive for `op` (conv2d,
/// conv2d_grad_input or conv2d_grad_weight) needs with these operand and
/// result shapes; nullopt when oneDNN does not run it (off, another op,
/// a shape it refuses).
std::optional<uint64_t>
dnnlConvScratchBytes(OpKind op, const OpAttrs &attrs,
                     const std::vector<Shape> &inputs,
                     const std::vector<Shape> &outputs);

/// Runs `op` through oneDNN: `in0`, `in1` are its two operands and `out`
/// its result, float32, dense row-major; `scratch` holds `scratchBytes`.
/// Returns false, having done nothing, when oneDNN does not run it or its
/// scratchpad needs more than `scratchBytes`.
bool dnnlConvRun(OpKind op, const OpAttrs &attrs,
                 const std::vector<Shape> &inputs,
                 const std::vector<Shape> &outputs, const float *in0,
                 const float *in1, float *out, void *scratch,
                 uint64_t scratchBytes);

} // namespace remat::ops

#endif // REMAT_OPS_DNNLCONV_H

//===- Bf16Staging.h - ops on float copies of their bf16 tensors -*- C++
//-*-===//
//
// The cpu backend's kernels compute in float. An op whose bf16 operands or
// results its kernel does not read itself (OpInfo::bf16Native) runs on float
// copies of them, made as cpuBf16Staging (CpuWorkspace.h) plans: converted
// from bf16 exactly, computed by the float kernel, rounded back to bf16 (to
// nearest, ties to even). Elementwise ops and GEMMs go in pieces of about
// 1 MiB, so their copies stay small; other ops copy each bf16 tensor whole.
// An all-bf16 matmul that oneDNN has a bf16 kernel for on this CPU needs no
// copies: it runs on the tensors themselves (Dnnl), its scratchpad
// where the copies would be; so do the convolutions (DnnlConv.h) and
// attention (kernels/attention.cpp, which widens a head at a time in that
// scratch).
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_BACKENDS_CPU_BF16STAGING_H
#define REMAT_RUNTIME_BACKENDS_CPU_BF16STAGING_H

#include "runtime/Backend.h"
#include "runtime/backends/cpu/CpuWorkspace.h"

namespace remat::runtime::cpu {

/// Runs `call` by `staging` with the float copies in `copies` (64-aligned,
/// staging.bytes long) and the kernel's own scratch `scratch` of
/// `scratchElements` floats.
void runOnFloatCopies(const KernelCall &call, const Bf16Staging &staging,
                      char *copies, float *scratch, uint64_t scratchElements);

/// `n` bf16 values widened to float (exactly) / floats rounded to bf16 (to
/// nearest, ties to even), on the threads.
void widenBf16(const uint16_t *from, float *to, int64_t n);
void narrowBf16(const float *from, uint16_t *to, int64_t n);

} // namespace remat::runtime::cpu

#endif // REMAT_RUNTIME_BACKENDS_CPU_BF16STAGING_H

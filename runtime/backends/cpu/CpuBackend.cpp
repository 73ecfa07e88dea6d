//===- CpuBackend.cpp - The reference CPU backend -------------------------===//
#include "runtime/backends/cpu/CpuBackend.h"

#include "runtime/backends/cpu/Bf16Staging.h"
#include "runtime/backends/cpu/EnvChoice.h"
#include "runtime/backends/cpu/Kernels.h"
#include "runtime/backends/cpu/StepScratch.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#include <unistd.h>

namespace remat::runtime {

namespace {

/// REMAT_CPU_MOMENTS=own makes every batch-norm step compute its own
/// moments (for A/B timing; the bits are the same either way).
bool sharedMomentsEnabled() {
  return cpu::envChoice("REMAT_CPU_MOMENTS", {"shared", "own"}) == "shared";
}

std::string formatBytes(uint64_t bytes) {
  return bytes == UINT64_MAX ? "2^64 or more" : std::to_string(bytes);
}

/// CpuBackend::workspaceSummary's line for `plan`.
std::string summarizeBf16(const Plan &plan) {
  int64_t gemms = 0, convs = 0, copied = 0;
  std::string implementation;
  forEachOpStep(plan, [&](size_t, OpKind kind, const ops::OpAttrs &attrs,
                          const std::vector<ops::TensorType> &inputs,
                          const std::vector<ops::TensorType> &outputs) {
    cpu::Bf16Staging staging =
        cpu::cpuBf16Staging(kind, attrs, inputs, outputs);
    const ops::OpInfo &info = ops::opInfo(kind);
    bool gemm = info.shapeRule == ops::ShapeRule::Gemm;
    // Attention's products run on oneDNN's bf16 GEMMs: GEMM steps too.
    bool attention = info.family == ops::KernelFamily::Attention ||
                     info.family == ops::KernelFamily::AttentionGrad;
    if (staging.kind == cpu::Bf16Staging::Kind::Dnnl) {
      ++(gemm || attention ? gemms : convs);
      if (gemm && implementation.empty())
        implementation = cpu::dnnlMatmulImplementation(
            cpu::oneGemm(
                cpu::matmulGemms(attrs, inputs[0].shape, inputs[1].shape)),
            cpu::GemmTypes::Bf16);
    } else if (staging.kind != cpu::Bf16Staging::Kind::None) {
      ++copied;
    }
  });
  if (gemms + convs + copied == 0)
    return {};
  if (gemms + convs == 0)
    return "warning: the cpu backend computes bf16 ops in float32 on "
           "converted copies (no bf16 kernels on this CPU; "
           "docs/precision.md): a bf16 plan saves memory here, not time";
  return "bf16: " + std::to_string(gemms) + " GEMM and " +
         std::to_string(convs) + " convolution steps on oneDNN's bf16 kernels" +
         (implementation.empty() ? "" : " (" + implementation + ")") + ", " +
         std::to_string(copied) +
         " other bf16 steps in float32 on converted copies "
         "(docs/precision.md)";
}

} // namespace

uint64_t physicalMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || pageSize <= 0 ||
      uint64_t(pages) > UINT64_MAX / uint64_t(pageSize))
    return UINT64_MAX;
  return uint64_t(pages) * uint64_t(pageSize);
}

CpuBackend::~CpuBackend() = default;

void CpuBackend::checkSupport(const LoadedPlan &plan) const {
  // Float buffers f32 and bf16 (--precision bf16), or every one f64
  // (--precision fp64): the kernels compute in float or in double.
  bool f64 = floatElementBytes(plan.plan) == 8;
  for (size_t i = 0; i < plan.plan.buffers.size(); ++i) {
    DType d = plan.plan.buffers[i].dtype;
    if (d == DType::F16)
      throw PlanError(plan.bufferPlace(i) + ": dtype " + dtypeName(d) +
                      " is not supported by the cpu backend (f32, bf16 or "
                      "f64)");
    if (f64 && isFloatDType(d) && d != DType::F64)
      throw PlanError(plan.bufferPlace(i) + ": dtype " + dtypeName(d) +
                      " in a plan with f64 buffers: the cpu backend runs a "
                      "plan whose floats are all f64, or f32 and bf16");
  }
  // Refuse what cannot fit in host memory before allocating any of it: a
  // huge-but-valid arena would otherwise fail in posix_memalign (or be
  // overcommitted, then touched by the zero fill until the OOM killer
  // ends the process).
  const Plan &p = plan.plan;
  uint64_t memory = memoryLimit ? memoryLimit : physicalMemoryBytes();
  std::string limit =
      "this machine's memory (" + std::to_string(memory) + " bytes)";
  if (p.arenaBytes > memory)
    throw PlanError(plan.source + ": /arena_bytes: arena of " +
                    std::to_string(p.arenaBytes) + " bytes is more than " +
                    limit + "; the cpu backend does not attempt it");
  if (p.alignment > memory)
    throw PlanError(plan.source + ": /alignment: alignment " +
                    std::to_string(p.alignment) + " is more than " + limit);
  // The steps whose scratch fits in a gap of the arena need nothing
  // beside it.
  StepScratch scratch = cpuStepScratch(p);
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    if (scratch.arenaOffset[i] >= 0)
      continue;
    uint64_t bytes = scratch.least[i];
    if (bytes > memory - p.arenaBytes)
      throw PlanError(plan.stepPlace(i) + ": needs a workspace of " +
                      formatBytes(bytes) + " bytes, which with the arena of " +
                      std::to_string(p.arenaBytes) + " bytes is more than " +
                      limit);
  }
}

uint64_t CpuBackend::workspaceBytes(const LoadedPlan &plan) const {
  // Beside the arena, only for the steps whose scratch found no gap in it;
  // oneDNN's scratchpads only as far as the plan's budget leaves room
  // beside the arena: a plan compiled where oneDNN wanted less (another
  // machine, REMAT_CPU_CONV=im2col, --workspace-reserve) still runs within
  // its budget, its larger convolutions through the backend's own kernels.
  return cpuSideWorkspaceBytes(cpuStepScratch(plan.plan), plan.plan,
                               plan.budgetBytes().value_or(0));
}

void *CpuBackend::allocateArena(uint64_t bytes, uint64_t alignment) {
  void *base = nullptr;
  size_t align = std::max<size_t>(alignment, sizeof(void *));
  if (posix_memalign(&base, align, size_t(bytes)) != 0)
    throw std::bad_alloc();
  std::memset(base, 0, size_t(bytes));
  ++numArenaAllocations;
  lastArenaSize = bytes;
  arenaBase = static_cast<char *>(base);
  return base;
}

void CpuBackend::freeArena(void *base) { std::free(base); }

void CpuBackend::prepare(const LoadedPlan &plan) {
  scratch = cpuStepScratch(plan.plan);
  inDouble = floatElementBytes(plan.plan) == sizeof(double);
  workspace.assign((cpuSideWorkspaceBytes(scratch, plan.plan,
                                          plan.budgetBytes().value_or(0)) +
                    sizeof(double) - 1) /
                       sizeof(double),
                   0.0);
  moments = sharedMomentsEnabled() ? cpu::planSharedMoments(plan)
                                   : cpu::SharedMoments();
  momentSlots.assign(moments.slotChannels.size(), {});
  for (size_t s = 0; s < momentSlots.size(); ++s) {
    momentSlots[s].mean.assign(size_t(moments.slotChannels[s]), 0.0);
    momentSlots[s].squares.assign(size_t(moments.slotChannels[s]), 0.0);
  }
  slotFilledAt.assign(momentSlots.size(), 0);
  runs = sequenceStart = 0;
  lastStep = SIZE_MAX;
  bf16Summary = summarizeBf16(plan.plan);
}

std::pair<uint64_t, uint64_t> CpuBackend::arenaScratch(size_t step) const {
  if (step >= scratch.arenaOffset.size() || scratch.arenaOffset[step] < 0)
    return {0, 0};
  return {uint64_t(scratch.arenaOffset[step]), scratch.arenaBytes[step]};
}

void CpuBackend::copyIn(void *dst, const void *src, uint64_t bytes) {
  std::memcpy(dst, src, size_t(bytes));
}

void CpuBackend::copyOut(void *dst, const void *src, uint64_t bytes) {
  std::memcpy(dst, src, size_t(bytes));
}

std::pair<char *, uint64_t> CpuBackend::stepScratch(size_t step) {
  auto [offset, bytes] = arenaScratch(step);
  if (bytes > 0 && arenaBase)
    return {arenaBase + offset, bytes};
  return {reinterpret_cast<char *>(workspace.data()),
          workspace.size() * sizeof(double)};
}

void CpuBackend::runStep(const KernelCall &call) {
  if (inDouble)
    return runAs<double>(call);
  if (!runStaged(call))
    runAs<float>(call);
}

bool CpuBackend::runStaged(const KernelCall &call) {
  bool bf16 = false;
  for (int i = 0; i < call.numInputs; ++i)
    bf16 |= call.inputs[i].dtype == DType::BF16;
  for (int i = 0; i < call.numOutputs; ++i)
    bf16 |= call.outputs[i].dtype == DType::BF16;
  if (!bf16) // (float32 plans: no copies, nothing to look up)
    return false;
  std::vector<ops::TensorType> ins, outs;
  for (int i = 0; i < call.numInputs; ++i)
    ins.push_back({call.inputs[i].dtype, call.inputs[i].shape});
  for (int i = 0; i < call.numOutputs; ++i)
    outs.push_back({call.outputs[i].dtype, call.outputs[i].shape});
  cpu::Bf16Staging staging =
      cpu::cpuBf16Staging(call.op, *call.attrs, ins, outs);
  if (staging.kind == cpu::Bf16Staging::Kind::None)
    return false;
  // The float copies lie at the end of the step's scratch, 64-aligned; the
  // kernel's own scratch before them (cpuStepScratchBytes counts both).
  auto [scratch, scratchBytes] = stepScratch(call.stepIndex);
  uintptr_t base = reinterpret_cast<uintptr_t>(scratch);
  uintptr_t start = staging.bytes == 0 ? base + scratchBytes
                    : staging.bytes <= scratchBytes
                        ? (base + scratchBytes - staging.bytes) /
                              cpu::kStagingAlignment * cpu::kStagingAlignment
                        : 0;
  if (start < base)
    throw std::logic_error(std::string("cpu step '") + opName(call.op) +
                           "' has no room for the float copies of its bf16 "
                           "tensors");
  noteStep(call.stepIndex);
  cpu::runOnFloatCopies(call, staging, reinterpret_cast<char *>(start),
                        reinterpret_cast<float *>(scratch),
                        uint64_t(start - base) / sizeof(float));
  return true;
}

void CpuBackend::noteStep(size_t step) {
  ++runs;
  if (lastStep == SIZE_MAX || step != lastStep + 1)
    sequenceStart = runs;
  lastStep = step;
}

template <typename T> void CpuBackend::runAs(const KernelCall &call) {
  noteStep(call.stepIndex);
  int slot =
      call.stepIndex < moments.slot.size() ? moments.slot[call.stepIndex] : -1;
  if (slot >= 0) {
    cpu::ChannelMoments &shared = momentSlots[size_t(slot)];
    if (moments.fills[call.stepIndex]) {
      shared.filled = false;
      slotFilledAt[size_t(slot)] = 0;
      cpu::runWithMoments<T>(call, shared);
      slotFilledAt[size_t(slot)] = runs;
      return;
    }
    // Filled by its group's first step in this sequence of consecutive
    // steps: no step that writes x ran in between.
    if (slotFilledAt[size_t(slot)] >= sequenceStart &&
        slotFilledAt[size_t(slot)] > 0) {
      shared.filled = true;
      cpu::runWithMoments<T>(call, shared);
      ++numSharedReads;
      return;
    }
  }
  auto [scratch, bytes] = stepScratch(call.stepIndex);
  cpu::runKernel<T>(call, reinterpret_cast<T *>(scratch), bytes / sizeof(T));
}

std::unique_ptr<Backend> createCpuBackend() {
  return std::make_unique<CpuBackend>();
}

} // namespace remat::runtime

//===- CpuBackend.cpp - The reference CPU backend -------------------------===//
#include "runtime/backends/cpu/CpuBackend.h"

#include "runtime/backends/cpu/Kernels.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace remat::runtime {

CpuBackend::~CpuBackend() = default;

void CpuBackend::checkSupport(const LoadedPlan &plan) const {
  for (size_t i = 0; i < plan.plan.buffers.size(); ++i) {
    DType d = plan.plan.buffers[i].dtype;
    if (d == DType::F16 || d == DType::BF16)
      throw PlanError(plan.bufferPlace(i) + ": dtype " + dtypeName(d) +
                      " is not supported by the cpu backend (f32 only)");
  }
}

uint64_t CpuBackend::workspaceBytes(const LoadedPlan &plan) const {
  uint64_t elements = 0;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    std::vector<Shape> shapes;
    for (int64_t idx : plan.plan.steps[i].inputs)
      shapes.push_back(plan.plan.buffers[idx].shape);
    elements = std::max(elements,
                        cpu::kernelWorkspaceElements(plan.steps[i].op, shapes));
  }
  return elements * sizeof(float);
}

void *CpuBackend::allocateArena(uint64_t bytes, uint64_t alignment) {
  void *base = nullptr;
  size_t align = std::max<size_t>(alignment, sizeof(void *));
  if (posix_memalign(&base, align, size_t(bytes)) != 0)
    throw std::bad_alloc();
  std::memset(base, 0, size_t(bytes));
  ++numArenaAllocations;
  lastArenaSize = bytes;
  return base;
}

void CpuBackend::freeArena(void *base) { std::free(base); }

void CpuBackend::prepare(const LoadedPlan &plan) {
  workspace.assign(workspaceBytes(plan) / sizeof(float), 0.0f);
}

void CpuBackend::copyIn(void *dst, const void *src, uint64_t bytes) {
  std::memcpy(dst, src, size_t(bytes));
}

void CpuBackend::copyOut(void *dst, const void *src, uint64_t bytes) {
  std::memcpy(dst, src, size_t(bytes));
}

void CpuBackend::runStep(const KernelCall &call) {
  cpu::runKernel<float>(call, workspace.data(), workspace.size());
}

std::unique_ptr<Backend> createCpuBackend() {
  return std::make_unique<CpuBackend>();
}

#ifdef REMAT_HAVE_CUDA_BACKEND
// Provided by runtime/backends/cuda (target RematCudaBackend).
std::unique_ptr<Backend> createCudaBackend();
#endif

std::unique_ptr<Backend> createBackend(const std::string &name) {
  if (name == "cpu")
    return createCpuBackend();
#ifdef REMAT_HAVE_CUDA_BACKEND
  if (name == "cuda")
    return createCudaBackend();
#endif
  throw PlanError("unknown backend '" + name +
                  "' (available: " + availableBackends() + ")");
}

std::string availableBackends() {
#ifdef REMAT_HAVE_CUDA_BACKEND
  return "cpu, cuda";
#else
  return "cpu";
#endif
}

} // namespace remat::runtime

//===- ForwardingBackend.h - A backend that passes every call on ---------===//
//
// The base of backends that wrap another one and change a few calls: the
// bounds check (BoundsCheck.h) and the tests' faulty backends.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_FORWARDINGBACKEND_H
#define REMAT_RUNTIME_FORWARDINGBACKEND_H

#include "runtime/Backend.h"

#include <memory>
#include <utility>

namespace remat::runtime {

class ForwardingBackend : public Backend {
public:
  explicit ForwardingBackend(std::unique_ptr<Backend> inner)
      : inner(std::move(inner)) {}

  std::string name() const override { return inner->name(); }
  void checkSupport(const LoadedPlan &plan) const override {
    inner->checkSupport(plan);
  }
  uint64_t workspaceBytes(const LoadedPlan &plan) const override {
    return inner->workspaceBytes(plan);
  }
  void *allocateArena(uint64_t bytes, uint64_t alignment) override {
    return inner->allocateArena(bytes, alignment);
  }
  void freeArena(void *base) override { inner->freeArena(base); }
  void prepare(const LoadedPlan &plan) override { inner->prepare(plan); }
  std::pair<uint64_t, uint64_t> arenaScratch(size_t step) const override {
    return inner->arenaScratch(step);
  }
  void copyIn(void *dst, const void *src, uint64_t bytes) override {
    inner->copyIn(dst, src, bytes);
  }
  bool overlapsInputCopies() const override {
    return inner->overlapsInputCopies();
  }
  bool copyInputAsync(void *dst, const void *src, uint64_t bytes,
                      int64_t trainingStep) override {
    return inner->copyInputAsync(dst, src, bytes, trainingStep);
  }
  bool generateInput(void *dst, const SyntheticRequest &request) override {
    return inner->generateInput(dst, request);
  }
  void copyOut(void *dst, const void *src, uint64_t bytes) override {
    inner->copyOut(dst, src, bytes);
  }
  void runStep(const KernelCall &call) override { inner->runStep(call); }
  void synchronize() override { inner->synchronize(); }
  void beginTrainingStep(int64_t step) override {
    inner->beginTrainingStep(step);
  }
  void endTrainingStep(int64_t step) override { inner->endTrainingStep(step); }
  std::unique_ptr<GradientComm> createDeviceComm(Ranks *ranks) override {
    return inner->createDeviceComm(ranks);
  }
  bool hasDeviceComm() const override { return inner->hasDeviceComm(); }
  std::string workspaceSummary() const override {
    return inner->workspaceSummary();
  }
  std::optional<DeviceMemoryReport> deviceMemory() const override {
    return inner->deviceMemory();
  }

protected:
  std::unique_ptr<Backend> inner;
};

} // namespace remat::runtime

#endif // REMAT_RUNTIME_FORWARDINGBACKEND_H

//===- GradientComm.cpp - Gradient means over MPI on host memory ---------===//
#include "runtime/GradientComm.h"

#include "runtime/Ranks.h"

#include <map>
#include <stdexcept>

namespace remat::runtime {

namespace {

class MpiGradientComm final : public GradientComm {
public:
  explicit MpiGradientComm(Ranks &ranks) : ranks(ranks) {}

  std::string name() const override { return "mpi"; }
  int size() const override { return ranks.size(); }

  size_t startMean(float *data, uint64_t count) override {
    size_t handle = ranks.startSum(data, count);
    means[handle] = {data, count};
    return handle;
  }

  size_t startGather(float *data, uint64_t total, uint64_t shard) override {
    return ranks.startGather(data, total, shard);
  }

  double wait(size_t handle) override {
    double seconds = ranks.wait(handle);
    auto it = means.find(handle);
    if (it == means.end())
      return seconds;
    // The sum over the ranks, divided by their count: the gradient of the
    // global batch's mean loss.
    auto [data, count] = it->second;
    means.erase(it);
    float scale = 1.0f / float(ranks.size());
    for (uint64_t i = 0; i < count; ++i)
      data[i] *= scale;
    return seconds;
  }

  void poll() override { ranks.poll(); }

private:
  Ranks &ranks;
  /// Started means by handle: where to scale once the sum is done.
  std::map<size_t, std::pair<float *, uint64_t>> means;
};

} // namespace

std::unique_ptr<GradientComm> createMpiGradientComm(Ranks &ranks) {
  return std::make_unique<MpiGradientComm>(ranks);
}

} // namespace remat::runtime

//===- CudaNccl.cpp - Gradient means and param gathers over NCCL ----------===//
//
// The CUDA backend's GradientComm (runtime/GradientComm.h) where the build
// found NCCL (REMAT_HAVE_NCCL; the emulator build has a fake NCCL on host
// memory, emu/CudaEmuNccl.cpp):
//
// - one NCCL communicator over the run's ranks: rank 0's ncclGetUniqueId
//   goes to the others through MPI (Ranks::broadcast), which does nothing
//   else here; without ranks (remat run --comm nccl, no MPI launcher) the
//   communicator has one rank and every gradient still goes through
//   ncclAllReduce;
// - the collectives run on a communication stream of their own: an event
//   recorded on the compute stream orders each after the kernels that
//   produced its bytes, and wait() makes the compute stream wait for the
//   event recorded after it (cudaStreamWaitEvent; the host never waits);
// - a gradient's mean is ncclAllReduce with ncclAvg, in place;
// - ZeRO-1's param gather is one ncclBroadcast per rank slice (rank r the
//   root of its own), in place, inside ncclGroupStart / ncclGroupEnd: the
//   slices may be uneven or empty (the param buffer is not padded to
//   ranks · shard, which ncclAllGather would need).
//
// CUDA graphs are turned off while a communicator exists: a replayed step
// queues its kernels until endTrainingStep (CudaGraph.cpp), so collectives
// enqueued between the steps' calls would run out of order with them, and
// capturing the NCCL calls into the graph would need every rank to capture
// and replay in lockstep. Communicating runs therefore run eagerly; the
// overlap comes from the second stream instead.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/CudaBackendInternal.h"

#include "runtime/GradientComm.h"
#include "runtime/Ranks.h"
#include "runtime/backends/cuda/CudaCheck.h"
#include "ops/Shards.h"

#ifdef REMAT_HAVE_NCCL
#include <nccl.h>
#endif

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace remat::runtime {

#ifdef REMAT_HAVE_NCCL

namespace {

void checkNccl(ncclResult_t result, const char *call, const char *file,
               int line) {
  if (result != ncclSuccess)
    throw std::runtime_error(std::string("nccl: ") + call + " failed: " +
                             ncclGetErrorString(result) + " (" + file + ":" +
                             std::to_string(line) + ")");
}

#define REMAT_NCCL_CHECK(call) checkNccl((call), #call, __FILE__, __LINE__)

class NcclGradientComm final : public GradientComm {
public:
  NcclGradientComm(CudaBackend::State &state, Ranks *ranks) : state(state) {
    rankCount = ranks ? ranks->size() : 1;
    int rank = ranks ? ranks->rank() : 0;
    ncclUniqueId id{};
    if (rank == 0)
      REMAT_NCCL_CHECK(ncclGetUniqueId(&id));
    if (ranks)
      ranks->broadcast(&id, sizeof(id));
    // NCCL's device memory (its buffers, the stream) counts as handles in
    // the memory report; growth before this call stays unattributed.
    state.account(&CudaMemoryReport::unattributedBytes);
    try {
      REMAT_CUDA_CHECK(
          cudaStreamCreateWithFlags(&commStream, cudaStreamNonBlocking));
      REMAT_CUDA_CHECK(
          cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
      REMAT_NCCL_CHECK(ncclCommInitRank(&comm, rankCount, id, rank));
    } catch (...) {
      release();
      state.account(&CudaMemoryReport::handleBytes);
      throw;
    }
    state.account(&CudaMemoryReport::handleBytes);
    // Graphs off while communicating (file comment); back on after.
    state.abortCapture();
    state.destroyGraph();
    graphsBefore = state.graphsEnabled;
    state.graphsEnabled = false;
  }

  ~NcclGradientComm() override {
    state.graphsEnabled = graphsBefore;
    state.account(&CudaMemoryReport::unattributedBytes);
    release();
    state.account(&CudaMemoryReport::handleBytes);
  }

  std::string name() const override { return "nccl"; }
  int size() const override { return rankCount; }

  size_t startMean(float *data, uint64_t count) override {
    CudaBackend::State::CallScope scope(state); // lazily loaded modules
    orderAfterCompute();
    REMAT_NCCL_CHECK(ncclAllReduce(data, data, size_t(count), ncclFloat,
                                   ncclAvg, comm, commStream));
    return finishStart();
  }

  size_t startGather(float *data, uint64_t total, uint64_t shard) override {
    CudaBackend::State::CallScope scope(state);
    orderAfterCompute();
    REMAT_NCCL_CHECK(ncclGroupStart());
    ncclResult_t result = ncclSuccess;
    for (int r = 0; r < rankCount && result == ncclSuccess; ++r) {
      ops::ShardRange part = ops::shardRange(total, shard, uint64_t(r));
      if (part.count == 0)
        continue; // every rank skips the same empty slices
      float *from = data + part.begin;
      result = ncclBroadcast(from, from, size_t(part.count), ncclFloat, r,
                             comm, commStream);
    }
    ncclResult_t ended = ncclGroupEnd();
    REMAT_NCCL_CHECK(result);
    REMAT_NCCL_CHECK(ended);
    return finishStart();
  }

  double wait(size_t handle) override {
    auto it = started.find(handle);
    if (it == started.end())
      return 0;
    // The compute stream's later work waits for the collective; the host
    // goes on (so nothing of the collective counts as the host's wait).
    REMAT_CUDA_CHECK(cudaStreamWaitEvent(state.stream, it->second, 0));
    spare.push_back(it->second);
    started.erase(it);
    return 0;
  }

private:
  /// The next collective on the communication stream runs after
  /// everything enqueued on the compute stream so far.
  void orderAfterCompute() {
    REMAT_CUDA_CHECK(cudaEventRecord(ready, state.stream));
    REMAT_CUDA_CHECK(cudaStreamWaitEvent(commStream, ready, 0));
  }

  /// Records the end of the collective just enqueued; its handle.
  size_t finishStart() {
    cudaEvent_t done = nullptr;
    if (!spare.empty()) {
      done = spare.back();
      spare.pop_back();
    } else {
      REMAT_CUDA_CHECK(
          cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    }
    REMAT_CUDA_CHECK(cudaEventRecord(done, commStream));
    size_t handle = nextHandle++;
    started.emplace(handle, done);
    return handle;
  }

  /// Never throws (destructor, failed constructor).
  void release() noexcept {
    if (commStream)
      cudaStreamSynchronize(commStream);
    if (comm)
      ncclCommDestroy(comm);
    comm = nullptr;
    for (auto &[handle, event] : started)
      cudaEventDestroy(event);
    started.clear();
    for (cudaEvent_t event : spare)
      cudaEventDestroy(event);
    spare.clear();
    if (ready)
      cudaEventDestroy(ready);
    ready = nullptr;
    if (commStream)
      cudaStreamDestroy(commStream);
    commStream = nullptr;
  }

  CudaBackend::State &state;
  int rankCount = 1;
  bool graphsBefore = true;
  ncclComm_t comm = nullptr;
  cudaStream_t commStream = nullptr;
  cudaEvent_t ready = nullptr; ///< the compute stream's point, per start
  std::map<size_t, cudaEvent_t> started; ///< by handle: after the collective
  std::vector<cudaEvent_t> spare;        ///< waited-for events to reuse
  size_t nextHandle = 0;
};

} // namespace

std::unique_ptr<GradientComm> CudaBackend::createDeviceComm(Ranks *ranks) {
  if (!state->ctx.status)
    throw std::logic_error("cuda backend: createDeviceComm before prepare");
  return std::make_unique<NcclGradientComm>(*state, ranks);
}

bool CudaBackend::hasDeviceComm() const { return true; }

#else // no NCCL

std::unique_ptr<GradientComm> CudaBackend::createDeviceComm(Ranks *) {
  return nullptr;
}

bool CudaBackend::hasDeviceComm() const { return false; }

#endif

} // namespace remat::runtime

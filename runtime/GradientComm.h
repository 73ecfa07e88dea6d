//===- GradientComm.h - Gradient means and param gathers over the ranks --===//
//
// What the executor communicates in a data-parallel run (docs/
// distributed.md): each gradient's mean over the ranks, in place, started
// as soon as the gradient is final and waited for before it is read, and
// ZeRO-1's gather of a sharded update's param slices. Two implementations:
//
// - MPI on host memory (createMpiGradientComm, Ranks.h): the cpu backend's
//   arena. MPI_Iallreduce sums, wait() scales by 1/N on the host;
//   MPI_Iallgatherv gathers. wait() blocks the host.
// - NCCL on device memory (Backend::createDeviceComm; the CUDA backend
//   where built with NCCL, runtime/backends/cuda/CudaNccl.cpp): the
//   collectives run on a communication stream ordered after the compute
//   stream, and wait() makes the compute stream wait for them (no host
//   sync). MPI only starts the ranks and broadcasts NCCL's unique id.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_GRADIENTCOMM_H
#define REMAT_RUNTIME_GRADIENTCOMM_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace remat::runtime {

class Ranks;

class GradientComm {
public:
  virtual ~GradientComm() = default;

  /// "mpi" or "nccl" (the run's log line).
  virtual std::string name() const = 0;
  /// The ranks communicated over (1 for a one-rank NCCL check run).
  virtual int size() const = 0;

  /// Starts replacing `count` f32 values at `data` (a pointer into the
  /// backend's arena) by their mean over every rank: the sum divided by
  /// size(). The bytes must stay untouched until wait(handle) returns.
  virtual size_t startMean(float *data, uint64_t count) = 0;
  /// ZeRO-1 (Ranks::startGather's layout): `total` f32 values at `data` in
  /// slices of `shard`, rank r's [r·shard, min((r+1)·shard, total)),
  /// possibly empty. Starts copying every rank's slice into every rank's
  /// `data`, in place.
  virtual size_t startGather(float *data, uint64_t total, uint64_t shard) = 0;
  /// Waits for a started mean or gather: on return (host comm) or for
  /// everything the backend runs after this call (device comm), the
  /// values are final. Returns the seconds the host spent waiting.
  virtual double wait(size_t handle) = 0;
  /// Lets started operations progress (MPI moves them only in its calls).
  virtual void poll() {}
};

/// MPI on host memory over `ranks` (today's data-parallel path).
std::unique_ptr<GradientComm> createMpiGradientComm(Ranks &ranks);

} // namespace remat::runtime

#endif // REMAT_RUNTIME_GRADIENTCOMM_H

//===- Ranks.h - The ranks of a data-parallel run --------------------------===//
//
// A plan compiled with --ranks N runs as N processes started by an MPI
// launcher (`mpirun -np N remat run PLAN`, docs/distributed.md). Ranks is
// this process's view of them: its rank and the rank count, in-place sums
// of gradients over the ranks (started as soon as a gradient is final and
// waited for before it is read), and small blocking exchanges (the loss,
// timings, the plan's hash).
//
// Communication goes through MPI (Debian's OpenMPI) where the build found
// it; without an MPI launcher, or in a build without MPI, there is one
// rank and nothing is communicated.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_RANKS_H
#define REMAT_RUNTIME_RANKS_H

#include <cstdint>
#include <string>
#include <vector>

namespace remat::runtime {

class Ranks {
public:
  /// The ranks of this process: MPI's world when an MPI launcher started
  /// it (MPI is initialized on the first call), else one rank. Throws
  /// std::runtime_error when a launcher asks for several ranks but this
  /// build has no MPI.
  static Ranks &world();

  int rank() const { return rankIndex; }
  int size() const { return rankCount; }
  bool distributed() const { return rankCount > 1; }

  /// Starts summing `count` floats at `data` over every rank, in place;
  /// the bytes must stay untouched until wait(handle) returns.
  size_t startSum(float *data, uint64_t count);
  /// Sharded optimizer state (ZeRO-1): `total` floats at `data` split in
  /// slices of `shard` (rank r's is [r·shard, min((r+1)·shard, total)),
  /// possibly empty). Starts gathering every rank's slice into every
  /// rank's `data`, in place (each rank's own slice is already there); the
  /// bytes must stay untouched until wait(handle). total < 2^31.
  size_t startGather(float *data, uint64_t total, uint64_t shard);
  /// The same slices, blocking, to rank 0 only: rank r passes its slice at
  /// `mine`; rank 0 receives all `total` floats at `out` (else unused).
  void gatherToFirst(const float *mine, uint64_t total, uint64_t shard,
                     float *out);
  /// Waits for a started sum or gather; returns the seconds spent waiting.
  double wait(size_t handle);
  /// Lets started sums progress (MPI moves them only inside its calls).
  void poll();
  /// Sums `values` over every rank, in place (blocking).
  void sum(std::vector<double> &values);
  /// Rank 0's `bytes` at `data` to every rank (blocking): NCCL's unique
  /// id (runtime/GradientComm.h). Virtual so that the CUDA backend, a
  /// module of its own (runtime/BackendModule.cpp), calls it without
  /// linking MPI's side of the runtime.
  virtual void broadcast(void *data, size_t bytes);
  /// Every rank's `value`, in rank order (blocking).
  std::vector<double> gather(double value);
  std::vector<uint64_t> gather(uint64_t value);
  /// Stops every rank (MPI_Abort) after this one reported its error.
  [[noreturn]] void abort(int code);

  virtual ~Ranks();

private:
  Ranks();
  int rankIndex = 0;
  int rankCount = 1;
  bool initialized = false; ///< this process called MPI_Init
  struct Pending;
  std::vector<Pending *> pending; ///< by handle; null once waited for
};

/// Whether this build can run several ranks (found MPI at configure time).
bool builtWithMpi();

/// The rank count an MPI launcher asked for, from its environment
/// (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_SIZE...), or 1 without one.
int launcherRankCount();

} // namespace remat::runtime

#endif // REMAT_RUNTIME_RANKS_H

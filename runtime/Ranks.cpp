//===- Ranks.cpp - The ranks of a data-parallel run (MPI) -----------------===//
#include "runtime/Ranks.h"

#include "ops/Shards.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <stdexcept>

#ifdef REMAT_HAVE_MPI
// The C API only: OpenMPI's mpi.h would pull in the deprecated C++
// bindings, which need a library of their own.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace remat::runtime {

int launcherRankCount() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE",
                           "MPI_LOCALNRANKS"}) {
    const char *value = std::getenv(name);
    if (value && *value) {
      int n = std::atoi(value);
      if (n >= 1)
        return n;
    }
  }
  return 1;
}

bool builtWithMpi() {
#ifdef REMAT_HAVE_MPI
  return true;
#else
  return false;
#endif
}

#ifdef REMAT_HAVE_MPI
struct Ranks::Pending {
  std::vector<MPI_Request> requests;
  /// A gather's counts and displacements (MPI reads them until it is done).
  std::vector<int> counts, displs;
};

namespace {
/// MPI's counts are ints: a large sum goes in pieces.
constexpr uint64_t kMaxPiece = uint64_t(INT_MAX) / 4 * 4;
} // namespace

Ranks::Ranks() {
  // Started by a launcher (or as a singleton under one): use MPI. A plain
  // `remat run` stays one rank and never touches MPI.
  bool launched = std::getenv("OMPI_COMM_WORLD_SIZE") ||
                  std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK") ||
                  std::getenv("PMI_RANK");
  if (!launched)
    return;
  int already = 0;
  MPI_Initialized(&already);
  if (!already) {
    MPI_Init(nullptr, nullptr);
    initialized = true;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rankIndex);
  MPI_Comm_size(MPI_COMM_WORLD, &rankCount);
}

Ranks::~Ranks() {
  for (Pending *p : pending)
    delete p;
  int finalized = 0;
  if (initialized && (MPI_Finalized(&finalized), !finalized))
    MPI_Finalize();
}

size_t Ranks::startSum(float *data, uint64_t count) {
  auto *p = new Pending;
  for (uint64_t begin = 0; begin < count; begin += kMaxPiece) {
    int n = int(std::min(kMaxPiece, count - begin));
    MPI_Request r;
    MPI_Iallreduce(MPI_IN_PLACE, data + begin, n, MPI_FLOAT, MPI_SUM,
                   MPI_COMM_WORLD, &r);
    p->requests.push_back(r);
  }
  pending.push_back(p);
  return pending.size() - 1;
}

namespace {
/// Each rank's element count and first element of `total` floats in
/// slices of `shard` (rank r's: [r·shard, min((r+1)·shard, total))).
void sliceLayout(uint64_t total, uint64_t shard, int ranks,
                 std::vector<int> &counts, std::vector<int> &displs) {
  if (total > uint64_t(INT_MAX))
    throw std::runtime_error(
        "a sharded optimizer state of " + std::to_string(total) +
        " elements is over MPI's 2^31 - 1 per collective");
  counts.assign(size_t(ranks), 0);
  displs.assign(size_t(ranks), 0);
  for (int r = 0; r < ranks; ++r) {
    ops::ShardRange part = ops::shardRange(total, shard, uint64_t(r));
    counts[size_t(r)] = int(part.count);
    displs[size_t(r)] = int(part.begin);
  }
}
} // namespace

size_t Ranks::startGather(float *data, uint64_t total, uint64_t shard) {
  auto *p = new Pending;
  sliceLayout(total, shard, rankCount, p->counts, p->displs);
  MPI_Request r;
  MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, p->counts.data(),
                  p->displs.data(), MPI_FLOAT, MPI_COMM_WORLD, &r);
  p->requests.push_back(r);
  pending.push_back(p);
  return pending.size() - 1;
}

void Ranks::gatherToFirst(const float *mine, uint64_t total, uint64_t shard,
                          float *out) {
  std::vector<int> counts, displs;
  sliceLayout(total, shard, rankCount, counts, displs);
  MPI_Gatherv(mine, counts[size_t(rankIndex)], MPI_FLOAT, out, counts.data(),
              displs.data(), MPI_FLOAT, 0, MPI_COMM_WORLD);
}

double Ranks::wait(size_t handle) {
  Pending *p = pending.at(handle);
  if (!p)
    return 0;
  auto start = std::chrono::steady_clock::now();
  MPI_Waitall(int(p->requests.size()), p->requests.data(),
              MPI_STATUSES_IGNORE);
  delete p;
  pending[handle] = nullptr;
  bool any = false;
  for (Pending *q : pending)
    any |= q != nullptr;
  if (!any)
    pending.clear();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       start)
      .count();
}

void Ranks::poll() {
  for (Pending *p : pending) {
    if (!p)
      continue;
    int done = 0;
    MPI_Testall(int(p->requests.size()), p->requests.data(), &done,
                MPI_STATUSES_IGNORE);
  }
}

void Ranks::sum(std::vector<double> &values) {
  if (rankCount > 1)
    MPI_Allreduce(MPI_IN_PLACE, values.data(), int(values.size()),
                  MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

void Ranks::broadcast(void *data, size_t bytes) {
  if (rankCount > 1)
    MPI_Bcast(data, int(bytes), MPI_BYTE, 0, MPI_COMM_WORLD);
}

namespace {
/// Every rank's `value`, in rank order.
template <typename T>
std::vector<T> allGather(T value, int ranks, MPI_Datatype type) {
  std::vector<T> all(size_t(ranks), value);
  if (ranks > 1)
    MPI_Allgather(&value, 1, type, all.data(), 1, type, MPI_COMM_WORLD);
  return all;
}
} // namespace

std::vector<double> Ranks::gather(double value) {
  return allGather(value, rankCount, MPI_DOUBLE);
}

std::vector<uint64_t> Ranks::gather(uint64_t value) {
  return allGather(value, rankCount, MPI_UINT64_T);
}

void Ranks::abort(int code) {
  if (rankCount > 1)
    MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

#else // no MPI: one rank

struct Ranks::Pending {};

Ranks::Ranks() {
  int asked = launcherRankCount();
  if (asked > 1)
    throw std::runtime_error(
        "started as one of " + std::to_string(asked) +
        " ranks, but this remat was built without MPI (install "
        "libopenmpi-dev and reconfigure; docs/distributed.md)");
}
Ranks::~Ranks() = default;
size_t Ranks::startSum(float *, uint64_t) { return 0; }
size_t Ranks::startGather(float *, uint64_t, uint64_t) { return 0; }
void Ranks::gatherToFirst(const float *mine, uint64_t total, uint64_t,
                          float *out) {
  std::copy(mine, mine + total, out);
}
double Ranks::wait(size_t) { return 0; }
void Ranks::poll() {}
void Ranks::sum(std::vector<double> &) {}
void Ranks::broadcast(void *, size_t) {}
std::vector<double> Ranks::gather(double value) { return {value}; }
std::vector<uint64_t> Ranks::gather(uint64_t value) { return {value}; }
void Ranks::abort(int code) { std::exit(code); }

#endif

Ranks &Ranks::world() {
  static Ranks ranks;
  return ranks;
}

} // namespace remat::runtime

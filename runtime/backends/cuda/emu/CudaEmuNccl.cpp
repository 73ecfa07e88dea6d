//===- CudaEmuNccl.cpp - The CUDA emulator's fake NCCL --------------------===//
//
// emu/include/nccl.h says what is modeled: one rank in place, several
// through MPI_COMM_WORLD (where the emulator build has MPI) on host memory,
// in stream order.
//
//===----------------------------------------------------------------------===//
#include "nccl.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <unistd.h>

#ifdef REMAT_HAVE_MPI
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace cudaemu {

struct NcclComm {
  int ranks = 1;
  int rank = 0;
#ifdef REMAT_HAVE_MPI
  MPI_Comm mpi = MPI_COMM_NULL;
#endif
};

namespace {
std::atomic<long> collectives{0};
int groupDepth = 0;

/// MPI counts are ints: large collectives go in pieces.
constexpr size_t kPiece = size_t(1) << 30;
} // namespace

long ncclCollectives() { return collectives.load(); }

} // namespace cudaemu

using cudaemu::NcclComm;

const char *ncclGetErrorString(ncclResult_t result) {
  switch (result) {
  case ncclSuccess:
    return "no error";
  case ncclUnhandledCudaError:
    return "unhandled cuda error (emulated)";
  case ncclSystemError:
    return "unhandled system error (emulated: MPI unavailable or failed)";
  case ncclInternalError:
    return "internal error (emulated)";
  case ncclInvalidArgument:
    return "invalid argument (emulated)";
  case ncclInvalidUsage:
    return "invalid usage (emulated)";
  }
  return "unknown result (emulated)";
}

ncclResult_t ncclGetVersion(int *version) {
  if (!version)
    return ncclInvalidArgument;
  *version = NCCL_MAJOR * 10000 + NCCL_MINOR * 100 + NCCL_PATCH;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  if (!id)
    return ncclInvalidArgument;
  // Random bytes: two ids differ, so a rank that did not get rank 0's
  // (a missing broadcast) is caught at ncclCommInitRank.
  std::random_device device;
  std::seed_seq seed{device(), device(), unsigned(getpid()),
                     unsigned(std::chrono::steady_clock::now()
                                  .time_since_epoch()
                                  .count())};
  std::mt19937 bits(seed);
  for (char &c : id->internal)
    c = char(bits() & 0xff);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id,
                              int rank) {
  if (!comm || nranks < 1 || rank < 0 || rank >= nranks)
    return ncclInvalidArgument;
  *comm = nullptr;
  auto c = new NcclComm;
  c->ranks = nranks;
  c->rank = rank;
  if (nranks > 1) {
#ifdef REMAT_HAVE_MPI
    int initialized = 0, worldSize = 0, worldRank = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      delete c;
      return ncclSystemError;
    }
    MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
    MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
    if (worldSize != nranks || worldRank != rank) {
      delete c;
      return ncclInvalidUsage;
    }
    // Every rank must hold rank 0's id (as NCCL's bootstrap needs).
    ncclUniqueId first = id;
    MPI_Bcast(first.internal, NCCL_UNIQUE_ID_BYTES, MPI_BYTE, 0,
              MPI_COMM_WORLD);
    int differs =
        std::memcmp(first.internal, id.internal, NCCL_UNIQUE_ID_BYTES) != 0;
    int anyDiffers = 0;
    MPI_Allreduce(&differs, &anyDiffers, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (anyDiffers) {
      delete c;
      return ncclInvalidArgument;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &c->mpi);
#else
    delete c;
    return ncclSystemError;
#endif
  }
  *comm = c;
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!comm)
    return ncclInvalidArgument;
  // REMAT_CUDA_EMU_NCCL_LOG=1: the tests see that the path was taken.
  if (const char *log = std::getenv("REMAT_CUDA_EMU_NCCL_LOG");
      log && std::strcmp(log, "1") == 0)
    std::fprintf(stderr,
                 "cuda emulator: nccl rank %d of %d: %ld collectives\n",
                 comm->rank, comm->ranks, cudaemu::ncclCollectives());
#ifdef REMAT_HAVE_MPI
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm->mpi != MPI_COMM_NULL && !finalized)
    MPI_Comm_free(&comm->mpi);
#endif
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommCount(ncclComm_t comm, int *count) {
  if (!comm || !count)
    return ncclInvalidArgument;
  *count = comm->ranks;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(ncclComm_t comm, int *rank) {
  if (!comm || !rank)
    return ncclInvalidArgument;
  *rank = comm->rank;
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  if (!comm || datatype != ncclFloat32 || (op != ncclSum && op != ncclAvg) ||
      (count && (!sendbuff || !recvbuff)))
    return ncclInvalidArgument;
  ++cudaemu::collectives;
  cudaError_t err = cudaemu::enqueue(stream, [=]() {
    const float *in = static_cast<const float *>(sendbuff);
    float *out = static_cast<float *>(recvbuff);
    if (in != out)
      std::memmove(out, in, count * sizeof(float));
    if (comm->ranks == 1)
      return; // the mean of one rank's values is them
#ifdef REMAT_HAVE_MPI
    for (size_t begin = 0; begin < count; begin += cudaemu::kPiece)
      MPI_Allreduce(MPI_IN_PLACE, out + begin,
                    int(std::min(cudaemu::kPiece, count - begin)), MPI_FLOAT,
                    MPI_SUM, comm->mpi);
    if (op == ncclAvg) {
      float scale = 1.0f / float(comm->ranks);
      for (size_t i = 0; i < count; ++i)
        out[i] *= scale;
    }
#endif
  });
  return err == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError;
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  if (!comm || datatype != ncclFloat32 || root < 0 || root >= comm->ranks ||
      (count && !recvbuff) || (count && comm->rank == root && !sendbuff))
    return ncclInvalidArgument;
  ++cudaemu::collectives;
  cudaError_t err = cudaemu::enqueue(stream, [=]() {
    float *out = static_cast<float *>(recvbuff);
    if (comm->rank == root && sendbuff != recvbuff)
      std::memmove(out, sendbuff, count * sizeof(float));
    if (comm->ranks == 1)
      return;
#ifdef REMAT_HAVE_MPI
    for (size_t begin = 0; begin < count; begin += cudaemu::kPiece)
      MPI_Bcast(out + begin, int(std::min(cudaemu::kPiece, count - begin)),
                MPI_FLOAT, root, comm->mpi);
#endif
  });
  return err == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError;
}

ncclResult_t ncclGroupStart() {
  ++cudaemu::groupDepth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  if (cudaemu::groupDepth == 0)
    return ncclInvalidUsage;
  --cudaemu::groupDepth;
  return ncclSuccess;
}

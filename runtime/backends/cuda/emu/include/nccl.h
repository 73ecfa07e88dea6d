//===- nccl.h - The CUDA emulator's fake NCCL -----------------------------===//
//
// Stands in for NCCL's nccl.h in the emulator build (REMAT_CUDA_EMULATOR):
// the subset the CUDA backend calls (runtime/backends/cuda/CudaNccl.cpp),
// on emulated device memory, which is host memory
// (emu/CudaEmuNccl.cpp). A communicator of one rank copies (in place:
// nothing); one of several ranks communicates through MPI_COMM_WORLD
// (MPI_Allreduce, MPI_Bcast), which needs an emulator build with MPI and
// every rank of the world in the communicator. Collectives run in the
// stream's order like every emulated launch (cudaemu::enqueue). ncclAvg is
// the sum times 1.0f / nranks (the MPI host path's arithmetic; NCCL's own
// multiplies each rank's values by 1/nranks before summing).
// REMAT_CUDA_EMU_NCCL_LOG=1: ncclCommDestroy prints the collectives run
// ("cuda emulator: nccl rank R of N: C collectives") to stderr.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_CUDA_EMU_NCCL_H
#define REMAT_CUDA_EMU_NCCL_H

#include "cuda_runtime.h"

#include <cstddef>

#define NCCL_MAJOR 2
#define NCCL_MINOR 10
#define NCCL_PATCH 0
#define NCCL_UNIQUE_ID_BYTES 128

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
} ncclResult_t;

typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

namespace cudaemu {
struct NcclComm;
}
typedef cudaemu::NcclComm *ncclComm_t;

typedef enum {
  ncclInt8 = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclFloat32 = 7,
  ncclFloat64 = 8,
  ncclFloat = ncclFloat32,
} ncclDataType_t;

typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
} ncclRedOp_t;

const char *ncclGetErrorString(ncclResult_t result);
ncclResult_t ncclGetVersion(int *version);
ncclResult_t ncclGetUniqueId(ncclUniqueId *id);
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id,
                              int rank);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommCount(ncclComm_t comm, int *count);
ncclResult_t ncclCommUserRank(ncclComm_t comm, int *rank);
/// ncclFloat32 with ncclSum or ncclAvg only (ncclInvalidArgument else).
ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream);
/// ncclFloat32 only.
ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream);
/// Groups nest; the collectives inside run when enqueued (every rank
/// issues them in the same order, so MPI needs no fusing).
ncclResult_t ncclGroupStart();
ncclResult_t ncclGroupEnd();

namespace cudaemu {
/// Collectives run by the fake NCCL so far (tests: the path was taken).
long ncclCollectives();
} // namespace cudaemu

#endif // REMAT_CUDA_EMU_NCCL_H

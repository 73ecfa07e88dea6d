//===- synthetic.cu - randn / randint inputs generated on the device -----===//
//
// One thread per Philox block (4 elements) through writeSyntheticBlock, the
// host generator's own arithmetic (runtime/SyntheticDraw.h): integers are
// bitwise the host's, normals agree except for rare last-bit differences
// between CUDA's and glibc's double log/cos/sin.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/kernels/common.cuh"

#include "runtime/SyntheticDraw.h"

namespace remat::runtime::cuda {

namespace {

__global__ void syntheticKernel(SyntheticRequest request, void *dst) {
  uint64_t blocks = (request.numElements + 3) / 4;
  for (uint64_t b = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; b < blocks;
       b += uint64_t(gridDim.x) * blockDim.x)
    writeSyntheticBlock(request, b, dst);
}

} // namespace

void launchSynthetic(void *dst, const SyntheticRequest &request,
                     cudaStream_t stream) {
  int64_t blocks = int64_t((request.numElements + 3) / 4);
  REMAT_LAUNCH(gridFor(blocks), kThreads, 0, stream, syntheticKernel)
  (request, dst);
  REMAT_CUDA_CHECK_LAUNCH("syntheticKernel");
}

} // namespace remat::runtime::cuda

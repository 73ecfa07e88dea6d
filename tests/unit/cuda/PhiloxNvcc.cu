// runtime/Philox.h compiled by nvcc (REMAT_HOST_DEVICE = __host__ __device__),
// called on the host: the device code path's source, checked without a GPU
// against the g++ build of the same header (PhiloxHostTest.cpp).
#include "runtime/Philox.h"

namespace remat::runtime::test {

float nvccDropoutUniform(uint64_t seed, uint64_t step, uint64_t index) {
  return dropoutUniform(seed, step, index);
}

} // namespace remat::runtime::test

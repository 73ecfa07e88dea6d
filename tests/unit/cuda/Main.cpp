// Catch2 main of remat-unit-cuda. With --skip-without-device as the first
// argument it exits 77 (ctest's SKIP_RETURN_CODE) where no CUDA device
// exists, so ctest reports the GPU tests skipped rather than passed.
#include "tests/unit/CatchSession.h"

#include "CudaTestUtil.h"

#include <cstdio>
#include <cstring>

int main(int argc, char **argv) {
  if (argc > 1 && std::strcmp(argv[1], "--skip-without-device") == 0) {
    if (!remat::runtime::test::haveCudaDevice()) {
      std::printf("remat-unit-cuda: no CUDA device; the GPU tests are "
                  "skipped\n");
      return 77;
    }
    argv[1] = argv[0];
    return remat::test::runCatchSession(argc - 1, argv + 1);
  }
  return remat::test::runCatchSession(argc, argv);
}

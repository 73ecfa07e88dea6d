//===- cuda_runtime_api.h - The CUDA emulator's runtime API ---------------===//
// The emulator declares the whole API in cuda_runtime.h (see there).
#include "cuda_runtime.h"

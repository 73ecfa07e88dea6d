//===- BoundsCheck.h - Check that each step keeps to its own bytes -------===//
//
// Backend::runStep promises that a step writes nothing outside its result
// buffers; the arena layout relies on more: a step reads only its operands
// (a kernel that read a neighbour's bytes would give results that depend on
// the budget). withBoundsCheck(inner) returns a backend that checks both
// around every step of `inner`, on any backend (the CPU, the GPU, the CUDA
// emulator):
//
//   1. copy the whole arena out (`before`);
//   2. overwrite every arena byte that is not an operand of the step with
//      0xFF (results that are not operands included: a step must not read
//      its results before writing them), run the step, copy the arena out;
//   3. copy `before` back in, run the step, copy the arena out (`after`);
//   4. a byte outside the results that changed in either run is a write out
//      of bounds; a result byte that differs between the two runs is a read
//      out of bounds (or of a result before it was written).
//
// Violations throw PlanError naming the step, the byte range and the
// buffers (or gaps) it falls in. Cost: every step runs twice, plus five
// whole-arena copies per step, and CUDA graphs stay off: a debugging and
// testing aid (`remat run --check-bounds`), not for timing. Bytes outside
// the arena (the CUDA workspace) are not checked.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_BOUNDSCHECK_H
#define REMAT_RUNTIME_BOUNDSCHECK_H

#include "runtime/Backend.h"

#include <memory>

namespace remat::runtime {

/// `inner` with every runStep checked as described above.
std::unique_ptr<Backend> withBoundsCheck(std::unique_ptr<Backend> inner);

} // namespace remat::runtime

#endif // REMAT_RUNTIME_BOUNDSCHECK_H

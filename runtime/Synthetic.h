//===- Synthetic.h - Seeded parameter init and synthetic input data ------===//
//
// Every random number the runtime draws outside dropout comes from Philox4x32
// -10 (Philox.h) keyed by the run seed, so a run is a pure function of
// (plan, seed). Streams are named by the buffer's NAME, not its index, so
// two plans of the same model at different budgets (which may order and
// place buffers differently) initialize and feed identically:
//
//   key     = (seed lo, seed hi)
//   counter = (i/4, fnv1a32(buffer name), step, domain)
//   domain  = 0x494E4954 ("INIT", step 0) for parameter/optimizer init,
//             0x44415441 ("DATA") for the inputs of 0-based step `step`,
//             0x54454143 ("TEAC", step 0) for a teacher's weights.
//
// Word i%4 of block i/4 is element i's 32 random bits. uniform:
// (w >> 8) * 2^-24 in [0,1). normal: Box-Muller on the word pairs (0,1) and
// (2,3) of a block, u1 = ((w0 >> 8) + 1) * 2^-24 in (0,1]. randint /
// token starts: low + ((w * (high-low)) >> 32).
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_SYNTHETIC_H
#define REMAT_RUNTIME_SYNTHETIC_H

#include "runtime/plan/PlanFormat.h"

#include <cstdint>
#include <string>
#include <vector>

namespace remat::runtime {

/// FNV-1a 32-bit hash of a buffer name (the Philox stream id).
uint32_t bufferStreamId(const std::string &name);

/// Elements [first, first + count) of the initial value of a
/// param/optimizer buffer, as host bytes of its dtype (f32, or f64: the f32
/// draw widened; other float dtypes are rejected by the loader's backend
/// check before this runs); `first` a multiple of 4 (a Philox block). Every
/// float result below is the same: f32 values, widened for an f64 buffer.
/// The executor writes a buffer's value in pieces, so that its peak memory
/// holds no copy of the largest parameter.
std::vector<char> initialValue(const BufferDesc &buffer, uint64_t seed,
                               uint64_t first, uint64_t count);

/// The synthetic value of input buffer `index` at 0-based `step`. For
/// labels_of and teacher, `sourceBytes` must be the host bytes of the "of"
/// buffer for this step (generated or user data).
///
/// teacher: a fixed random linear map W (features x outputs, standard
/// normals from the stream (seed, name, step 0, "TEAC")) applied to each
/// row x of the "of" input (its last dim is the features): integer labels
/// are argmax_k (x·W)_k, the first on ties, a task a classifier can learn;
/// float targets are x·W / sqrt(features).
///
/// `elementOffset`: the buffer is elements [offset, offset + n) of a
/// larger tensor of the same generator (one rank's slice of the global
/// batch, docs/distributed.md): randn, randint and sequence inputs draw
/// exactly those elements (sequence: rows offset / seq on); labels_of and
/// teacher follow their (sliced) source.
std::vector<char> syntheticInput(const Plan &plan, size_t index, uint64_t seed,
                                 int64_t step,
                                 const std::vector<char> *sourceBytes,
                                 uint64_t elementOffset = 0);

/// Elements [begin, begin + count) of a randn or randint input at `step`,
/// equal to the same range of syntheticInput's result. Lets the executor fill a large input in small pieces
/// instead of staging the whole tensor in host memory.
std::vector<char> syntheticInputRange(const Plan &plan, size_t index,
                                      uint64_t seed, int64_t step,
                                      uint64_t begin, uint64_t count);

/// The next token of the sequence rule: (a*x + c) mod vocab.
int64_t nextToken(const DataSpec &spec, int64_t token);

} // namespace remat::runtime

#endif // REMAT_RUNTIME_SYNTHETIC_H

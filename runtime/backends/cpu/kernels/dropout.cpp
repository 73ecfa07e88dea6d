//===- dropout.cpp - dropout with the Philox stream of runtime/Philox.h --===//
//
// Element i is kept where dropoutKeeps(seed, training step, i, rate) (one
// Philox block per 4 elements), the mask the CUDA backend draws too, and
// scaled by 1 / (1 - rate) computed in the float type. In micro-batch m of
// a split step, element i is element m·n + i of the batch's tensor, so the
// slices draw the unsplit step's mask. A rate of 0 keeps every element:
// y = x, without drawing. bf16 x and y (--precision bf16) are widened as
// read and rounded as written, the bits of float copies.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/kernels/Common.h"

#include "runtime/Philox.h"

namespace remat::runtime::cpu {

namespace {

/// The dropout of `call` with x and y stored as X and Y (T, or bf16 for
/// float kernels: widened as read, rounded as written).
template <typename T, typename X, typename Y>
void dropout(const KernelCall &call, const X *x, Y *y) {
  float rate = call.attrs->rate;
  int64_t n = call.inputs[0].numElements;
  if (rate == 0.0f) { // every element kept and scaled by 1: y = x
    parallelElements(n, [&](int64_t i) { storeAs(y, i, loadAs<T>(x, i)); });
    return;
  }
  T scale = T(1) / (T(1) - T(rate));
  uint64_t seed = call.attrs->seed, step = uint64_t(call.trainingStep);
  // One Philox block serves 4 elements (dropoutUniform's word g % 4 of
  // batch element g = first + i); the blocks in pieces on the threads.
  uint64_t first = call.firstElement(n);
  uint64_t begin = first / 4, end = (first + uint64_t(n) + 3) / 4;
  constexpr uint64_t kBlocks = 4096;
  uint64_t pieces = (end - begin + kBlocks - 1) / kBlocks;
  parallelRows(int64_t(pieces), n, [&](int64_t piece) {
    uint64_t b0 = begin + uint64_t(piece) * kBlocks;
    for (uint64_t b = b0; b < std::min(end, b0 + kBlocks); ++b) {
      PhiloxBlock r = dropoutBlock(seed, step, b);
      for (uint64_t w = 0; w < 4; ++w) {
        uint64_t g = 4 * b + w;
        if (g < first || g >= first + uint64_t(n))
          continue;
        int64_t i = int64_t(g - first);
        storeAs(y, i,
                philoxWordToUnit(r.word[w]) >= rate ? loadAs<T>(x, i) * scale
                                                    : T(0));
      }
    }
  });
}

} // namespace

template <typename T> void runDropout(const KernelCall &call, T *, uint64_t) {
  withStorage<T>(call.inputs[0].dtype, [&](auto xs) {
    withStorage<T>(call.outputs[0].dtype, [&](auto ys) {
      dropout<T>(call, call.inputs[0].as<const decltype(xs)>(),
                 call.outputs[0].as<decltype(ys)>());
    });
  });
}

template void runDropout<float>(const KernelCall &, float *, uint64_t);
template void runDropout<double>(const KernelCall &, double *, uint64_t);

} // namespace remat::runtime::cpu

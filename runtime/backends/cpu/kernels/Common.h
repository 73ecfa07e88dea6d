//===- Common.h - Helpers several CPU kernel families share -----*- C++ -*-===//
//
// Typed operand access, the row-major walk over strided operands, index
// reads with their range check, the softmax of one row (softmax,
// cross_entropy_grad and attention share it), the error of a family
// called with an op it has no case for, and the loop over independent
// pieces of work that OpenMP's threads share.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_BACKENDS_CPU_KERNELS_COMMON_H
#define REMAT_RUNTIME_BACKENDS_CPU_KERNELS_COMMON_H

#include "runtime/backends/cpu/kernels/Kernels.h"

#include "ops/BFloat16.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

/// Marks a function inlined wherever it is called: a loop over elements
/// vectorizes only where its per-element functions are inlined, and GCC's
/// inliner stops inlining in a file of many kernel instantiations (unary.cpp's
/// gelu_grad called geluExp per element: 4 ns an element, scalar).
#define REMAT_KERNEL_INLINE [[gnu::always_inline]] inline

namespace remat::runtime::cpu {

/// Float operand `i` of the call, as the kernel's float type.
template <typename T> const T *inData(const KernelCall &call, int i) {
  return call.inputs[i].template as<const T>();
}

/// Float result `i` of the call, as the kernel's float type.
template <typename T> T *outData(const KernelCall &call, int i) {
  return call.outputs[i].template as<T>();
}

/// Element i of a float tensor stored as E (the kernel's T, or uint16_t for
/// bf16), as T: bf16 widened exactly.
template <typename T, typename E>
REMAT_KERNEL_INLINE T loadAs(const E *p, int64_t i) {
  if constexpr (std::is_same_v<E, uint16_t>)
    return T(ops::bf16ToFloat(p[i]));
  else
    return p[i];
}

/// Stores `v` as element i of a float tensor stored as E: bf16 rounded to
/// nearest (ties to even), as a float copy rounded back would be.
template <typename E, typename T>
REMAT_KERNEL_INLINE void storeAs(E *p, int64_t i, T v) {
  if constexpr (std::is_same_v<E, uint16_t>)
    p[i] = ops::floatToBf16(float(v));
  else
    p[i] = v;
}

/// fn(E{}) with E the storage of a float tensor of `dtype` in a kernel
/// computing in T: uint16_t for bf16 (a float kernel only), else T.
template <typename T, typename Fn> void withStorage(DType dtype, Fn fn) {
  if constexpr (std::is_same_v<T, float>) {
    if (dtype == DType::BF16)
      return fn(uint16_t{});
  }
  fn(T{});
}

/// Throws std::logic_error "cpu: no kernel for op '<name>' in family
/// <Family>": the family's function has no case for `op`.
[[noreturn]] inline void throwNoKernel(OpKind op) {
  throw std::logic_error(std::string("cpu: no kernel for op '") + opName(op) +
                         "' in family " +
                         ops::kernelFamilyName(ops::opInfo(op).family));
}

inline int64_t product(Shape::const_iterator begin, Shape::const_iterator end) {
  int64_t n = 1;
  for (auto it = begin; it != end; ++it)
    n *= *it;
  return n;
}

/// Walks `shape` in row-major order, keeping one running offset per strided
/// operand: fn(linear index, offsets).
template <size_t N, typename Fn>
void walk(const Shape &shape, const std::vector<int64_t> (&strides)[N], Fn fn) {
  int64_t total = product(shape.begin(), shape.end());
  size_t rank = shape.size();
  std::vector<int64_t> idx(rank, 0);
  int64_t off[N] = {};
  for (int64_t i = 0; i < total; ++i) {
    fn(i, off);
    for (int64_t d = int64_t(rank) - 1; d >= 0; --d) {
      ++idx[d];
      for (size_t k = 0; k < N; ++k)
        off[k] += strides[k][d];
      if (idx[d] < shape[d])
        break;
      for (size_t k = 0; k < N; ++k)
        off[k] -= strides[k][d] * shape[d];
      idx[d] = 0;
    }
  }
}

/// Element `i` of an index tensor (i32 or i64).
inline int64_t readIndex(const TensorRef &t, int64_t i) {
  return t.dtype == DType::I32 ? int64_t(t.as<int32_t>()[i])
                               : t.as<int64_t>()[i];
}

/// Element `i` of an index tensor; throws std::runtime_error "<what> <v> at
/// position <i> is outside [0, <limit>)" when it is out of range.
inline int64_t checkedIndex(const TensorRef &t, int64_t i, int64_t limit,
                            const char *what) {
  int64_t v = readIndex(t, i);
  if (v < 0 || v >= limit)
    throw std::runtime_error(std::string(what) + " " + std::to_string(v) +
                             " at position " + std::to_string(i) +
                             " is outside [0, " + std::to_string(limit) + ")");
  return v;
}

/// Elements below which parallelFor stays on the calling thread: waking
/// the other threads costs more than such a loop.
inline constexpr int64_t kParallelElements = int64_t(1) << 16;

/// fn(i) for every i in [0, count), on OpenMP's threads where the build has
/// them (the threads oneDNN's convolutions use) and the loop touches at
/// least kParallelElements `elements`, else in order on this thread. Each
/// fn(i) must write only its own results and read nothing another writes,
/// so the results are the same bits either way.
template <typename Fn> void parallelFor(int64_t count, int64_t elements, Fn fn) {
#ifdef _OPENMP
  if (count > 1 && elements >= kParallelElements) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < count; ++i)
      fn(i);
    return;
  }
#endif
  for (int64_t i = 0; i < count; ++i)
    fn(i);
}

/// The widest vector instructions the element loops (parallelElements,
/// parallelRows) are compiled for and run with: the kernels' build targets
/// the baseline x86-64 (SSE2), which packs bf16 poorly and runs 4 floats
/// at a time; the same loops compiled for AVX2 or AVX-512 (F, BW, VL) run
/// 2-6x faster. Every level gives the same bits: the kernels build with
/// -ffp-contract=off (no fused multiply-adds) and without reassociation, so
/// each element sees the same IEEE operations in the same order
/// (tests/unit/runtime/VectorLevelTest.cpp).
enum class VectorLevel { Baseline, Avx2, Avx512 };

/// The level the loops run at: the widest the CPU has, or the one
/// REMAT_CPU_VECTOR names (baseline, avx2, avx512; never above the CPU's).
VectorLevel vectorLevel();
/// Sets the level (tests); one the CPU lacks is lowered to its widest.
void setVectorLevel(VectorLevel level);
/// "baseline", "avx2" or "avx512".
const char *vectorLevelName(VectorLevel level);

/// fn(i) for i in [begin, end), with everything fn calls inlined into a
/// loop compiled for the level's instructions (x86-64 only; elsewhere the
/// baseline's loop alone).
#if defined(__x86_64__)
template <typename Fn>
[[gnu::flatten, gnu::target("avx512f,avx512bw,avx512vl")]] void
indicesAvx512(int64_t begin, int64_t end, const Fn &fn) {
  for (int64_t i = begin; i < end; ++i)
    fn(i);
}
template <typename Fn>
[[gnu::flatten, gnu::target("avx2")]] void
indicesAvx2(int64_t begin, int64_t end, const Fn &fn) {
  for (int64_t i = begin; i < end; ++i)
    fn(i);
}
#endif
template <typename Fn>
[[gnu::flatten]] void indicesBaseline(int64_t begin, int64_t end,
                                      const Fn &fn) {
  for (int64_t i = begin; i < end; ++i)
    fn(i);
}
template <typename Fn>
void vectorIndices(int64_t begin, int64_t end, const Fn &fn) {
#if defined(__x86_64__)
  switch (vectorLevel()) {
  case VectorLevel::Avx512:
    return indicesAvx512(begin, end, fn);
  case VectorLevel::Avx2:
    return indicesAvx2(begin, end, fn);
  case VectorLevel::Baseline:
    break;
  }
#endif
  indicesBaseline(begin, end, fn);
}

/// parallelFor, each fn(i) compiled for and run at vectorLevel(): for row
/// kernels whose fn(i) loops over a row's elements.
template <typename Fn>
void parallelRows(int64_t count, int64_t elements, const Fn &fn) {
  parallelFor(count, elements, [&](int64_t i) { vectorIndices(i, i + 1, fn); });
}

/// fn(i) for every i in [0, n), in blocks of kParallelElements indices that
/// parallelFor shares among threads, at vectorLevel(); fn(i) must write
/// only element i's results.
template <typename Fn> void parallelElements(int64_t n, Fn fn) {
  int64_t blocks = (n + kParallelElements - 1) / kParallelElements;
  parallelFor(blocks, n, [&](int64_t block) {
    int64_t end = std::min(n, (block + 1) * kParallelElements);
    vectorIndices(block * kParallelElements, end, fn);
  });
}

/// e^x in float within 2 ulp (tests/unit/runtime/ExpTest.cpp): Cephes'
/// expf polynomial after a
/// Cody-Waite reduction by ln 2, x clamped to [-87.3, 88.3] and 0 below
/// -87.3 (where e^x is under the smallest normal float). Written without
/// calls or branches, so that a loop over it vectorizes: several times
/// faster than the C library's expf in softmax and the losses.
REMAT_KERNEL_INLINE float fastExp(float x) {
  float clamped = std::min(std::max(x, -87.33654f), 88.3f);
  // n = round(x / ln 2) by the 1.5 * 2^23 trick (exact in float here).
  constexpr float kShift = 12582912.0f;
  float t = clamped * 1.44269504088896341f + kShift;
  float n = t - kShift;
  int32_t tBits;
  std::memcpy(&tBits, &t, sizeof tBits);
  int32_t exponent = tBits - 0x4B400000; // n as an integer
  // r = x - n ln 2, ln 2 in two parts so n * 0.693359375 is exact.
  float r = clamped - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float z = r * r;
  float p =
      (((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) *
             r +
         4.1665795894e-2f) *
            r +
        1.6666665459e-1f) *
           r +
       5.0000001201e-1f) *
          z +
      r + 1.0f;
  // (unsigned: a NaN's garbage exponent must not overflow a signed shift)
  uint32_t scaleBits = uint32_t(exponent + 127) << 23;
  float scale;
  std::memcpy(&scale, &scaleBits, sizeof scale);
  float y = p * scale; // computed unconditionally: the select vectorizes
  return x < -87.33654f ? 0.0f : y;
}

/// e^x in T: fastExp for float, std::exp for double.
template <typename T> REMAT_KERNEL_INLINE T expOf(T x) {
  if constexpr (sizeof(T) == sizeof(float))
    return fastExp(x);
  else
    return std::exp(x);
}

/// term(0) + ... + term(n - 1) in kLanes running sums of V (double, or a
/// type with += and + that sums several at once): lane l adds the terms
/// l, l + kLanes, ... in order, the tail's terms go to lane 0, and the
/// lanes are added pairwise ((l0 + l1) + (l2 + l3)) + .... A fixed order
/// (the same bits every run, on any thread count) whose adds do not wait
/// for each other: one running sum waits a double add's latency a term,
/// which on GPT-2's 50,257-logit rows is most of the loss's time. kLanes
/// a power of two; 8 doubles fill an AVX-512 vector.
template <typename V = double, int kLanes = 8, typename Term>
REMAT_KERNEL_INLINE V laneSum(int64_t n, Term term) {
  static_assert(kLanes > 0 && (kLanes & (kLanes - 1)) == 0);
  V lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l)
      lane[l] += term(i + l);
  for (; i < n; ++i)
    lane[0] += term(i);
  for (int width = kLanes; width > 1; width /= 2)
    for (int l = 0; l < width / 2; ++l)
      lane[l] = lane[2 * l] + lane[2 * l + 1];
  return lane[0];
}

/// The largest of value(0), ..., value(n - 1) (n >= 1), in T: 16 running
/// maxima, then the largest of them. The same result as one running max
/// (the order of a max does not matter), without its chain of dependent
/// compares; the lanes vectorize.
template <typename T, typename Value>
REMAT_KERNEL_INLINE T laneMax(int64_t n, Value value) {
  constexpr int64_t kLanes = 16;
  T lane[kLanes];
  for (int64_t l = 0; l < kLanes; ++l)
    lane[l] = value(0);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t l = 0; l < kLanes; ++l)
      lane[l] = std::max(lane[l], value(i + l));
  for (; i < n; ++i)
    lane[0] = std::max(lane[0], value(i));
  T most = lane[0];
  for (int64_t l = 1; l < kLanes; ++l)
    most = std::max(most, lane[l]);
  return most;
}

/// y = softmax(x) over one row of d elements (y may be x): the max in T
/// (laneMax), y = expOf(x - max), the denominator summed in double
/// (laneSum), then y * T(1 / sum).
template <typename T> void softmaxRow(const T *x, T *y, int64_t d) {
  T maxValue = laneMax<T>(d, [&](int64_t j) { return x[j]; });
  for (int64_t j = 0; j < d; ++j)
    y[j] = expOf(x[j] - maxValue);
  T inv = T(1.0 / laneSum(d, [&](int64_t j) { return double(y[j]); }));
  for (int64_t j = 0; j < d; ++j)
    y[j] *= inv;
}

} // namespace remat::runtime::cpu

#endif // REMAT_RUNTIME_BACKENDS_CPU_KERNELS_COMMON_H

//===- VectorLevel.cpp - The vector instructions the element loops use ---===//
//
// Common.h's vectorLevel: the widest of AVX-512 (F, BW, VL), AVX2 and the
// baseline that the CPU has, or the narrower one REMAT_CPU_VECTOR names.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/kernels/Common.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace remat::runtime::cpu {

namespace {

VectorLevel widest() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl"))
    return VectorLevel::Avx512;
  if (__builtin_cpu_supports("avx2"))
    return VectorLevel::Avx2;
#endif
  return VectorLevel::Baseline;
}

VectorLevel initialLevel() {
  VectorLevel top = widest();
  const char *env = std::getenv("REMAT_CPU_VECTOR");
  if (!env || !*env || std::strcmp(env, "auto") == 0)
    return top;
  for (VectorLevel level :
       {VectorLevel::Baseline, VectorLevel::Avx2, VectorLevel::Avx512})
    if (std::strcmp(env, vectorLevelName(level)) == 0)
      return std::min(level, top);
  std::fprintf(stderr,
               "remat: REMAT_CPU_VECTOR='%s' is not auto, baseline, avx2 or "
               "avx512; using %s\n",
               env, vectorLevelName(top));
  return top;
}

std::atomic<int> &currentLevel() {
  static std::atomic<int> level{int(initialLevel())};
  return level;
}

} // namespace

VectorLevel vectorLevel() {
  return VectorLevel(currentLevel().load(std::memory_order_relaxed));
}

void setVectorLevel(VectorLevel level) {
  currentLevel().store(int(std::min(level, widest())));
}

const char *vectorLevelName(VectorLevel level) {
  switch (level) {
  case VectorLevel::Avx512:
    return "avx512";
  case VectorLevel::Avx2:
    return "avx2";
  case VectorLevel::Baseline:
    break;
  }
  return "baseline";
}

} // namespace remat::runtime::cpu

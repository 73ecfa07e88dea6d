//===- gemm_bench.cpp - remat's CPU GEMM on oneDNN and on OpenBLAS --------===//
//
// remat-gemm-bench [M N K] [--repeat R]: times the CPU backend's float32
// GEMM (runtime/backends/cpu/Gemm.h), C[M,N] = A[M,K] B[K,N], through
// oneDNN's matmul and through OpenBLAS, and its bf16 GEMM through oneDNN
// where this CPU has a bf16 kernel, alternately, and prints the best and
// median of R runs of each (default 2048 768 3072, R 7) in ms and
// GFLOP/s: the GEMM peaks that tools/bench/gemm_speed.py sets a step's
// FLOP rate against. Threads: OMP_NUM_THREADS, as for `remat run`.
//
//===----------------------------------------------------------------------===//
#include "ops/BFloat16.h"
#include "runtime/backends/cpu/DnnlMatmul.h"
#include "runtime/backends/cpu/Gemm.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace remat::runtime::cpu;

int main(int argc, char **argv) {
  int64_t m = 2048, n = 768, k = 3072;
  int repeat = 7;
  std::vector<int64_t> dims;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::printf("usage: remat-gemm-bench [M N K] [--repeat R]\n"
                  "Times remat's CPU GEMM C[M,N] = A[M,K] B[K,N] "
                  "in float32 through oneDNN and OpenBLAS, and in bf16 "
                  "through oneDNN.\n");
      return 0;
    }
    if (arg == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
      continue;
    }
    char *end = nullptr;
    long long v = std::strtoll(arg.c_str(), &end, 10);
    if (!end || *end || v <= 0) {
      std::fprintf(stderr, "remat-gemm-bench: not a size: '%s'\n", arg.c_str());
      return 2;
    }
    dims.push_back(v);
  }
  if (!dims.empty() && dims.size() != 3) {
    std::fprintf(stderr, "remat-gemm-bench: give M N K, or none\n");
    return 2;
  }
  if (dims.size() == 3)
    m = dims[0], n = dims[1], k = dims[2];
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> a(size_t(m * k)), b(size_t(k * n)), c(size_t(m * n));
  for (float &v : a)
    v = u(rng);
  for (float &v : b)
    v = u(rng);
  GemmShape shape{false, false, m, n, k, k, n, n};
  // bf16 copies of A and B for oneDNN's bf16 matmul (bf16 C).
  std::vector<uint16_t> a16(a.size()), b16(b.size()), c16(c.size());
  for (size_t i = 0; i < a.size(); ++i)
    a16[i] = remat::ops::floatToBf16(a[i]);
  for (size_t i = 0; i < b.size(); ++i)
    b16[i] = remat::ops::floatToBf16(b[i]);
  setDnnlMatmulEnabled(true);
  bool haveDnnl = dnnlMatmulEnabled();
  std::optional<uint64_t> pad32 = dnnlMatmulScratchBytes(shape),
                          pad16 =
                              dnnlMatmulScratchBytes(shape, GemmTypes::Bf16);
  std::vector<char> scratch(size_t(
      std::max(pad32.value_or(0), pad16.value_or(0)) + kGemmScratchAlignment));
  // The paths: float32 on oneDNN, on OpenBLAS, and bf16 on oneDNN.
  const char *names[3] = {"oneDNN", "OpenBLAS", "oneDNN-bf16"};
  bool present[3] = {haveDnnl, true, pad16.has_value()};
  auto once = [&](int path) {
    setDnnlMatmulEnabled(path != 1);
    auto t0 = std::chrono::steady_clock::now();
    if (path == 2) {
      char *aligned =
          scratch.data() +
          (kGemmScratchAlignment - reinterpret_cast<uintptr_t>(scratch.data()) %
                                       kGemmScratchAlignment) %
              kGemmScratchAlignment;
      dnnlMatmulRun(shape, GemmTypes::Bf16, a16.data(), b16.data(), c16.data(),
                    aligned, *pad16);
    } else {
      gemm<float>(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f,
                  c.data(), n, scratch.data(), scratch.size());
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
        .count();
  };
  std::vector<double> times[3];
  for (int path = 0; path < 3; ++path)
    if (present[path])
      once(path); // warm-up: oneDNN's JIT, OpenBLAS's buffers
  for (int r = 0; r < repeat; ++r)
    for (int path = 0; path < 3; ++path)
      if (present[path])
        times[path].push_back(once(path));
  double flops = 2.0 * double(m) * double(n) * double(k);
  std::printf("GEMM %lld x %lld x %lld, %d runs each, alternating "
              "(OpenBLAS's kernel: %s)\n",
              (long long)m, (long long)n, (long long)k, repeat,
              gemmBlasCore().c_str());
  for (int path = 0; path < 3; ++path) {
    if (times[path].empty()) {
      std::printf("%-14s not run (%s)\n", names[path],
                  path == 2
                      ? dnnlMatmulImplementation(shape, GemmTypes::Bf16).c_str()
                      : "not built");
      continue;
    }
    std::sort(times[path].begin(), times[path].end());
    double best = times[path].front(), median = times[path][times[path].size() / 2];
    std::printf("%-14s best %8.2f ms %7.1f GFLOP/s   median %8.2f ms %7.1f "
                "GFLOP/s\n",
                names[path], best * 1e3, flops / best / 1e9, median * 1e3,
                flops / median / 1e9);
  }
  return 0;
}

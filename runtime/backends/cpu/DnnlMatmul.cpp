//===- DnnlMatmul.cpp - float32 GEMMs through oneDNN's matmul -------------===//
#include "runtime/backends/cpu/DnnlMatmul.h"

#include "runtime/backends/cpu/EnvChoice.h"

#include <atomic>

#ifdef REMAT_HAVE_DNNL
#include <dnnl.hpp>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#endif

namespace remat::runtime::cpu {

namespace {

// 1: oneDNN, 0: OpenBLAS; -1: not yet read from REMAT_CPU_GEMM.
std::atomic<int> &modeFlag() {
  static std::atomic<int> flag{-1};
  return flag;
}

std::atomic<uint64_t> numRun{0}, numTooSmall{0};

} // namespace

void setDnnlMatmulEnabled(bool on) { modeFlag() = on ? 1 : 0; }

DnnlMatmulCounts dnnlMatmulCounts() {
  return {numRun.load(), numTooSmall.load()};
}

#ifndef REMAT_HAVE_DNNL

bool dnnlMatmulEnabled() { return false; }

std::optional<uint64_t> dnnlMatmulScratchBytes(const GemmShape &) {
  return std::nullopt;
}

bool dnnlMatmulRun(const GemmShape &, const float *, const float *, float *,
                   void *, uint64_t) {
  return false;
}

#else

bool dnnlMatmulEnabled() {
  int flag = modeFlag();
  if (flag < 0) {
    flag = envChoice("REMAT_CPU_GEMM", {"auto", "blas"}) == "blas" ? 0 : 1;
    modeFlag() = flag;
  }
  return flag == 1;
}

namespace {

using dnnl::memory;

/// One GEMM shape's descriptor, and its primitive (made on first run).
struct Entry {
  bool usable = false;
  uint64_t scratchpadBytes = 0;
  dnnl::matmul::primitive_desc pd;
  std::unique_ptr<dnnl::matmul> primitive;
  memory::desc a, b, c;
};

struct Cache {
  std::mutex mutex;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::map<std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t,
                      int64_t, uint32_t, uint32_t>,
           Entry>
      entries;
};

Cache &cache() {
  static Cache c;
  return c;
}

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

/// The entry of `g` (described on first use); null when oneDNN refuses it.
Entry *lookup(Cache &c, const GemmShape &g) {
  if (g.m <= 0 || g.n <= 0 || g.k <= 0)
    return nullptr;
  auto key = std::make_tuple(g.transA, g.transB, g.m, g.n, g.k, g.lda, g.ldb,
                             g.ldc, bitsOf(g.alpha), bitsOf(g.beta));
  auto [it, inserted] = c.entries.try_emplace(key);
  Entry &e = it->second;
  if (!inserted)
    return e.usable ? &e : nullptr;
  using dt = memory::data_type;
  // Row-major operands as strides: op(A) is m x k, op(B) k x n.
  e.a = memory::desc({g.m, g.k}, dt::f32,
                     g.transA ? memory::dims{1, g.lda} : memory::dims{g.lda, 1});
  e.b = memory::desc({g.k, g.n}, dt::f32,
                     g.transB ? memory::dims{1, g.ldb} : memory::dims{g.ldb, 1});
  e.c = memory::desc({g.m, g.n}, dt::f32, memory::dims{g.ldc, 1});
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (g.alpha != 1.0f)
    attr.set_output_scales(0, {g.alpha});
  if (g.beta != 0.0f) {
    dnnl::post_ops sum;
    sum.append_sum(g.beta);
    attr.set_post_ops(sum);
  }
  try {
    e.pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(e.a, e.b, e.c), attr,
                                        c.engine);
  } catch (const dnnl::error &) {
    return nullptr;
  }
  e.scratchpadBytes = e.pd.scratchpad_desc().get_size();
  // Only implementations that need no scratchpad (gemm:jit on AVX2 needs
  // none): one that does would make a plan's bytes depend on the CPU
  // it was compiled on (DnnlMatmul.h).
  e.usable = e.scratchpadBytes <= kMaxGemmScratchpadBytes;
  return e.usable ? &e : nullptr;
}

} // namespace

std::optional<uint64_t> dnnlMatmulScratchBytes(const GemmShape &gemm) {
  if (!dnnlMatmulEnabled())
    return std::nullopt;
  Cache &c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  Entry *e = lookup(c, gemm);
  if (!e)
    return std::nullopt;
  return e->scratchpadBytes;
}

bool dnnlMatmulRun(const GemmShape &gemm, const float *a, const float *b,
                   float *c, void *scratch, uint64_t scratchBytes) {
  if (!dnnlMatmulEnabled())
    return false;
  Cache &cc = cache();
  std::lock_guard<std::mutex> lock(cc.mutex);
  Entry *e = lookup(cc, gemm);
  if (!e)
    return false;
  if (e->scratchpadBytes > scratchBytes) {
    ++numTooSmall;
    return false;
  }
  if (!e->primitive)
    e->primitive = std::make_unique<dnnl::matmul>(e->pd);
  auto mut = [](const float *p) { return const_cast<float *>(p); };
  memory ma(e->a, cc.engine, mut(a)), mb(e->b, cc.engine, mut(b)),
      mc(e->c, cc.engine, c),
      pad(e->pd.scratchpad_desc(), cc.engine,
          e->scratchpadBytes ? scratch : nullptr);
  e->primitive->execute(cc.stream, {{DNNL_ARG_SRC, ma},
                                    {DNNL_ARG_WEIGHTS, mb},
                                    {DNNL_ARG_DST, mc},
                                    {DNNL_ARG_SCRATCHPAD, pad}});
  cc.stream.wait();
  ++numRun;
  return true;
}

#endif // REMAT_HAVE_DNNL

} // namespace remat::runtime::cpu

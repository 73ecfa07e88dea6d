//===- DnnlMatmul.cpp - GEMMs through oneDNN's matmul ---------------------===//
#include "runtime/backends/cpu/DnnlMatmul.h"

#include "runtime/backends/cpu/EnvChoice.h"

#include <atomic>
#include <cctype>
#include <cstdlib>

#ifdef REMAT_HAVE_DNNL
#include <dnnl.hpp>

#include <algorithm>
#include <climits>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#endif

namespace remat::runtime::cpu {

namespace {

// 0: OpenBLAS (blas), 1: the rule (auto), 2: oneDNN (onednn); -1: not yet
// read from REMAT_CPU_GEMM.
std::atomic<int> &modeFlag() {
  static std::atomic<int> flag{-1};
  return flag;
}

std::atomic<uint64_t> numRun{0}, numTooSmall{0};

} // namespace

void setDnnlMatmulEnabled(bool on) { modeFlag() = on ? 2 : 0; }

DnnlMatmulSwitch::DnnlMatmulSwitch(bool on) : saved(modeFlag()) {
  setDnnlMatmulEnabled(on);
}

DnnlMatmulSwitch::~DnnlMatmulSwitch() { modeFlag() = saved; }

DnnlMatmulCounts dnnlMatmulCounts() {
  return {numRun.load(), numTooSmall.load()};
}

#ifndef REMAT_HAVE_DNNL

bool dnnlMatmulEnabled() { return false; }

std::optional<uint64_t> dnnlMatmulScratchBytes(const GemmShape &, GemmTypes) {
  return std::nullopt;
}

bool dnnlMatmulRun(const GemmShape &, GemmTypes, const void *, const void *,
                   void *, void *, uint64_t) {
  return false;
}

std::string dnnlMatmulImplementation(const GemmShape &, GemmTypes) {
  return "none (built without oneDNN)";
}

#else

namespace {

int mode() {
  int flag = modeFlag();
  if (flag < 0) {
    std::string value = envChoice("REMAT_CPU_GEMM", {"auto", "blas", "onednn"});
    flag = value == "blas" ? 0 : value == "onednn" ? 2 : 1;
    modeFlag() = flag;
  }
  return flag;
}

/// Whether float32 GEMMs stay on OpenBLAS by the rule: it runs an AVX-512
/// kernel on this CPU, which on the CPUs measured beats oneDNN 2.6's
/// float32 matmul (docs/cli.md, "CPU GEMMs"). Debian's OpenBLAS 0.3.21
/// picks one (SkylakeX, Cooperlake, SapphireRapids) on Intel CPUs with
/// AVX-512 and its AVX2 kernels on AMD's, unless OPENBLAS_CORETYPE names
/// the kernel. Decided from the CPU, not by asking OpenBLAS, so that the
/// compiler, which does not link it, answers as the runtime does.
bool float32OnBlas() {
  if (mode() != 1)
    return false;
  static const bool avx512 = [] {
    if (const char *core = std::getenv("OPENBLAS_CORETYPE"); core && *core) {
      std::string name;
      for (const char *c = core; *c; ++c)
        name += char(std::tolower(static_cast<unsigned char>(*c)));
      return name == "skylakex" || name == "cooperlake" ||
             name == "sapphirerapids";
    }
    __builtin_cpu_init();
    return __builtin_cpu_is("intel") && __builtin_cpu_supports("avx512f");
  }();
  return avx512;
}

} // namespace

bool dnnlMatmulEnabled() { return mode() != 0; }

namespace {

/// Why GEMMs of `types` do not go to oneDNN at all, or null when they do.
const char *notOnDnnl(GemmTypes types) {
  if (!dnnlMatmulEnabled())
    return "none (REMAT_CPU_GEMM=blas)";
  if (types == GemmTypes::F32 && float32OnBlas())
    return "none (OpenBLAS's AVX-512 kernel)";
  return nullptr;
}

} // namespace

namespace {

using dnnl::memory;

/// One GEMM shape's descriptor, and its primitive (made on first run).
struct Entry {
  bool usable = false;
  std::string implementation; // or why oneDNN does not run it
  uint64_t scratchpadBytes = 0;
  dnnl::matmul::primitive_desc pd;
  std::unique_ptr<dnnl::matmul> primitive;
  memory::desc a, b, c;
};

struct Cache {
  std::mutex mutex;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::map<std::tuple<GemmTypes, bool, bool, int64_t, int64_t, int64_t, int64_t,
                      int64_t, int64_t, uint32_t, uint32_t, int64_t, int64_t,
                      int64_t, int64_t>,
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

/// Describes `e`, the GEMM `g` on `types`.
void describe(Cache &c, const GemmShape &g, GemmTypes types, Entry &e) {
  if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.batch <= 0) {
    e.implementation = "none (an empty GEMM)";
    return;
  }
  // oneDNN's kernels index in 32 bits: on AVX-512 its brgemm blocking
  // divides by zero (SIGFPE) for a dimension past 2^31.
  if (std::max({g.m, g.n, g.k, g.lda, g.ldb, g.ldc, g.batch, g.strideA,
                g.strideB, g.strideC}) > INT32_MAX) {
    e.implementation = "none (a dimension over 2^31 - 1)";
    return;
  }
  using dt = memory::data_type;
  dt type = types == GemmTypes::F32 ? dt::f32 : dt::bf16;
  dt typeC = types == GemmTypes::Bf16 ? dt::bf16 : dt::f32;
  // Row-major operands as strides: op(A) is m x k, op(B) k x n; a batch is
  // their leading dimension.
  auto operand = [&](int64_t rows, int64_t cols, dt type, bool trans,
                     int64_t ld, int64_t stride) {
    memory::dims strides = trans ? memory::dims{1, ld} : memory::dims{ld, 1};
    if (g.batch == 1)
      return memory::desc({rows, cols}, type, strides);
    return memory::desc({g.batch, rows, cols}, type,
                        {stride, strides[0], strides[1]});
  };
  e.a = operand(g.m, g.k, type, g.transA, g.lda, g.strideA);
  e.b = operand(g.k, g.n, type, g.transB, g.ldb, g.strideB);
  e.c = operand(g.m, g.n, typeC, false, g.ldc, g.strideC);
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
    e.implementation = "none (oneDNN has no primitive for it)";
    return;
  }
  e.implementation = e.pd.impl_info_str();
  e.scratchpadBytes = e.pd.scratchpad_desc().get_size();
  // oneDNN's reference implementation (on a CPU without bf16 instructions,
  // its only bf16 matmul) is far slower than OpenBLAS or float copies.
  if (e.implementation.rfind("ref", 0) == 0) {
    e.implementation = "none (oneDNN has only " + e.implementation + ")";
    return;
  }
  e.usable = e.scratchpadBytes <= kMaxGemmScratchpadBytes;
  if (!e.usable)
    e.implementation = "none (" + e.implementation + " needs " +
                       std::to_string(e.scratchpadBytes) +
                       " bytes of scratchpad)";
}

/// The entry of `g` on `types` (described on first use); its `usable`
/// says whether oneDNN runs it.
Entry &lookup(Cache &c, const GemmShape &g, GemmTypes types) {
  auto key = std::make_tuple(types, g.transA, g.transB, g.m, g.n, g.k, g.lda,
                             g.ldb, g.ldc, bitsOf(g.alpha), bitsOf(g.beta),
                             g.batch, g.strideA, g.strideB, g.strideC);
  auto [it, inserted] = c.entries.try_emplace(key);
  Entry &e = it->second;
  if (inserted)
    describe(c, g, types, e);
  return e;
}

} // namespace

std::optional<uint64_t> dnnlMatmulScratchBytes(const GemmShape &gemm,
                                               GemmTypes types) {
  if (notOnDnnl(types))
    return std::nullopt;
  Cache &c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  Entry &e = lookup(c, gemm, types);
  if (!e.usable)
    return std::nullopt;
  return e.scratchpadBytes;
}

std::string dnnlMatmulImplementation(const GemmShape &gemm, GemmTypes types) {
  if (const char *why = notOnDnnl(types))
    return why;
  Cache &c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return lookup(c, gemm, types).implementation;
}

bool dnnlMatmulRun(const GemmShape &gemm, GemmTypes types, const void *a,
                   const void *b, void *c, void *scratch,
                   uint64_t scratchBytes) {
  if (notOnDnnl(types))
    return false;
  Cache &cc = cache();
  std::lock_guard<std::mutex> lock(cc.mutex);
  Entry *e = &lookup(cc, gemm, types);
  if (!e->usable)
    return false;
  if (e->scratchpadBytes > scratchBytes) {
    ++numTooSmall;
    return false;
  }
  if (!e->primitive)
    e->primitive = std::make_unique<dnnl::matmul>(e->pd);
  auto mut = [](const void *p) { return const_cast<void *>(p); };
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

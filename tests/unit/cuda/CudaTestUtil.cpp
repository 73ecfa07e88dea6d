//===- CudaTestUtil.cpp - Ops on the CUDA backend against the CPU ---------===//
#include "CudaTestUtil.h"

#include "runtime/backends/cuda/CudaBackend.h"

namespace remat::runtime::test {

bool haveCudaDevice() {
  static const bool present = cudaDeviceCount() > 0;
  return present;
}

void checkAgainstCpu(const OpCase &c, double tolerance) {
  auto cpu = createCpuBackend();
  auto gpu = createCudaBackend();
  std::vector<HostTensor> expected = runOnBackend(*cpu, c);
  std::vector<HostTensor> actual = runOnBackend(*gpu, c);
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    double err = normalizedError(actual[i], expected[i]);
    INFO(opName(c.op) << " result " << i << ": normalized error " << err
                      << " (tolerance " << tolerance << ")");
    if (tolerance == 0)
      CHECK(actual[i].values == expected[i].values);
    else
      CHECK(err <= tolerance);
  }
}

HostTensor indices(const Shape &shape, int64_t limit, std::mt19937 &rng,
                   DType dtype) {
  std::uniform_int_distribution<int64_t> dist(0, limit - 1);
  HostTensor t{dtype, shape, {}};
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  for (int64_t i = 0; i < n; ++i)
    t.values.push_back(double(dist(rng)));
  return t;
}

void checkMatmulFormsAgainstCpu(DType dtype, double tolerance,
                                std::mt19937 &rng) {
  auto random = [&](const Shape &s) {
    HostTensor t = randomTensor(s, rng);
    t.dtype = dtype;
    return t;
  };
  auto check = [&](const nlohmann::json &attrs, const Shape &a, const Shape &b,
                   const Shape &c) {
    checkAgainstCpu(
        {OpKind::Matmul, attrs, {random(a), random(b)}, {typeOf(c, dtype)}},
        tolerance);
  };
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Shape a = ta ? Shape{2, 3, 37, 19} : Shape{2, 3, 19, 37};
      Shape b = tb ? Shape{2, 3, 23, 37} : Shape{2, 3, 37, 23};
      Shape shared = tb ? Shape{23, 37} : Shape{37, 23};
      nlohmann::json attrs = {{"transpose_a", ta}, {"transpose_b", tb}};
      check(attrs, a, b, {2, 3, 19, 23});
      check(attrs, a, shared, {2, 3, 19, 23});
    }
  check(nlohmann::json::object(), {64, 300}, {300, 129}, {64, 129});
  // More rows than columns (the cpu's bf16 GEMM then copies B whole), and
  // a transposed A wider than deep (it then copies B whole, C by rows).
  check(nlohmann::json::object(), {2, 3, 40, 17}, {17, 11}, {2, 3, 40, 11});
  check({{"transpose_a", true}}, {2, 3, 8, 40}, {2, 3, 8, 23}, {2, 3, 40, 23});
  // sum_batch: a shared weight's gradient, one GEMM over the rows (deep,
  // then wide).
  check({{"transpose_a", true}, {"sum_batch", true}}, {2, 3, 37, 19},
        {2, 3, 37, 23}, {19, 23});
  check({{"transpose_a", true}, {"sum_batch", true}}, {2, 3, 5, 40},
        {2, 3, 5, 23}, {40, 23});
}

void checkAttentionAgainstCpu(const Shape &s, const nlohmann::json &attrs,
                              std::mt19937 &rng) {
  HostTensor q = randomTensor(s, rng), k = randomTensor(s, rng),
             v = randomTensor(s, rng), dout = randomTensor(s, rng);
  TensorType t{DType::F32, s};
  checkAgainstCpu({OpKind::Attention, attrs, {q, k, v}, {t}}, kReductionTol);
  checkAgainstCpu({OpKind::AttentionGrad, attrs, {q, k, v, dout}, {t, t, t}},
                  kReductionTol);
}

} // namespace remat::runtime::test

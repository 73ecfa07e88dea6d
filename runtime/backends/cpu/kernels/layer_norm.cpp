//===- layer_norm.cpp - layer_norm and layer_norm_grad -------------------===//
//
// Per row of the last dimension: mean and biased variance in double (two
// passes), rstd = 1 / sqrt(var + epsilon) in double,
// y = T((x - mean) * rstd) * gamma + beta. The gradient recomputes the row
// statistics, writes dx per row in double and adds dgamma / dbeta in the
// float type, row after row. Rows run on the threads (parallelRows); the
// gradient's column sums run on them by blocks of columns, each column's
// terms still added in row order, so the bits do not depend on the threads.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/kernels/Common.h"

#include <vector>

namespace remat::runtime::cpu {

namespace {

/// Mean and 1/sqrt(var + eps) of one row (biased variance, two passes).
template <typename T>
void rowStats(const T *x, int64_t d, float epsilon, double &mean,
              double &rstd) {
  double sum = 0;
  for (int64_t j = 0; j < d; ++j)
    sum += double(x[j]);
  mean = sum / double(d);
  double var = 0;
  for (int64_t j = 0; j < d; ++j) {
    double c = double(x[j]) - mean;
    var += c * c;
  }
  var /= double(d);
  rstd = 1.0 / std::sqrt(var + double(epsilon));
}

} // namespace

template <typename T> void runLayerNorm(const KernelCall &call, T *, uint64_t) {
  const T *x = inData<T>(call, 0), *gamma = inData<T>(call, 1),
          *beta = inData<T>(call, 2);
  T *y = outData<T>(call, 0);
  int64_t d = call.inputs[0].shape.back(),
          rows = call.inputs[0].numElements / d;
  parallelRows(rows, rows * d, [&](int64_t r) {
    double mean, rstd;
    rowStats(x + r * d, d, call.attrs->epsilon, mean, rstd);
    for (int64_t j = 0; j < d; ++j)
      y[r * d + j] =
          T((double(x[r * d + j]) - mean) * rstd) * gamma[j] + beta[j];
  });
}

template <typename T>
void runLayerNormGrad(const KernelCall &call, T *, uint64_t) {
  const T *x = inData<T>(call, 0), *gamma = inData<T>(call, 1),
          *dy = inData<T>(call, 2);
  T *dx = outData<T>(call, 0), *dgamma = outData<T>(call, 1),
    *dbeta = outData<T>(call, 2);
  int64_t d = call.inputs[0].shape.back(),
          rows = call.inputs[0].numElements / d;
  // Each row's statistics (kept for the column sums) and dx.
  std::vector<double> stats(size_t(2 * rows));
  parallelRows(rows, rows * d, [&](int64_t r) {
    const T *xr = x + r * d, *dyr = dy + r * d;
    double mean, rstd;
    rowStats(xr, d, call.attrs->epsilon, mean, rstd);
    stats[size_t(2 * r)] = mean;
    stats[size_t(2 * r + 1)] = rstd;
    double sumDxhat = 0, sumDxhatXhat = 0;
    for (int64_t j = 0; j < d; ++j) {
      double xhat = (double(xr[j]) - mean) * rstd;
      double dxhat = double(dyr[j]) * double(gamma[j]);
      sumDxhat += dxhat;
      sumDxhatXhat += dxhat * xhat;
    }
    double meanDxhat = sumDxhat / double(d);
    double meanDxhatXhat = sumDxhatXhat / double(d);
    for (int64_t j = 0; j < d; ++j) {
      double xhat = (double(xr[j]) - mean) * rstd;
      double dxhat = double(dyr[j]) * double(gamma[j]);
      dx[r * d + j] = T(rstd * (dxhat - meanDxhat - xhat * meanDxhatXhat));
    }
  });
  // dgamma and dbeta by blocks of columns, each column's terms in row order
  // (the row loop outside, so that each row's block is read in order).
  constexpr int64_t kColumns = 64;
  parallelRows((d + kColumns - 1) / kColumns, rows * d, [&](int64_t block) {
    int64_t j0 = block * kColumns, j1 = std::min(d, j0 + kColumns);
    for (int64_t j = j0; j < j1; ++j)
      dgamma[j] = dbeta[j] = T(0);
    for (int64_t r = 0; r < rows; ++r) {
      const T *xr = x + r * d, *dyr = dy + r * d;
      double mean = stats[size_t(2 * r)], rstd = stats[size_t(2 * r + 1)];
      for (int64_t j = j0; j < j1; ++j) {
        double xhat = (double(xr[j]) - mean) * rstd;
        dgamma[j] += T(double(dyr[j]) * xhat);
        dbeta[j] += dyr[j];
      }
    }
  });
}

template void runLayerNorm<float>(const KernelCall &, float *, uint64_t);
template void runLayerNorm<double>(const KernelCall &, double *, uint64_t);
template void runLayerNormGrad<float>(const KernelCall &, float *, uint64_t);
template void runLayerNormGrad<double>(const KernelCall &, double *, uint64_t);

} // namespace remat::runtime::cpu

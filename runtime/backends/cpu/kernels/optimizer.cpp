//===- optimizer.cpp - optimizer updates, grad_accumulate ----------------===//
//
// Elementwise in the float type: element i of a result depends on element
// i of the operands only, so each result may take its operand's bytes, and
// the elements are shared among the threads (the same bits).
// adamw's bias corrections 1 - beta^t, t = training step + 1, are computed
// in double and rounded to the float type.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/kernels/Common.h"

namespace remat::runtime::cpu {

/// sgd_update, and sgd_plain_update (no momentum buffer: m = g).
template <typename T> void runSgdUpdate(const KernelCall &call, T *, uint64_t) {
  const OpAttrs &at = *call.attrs;
  bool plain = call.op == OpKind::SgdPlainUpdate;
  const T *grad = inData<T>(call, 1);
  const T *paramIn = inData<T>(call, 0);
  const T *momIn = plain ? nullptr : inData<T>(call, 2);
  T *param = outData<T>(call, 0);
  T *mom = plain ? nullptr : outData<T>(call, 1);
  T lr = T(at.lr), mu = T(at.momentum), wd = T(at.weightDecay);
  parallelElements(call.inputs[0].numElements, [&](int64_t i) {
    T g = grad[i] + wd * paramIn[i];
    T m = g;
    if (mom) {
      m = mu * momIn[i] + g;
      mom[i] = m;
    }
    param[i] = paramIn[i] - lr * m;
  });
}

template <typename T>
void runAdamwUpdate(const KernelCall &call, T *, uint64_t) {
  const OpAttrs &at = *call.attrs;
  const T *grad = inData<T>(call, 1);
  const T *paramIn = inData<T>(call, 0), *mIn = inData<T>(call, 2),
          *vIn = inData<T>(call, 3);
  T *param = outData<T>(call, 0), *mOut = outData<T>(call, 1),
    *vOut = outData<T>(call, 2);
  double t = double(call.trainingStep + 1);
  T correction1 = T(1.0 - std::pow(double(at.beta1), t));
  T correction2 = T(1.0 - std::pow(double(at.beta2), t));
  T lr = T(at.lr), b1 = T(at.beta1), b2 = T(at.beta2), eps = T(at.eps);
  T decay = T(1) - lr * T(at.weightDecay);
  parallelElements(call.inputs[0].numElements, [&](int64_t i) {
    T g = grad[i];
    T p = paramIn[i] * decay;
    T m = b1 * mIn[i] + (T(1) - b1) * g;
    T v = b2 * vIn[i] + (T(1) - b2) * g * g;
    mOut[i] = m;
    vOut[i] = v;
    param[i] = p - lr * (m / correction1) / (std::sqrt(v / correction2) + eps);
  });
}

/// grad_accumulate: acc' = scale·g in micro-batch 0, acc + scale·g after.
template <typename T>
void runGradAccumulate(const KernelCall &call, T *, uint64_t) {
  const T *acc = inData<T>(call, 0), *grad = inData<T>(call, 1);
  T *out = outData<T>(call, 0);
  T scale = T(call.attrs->scale);
  bool first = call.microbatch == 0;
  parallelElements(call.inputs[0].numElements, [&](int64_t i) {
    out[i] = first ? scale * grad[i] : acc[i] + scale * grad[i];
  });
}

template void runGradAccumulate<float>(const KernelCall &, float *, uint64_t);
template void runGradAccumulate<double>(const KernelCall &, double *, uint64_t);
template void runSgdUpdate<float>(const KernelCall &, float *, uint64_t);
template void runSgdUpdate<double>(const KernelCall &, double *, uint64_t);
template void runAdamwUpdate<float>(const KernelCall &, float *, uint64_t);
template void runAdamwUpdate<double>(const KernelCall &, double *, uint64_t);

} // namespace remat::runtime::cpu

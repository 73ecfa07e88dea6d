//===- CudaBf16.cpp - bf16 operands on the CUDA backend -------------------===//
//
// Under --precision bf16 (docs/precision.md) the CUDA backend reads and
// writes bf16 tensors itself in the moves (reshape, transpose), the
// conversion, cross_entropy and its gradient (bf16 logits and dlogits), a
// matmul of bf16 operands (cuBLAS's GemmEx: bf16 inputs, float compute,
// the result rounded to bf16 or, a parameter's gradient, float32) and the
// elementwise kernels on all-bf16 operands (binary ops, activations and
// their gradients, dropout: float math on the widened values, the result
// rounded). Every other op with a bf16 operand or result runs its float kernel
// on float copies of them in the kernel scratch: each bf16 input widened
// (exactly) before the launch, each bf16 result rounded back (to nearest, ties
// to even) after it, as the cpu backend's staging does (cpu/Bf16Staging.h);
// the float32 weights of a bf16 convolution copied rounded to bf16. The
// copies take the front of the scratch; the kernel gets the rest.
//
//===----------------------------------------------------------------------===//
#include "ops/ShapeRules.h"
#include "runtime/backends/cuda/CudaBackendInternal.h"

#include <stdexcept>
#include <string>

namespace remat::runtime::cuda {

namespace {

/// Bytes of a float copy of `elements` bf16 values (256-aligned, as the
/// scratch is).
uint64_t copyBytes(int64_t elements) {
  return alignUp(uint64_t(elements) * sizeof(float), 256);
}

/// The moves, the conversion and the loss on bf16 logits (bf16Native in
/// the op table), a GEMM of bf16 operands (its result bf16 or float32),
/// and on bf16 alone the elementwise families (kernels/binary.cu,
/// unary.cu, dropout.cu).
bool readsBf16Itself(OpKind op, bool floatsAllBf16, bool inputsAllBf16) {
  const ops::OpInfo &info = ops::opInfo(op);
  using ops::KernelFamily;
  if (info.shapeRule == ops::ShapeRule::Gemm)
    return inputsAllBf16;
  if (info.family == KernelFamily::Binary ||
      info.family == KernelFamily::Unary ||
      info.family == KernelFamily::UnaryGrad ||
      info.family == KernelFamily::Dropout)
    return floatsAllBf16;
  return info.bf16Native;
}

/// The dtypes of an op's tensors, as far as its float copies go: whether
/// any is bf16, and whether every float one is (of all, of the inputs).
struct Bf16Mix {
  bool any = false, allBf16 = true, inputsBf16 = true;
  void note(DType d, bool input) {
    any |= d == DType::BF16;
    allBf16 &= d != DType::F32;
    if (input)
      inputsBf16 &= d != DType::F32;
  }
  bool copies(OpKind op) const {
    return any && !readsBf16Itself(op, allBf16, inputsBf16);
  }
};

/// Converts `from` into `to` (same shape, f32 <-> bf16) on ctx's stream.
void convert(const TensorRef &from, const TensorRef &to,
             const DeviceContext &ctx) {
  KernelCall call;
  call.inputs = &from;
  call.numInputs = 1;
  call.outputs = &to;
  call.numOutputs = 1;
  launchConvert(call, ctx);
}

} // namespace

uint64_t floatCopyBytes(OpKind op, const std::vector<TensorType> &inputs,
                        const std::vector<TensorType> &outputs) {
  Bf16Mix mix;
  uint64_t bytes = 0;
  for (const auto *list : {&inputs, &outputs})
    for (const TensorType &t : *list) {
      mix.note(t.dtype, list == &inputs);
      if (t.dtype == DType::BF16)
        bytes +=
            copyBytes(int64_t(ops::checkedNumElements(t.shape).value_or(0)));
    }
  if (!mix.copies(op))
    return 0;
  // Rounded weights: a bf16 copy, then the float copy of it.
  if (int w = ops::roundedWeightsOperand(op, inputs, outputs); w >= 0)
    bytes +=
        2 * copyBytes(int64_t(
                ops::checkedNumElements(inputs[size_t(w)].shape).value_or(0)));
  return bytes;
}

bool needsFloatCopies(const KernelCall &call) {
  Bf16Mix mix;
  for (int i = 0; i < call.numInputs; ++i)
    mix.note(call.inputs[i].dtype, true);
  for (int i = 0; i < call.numOutputs; ++i)
    mix.note(call.outputs[i].dtype, false);
  return mix.copies(call.op);
}

void runOnFloatCopies(const KernelCall &call, const DeviceContext &ctx) {
  char *next = static_cast<char *>(ctx.scratch);
  uint64_t used = 0;
  auto take = [&](const TensorRef &t) {
    uint64_t bytes = copyBytes(t.numElements);
    if (bytes > ctx.scratchBytes - used)
      throw std::runtime_error(
          "cuda: step " + std::to_string(call.stepIndex) + " (" +
          std::string(opName(call.op)) + "): the kernel scratch of " +
          std::to_string(ctx.scratchBytes) +
          " B has no room for the float copies of its bf16 tensors");
    TensorRef copy = t;
    copy.data = next;
    copy.dtype = DType::F32;
    next += bytes;
    used += bytes;
    return copy;
  };
  std::vector<TensorRef> ins(call.inputs, call.inputs + call.numInputs),
      outs(call.outputs, call.outputs + call.numOutputs);
  int rounded = call.numInputs == 2 && call.numOutputs == 1
                    ? ops::roundedWeightsOperand(call.op, call.inputs[0].dtype,
                                                 call.inputs[1].dtype,
                                                 call.outputs[0].dtype)
                    : -1;
  for (size_t i = 0; i < ins.size(); ++i) {
    TensorRef &t = ins[i];
    if (int(i) == rounded) {
      TensorRef half = take(t);
      half.dtype = DType::BF16;
      convert(t, half, ctx);
      TensorRef copy = take(t);
      convert(half, copy, ctx);
      t = copy;
    } else if (t.dtype == DType::BF16) {
      TensorRef copy = take(t);
      convert(t, copy, ctx);
      t = copy;
    }
  }
  for (int o = 0; o < call.numOutputs; ++o) {
    if (outs[size_t(o)].dtype != DType::BF16)
      continue;
    // A result written in place of an operand shares that operand's copy.
    bool shared = false;
    for (int i = 0; i < call.numInputs && !shared; ++i)
      if (call.inputs[i].data == call.outputs[o].data &&
          call.inputs[i].dtype == DType::BF16) {
        outs[size_t(o)] = ins[size_t(i)];
        shared = true;
      }
    if (!shared)
      outs[size_t(o)] = take(outs[size_t(o)]);
  }
  KernelCall staged = call;
  staged.inputs = ins.data();
  staged.outputs = outs.data();
  DeviceContext inner = ctx;
  inner.scratch = next;
  inner.scratchBytes = ctx.scratchBytes - used;
  dispatch(staged, inner);
  for (int o = 0; o < call.numOutputs; ++o)
    if (call.outputs[o].dtype == DType::BF16)
      convert(outs[size_t(o)], call.outputs[o], ctx);
}

} // namespace remat::runtime::cuda

//===- ConvPoolGradTest.cpp - conv2d and pooling gradients ---------------===//
//
// conv2d_grad_input/_weight, max_pool2d_grad and avg_pool2d_grad against
// finite differences (GradCheck.h), oneDNN's convolutions against the
// im2col kernels, convolutions in several workspace blocks, and
// max_pool2d's ties.
//
//===----------------------------------------------------------------------===//
#include "BackendRun.h"
#include "GradCheck.h"

#include "ops/BFloat16.h"
#include "runtime/backends/cpu/CpuWorkspace.h"

#include "runtime/backends/cpu/DnnlConv.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

using namespace remat::runtime;
using namespace remat::runtime::test;

namespace {

/// conv2d attributes: strides, pads (top, left, bottom, right), dilations,
/// groups.
OpAttrs convAttrs(std::vector<int64_t> strides, std::vector<int64_t> pads,
                  std::vector<int64_t> dilations, uint64_t groups) {
  OpAttrs attrs;
  attrs.strides = std::move(strides);
  attrs.pads = std::move(pads);
  attrs.dilations = std::move(dilations);
  attrs.groups = groups;
  return attrs;
}

/// The conv2d output shape of x and w under attrs (the type rule).
Shape convOutputShape(const Shape &x, const Shape &w, const OpAttrs &attrs) {
  remat::ops::LabeledTypes ins;
  ins.types = {typeOf(x), typeOf(w)};
  return remat::ops::inferResultTypes(OpKind::Conv2d, attrs, ins, {})[0].shape;
}

double dot(const HostTensor &a, const HostTensor &b) {
  double s = 0;
  for (int64_t i = 0; i < a.size(); ++i)
    s += a.values[size_t(i)] * b.values[size_t(i)];
  return s;
}

/// One convolution's shapes and attributes, for the tests below.
struct ConvCase {
  const char *what;
  Shape x, w;
  OpAttrs attrs;
};

/// Strides, asymmetric pads, dilations, groups, depthwise and pointwise.
std::vector<ConvCase> convCases() {
  return {
      {"3x3, stride 1, pad 1",
       {2, 3, 5, 5},
       {4, 3, 3, 3},
       convAttrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1)},
      {"stride 2, asymmetric pads",
       {1, 2, 7, 6},
       {3, 2, 3, 2},
       convAttrs({2, 2}, {1, 0, 2, 1}, {1, 1}, 1)},
      {"dilation 2 and 1, stride 1x2",
       {2, 2, 7, 7},
       {2, 2, 2, 3},
       convAttrs({1, 2}, {1, 2, 0, 1}, {2, 1}, 1)},
      {"two groups",
       {2, 4, 5, 4},
       {6, 2, 3, 3},
       convAttrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 2)},
      {"depthwise, stride 2",
       {1, 3, 6, 6},
       {3, 1, 3, 3},
       convAttrs({2, 2}, {1, 1, 0, 0}, {1, 1}, 3)},
      {"pointwise (a plain gemm)",
       {2, 3, 4, 3},
       {5, 3, 1, 1},
       convAttrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 1)},
      {"1x1 with stride 2 and padding",
       {1, 3, 5, 4},
       {2, 3, 1, 1},
       convAttrs({2, 2}, {1, 0, 0, 1}, {1, 1}, 1)},
  };
}

/// convCases and, for bf16, a batch in chunks of 8 images (the weights
/// gradient summed in float32) and an image-like stem.
std::vector<ConvCase> bf16ConvCases() {
  std::vector<ConvCase> cases = convCases();
  cases.push_back({"16 images in 2 chunks",
                   {16, 16, 10, 10},
                   {16, 16, 3, 3},
                   convAttrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1)});
  cases.push_back({"7x7 stem on 3 channels, stride 2",
                   {6, 3, 20, 20},
                   {16, 3, 7, 7},
                   convAttrs({2, 2}, {3, 3, 3, 3}, {1, 1}, 1)});
  return cases;
}

} // namespace

TEST_CASE("conv2d_grad_input and conv2d_grad_weight match finite "
          "differences of conv2d",
          "[runtime]") {
  std::mt19937 rng(40);
  for (const ConvCase &c : convCases()) {
    INFO(c.what);
    Shape ys = convOutputShape(c.x, c.w, c.attrs);
    HostTensor x = randomTensor(c.x, rng), w = randomTensor(c.w, rng),
               dy = randomTensor(ys, rng);
    HostTensor dx = runOp<float>(OpKind::Conv2dGradInput, c.attrs, {w, dy},
                                 {typeOf(c.x)})[0];
    HostTensor dw = runOp<float>(OpKind::Conv2dGradWeight, c.attrs, {x, dy},
                                 {typeOf(c.w)})[0];
    checkAgainstFD(dx, OpKind::Conv2d, c.attrs, {x, w}, {typeOf(ys)}, {dy}, 0);
    checkAgainstFD(dw, OpKind::Conv2d, c.attrs, {x, w}, {typeOf(ys)}, {dy}, 1);
  }
}

TEST_CASE("conv2d and its gradients through oneDNN, on plain and blocked "
          "layouts, match the im2col kernels",
          "[runtime]") {
  if (!remat::runtime::cpu::dnnlConvEnabled()) {
    WARN("oneDNN is off or not built (" << remat::runtime::cpu::dnnlConvDescription()
                                        << "): nothing to compare");
    return;
  }
  std::mt19937 rng(43);
  std::vector<ConvCase> cases = convCases();
  // Several im2col workspace blocks, and oneDNN's scratchpad.
  cases.push_back({"64 channels at 56 x 56, 3x3",
                   {2, 64, 56, 56},
                   {8, 64, 3, 3},
                   convAttrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1)});
  // Blocked layouts: the batch in chunks (conv2d_grad_weight adds them),
  // and an image-like 3-channel input whose conv2d_grad_input stays plain.
  size_t firstBlocked = cases.size();
  cases.push_back({"blocked, 16 images in 2 chunks",
                   {16, 16, 10, 10},
                   {16, 16, 3, 3},
                   convAttrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1)});
  cases.push_back({"blocked, 12 images in 2 chunks, stride 2, asymmetric pads",
                   {12, 32, 9, 8},
                   {32, 32, 3, 3},
                   convAttrs({2, 2}, {1, 0, 2, 1}, {1, 1}, 1)});
  cases.push_back({"blocked 7x7 stem on 3 channels, 6 images in 1 chunk",
                   {6, 3, 20, 20},
                   {16, 3, 7, 7},
                   convAttrs({2, 2}, {3, 3, 3, 3}, {1, 1}, 1)});
  for (size_t i = 0; i < cases.size(); ++i) {
    const ConvCase &c = cases[i];
    INFO(c.what);
    Shape ys = convOutputShape(c.x, c.w, c.attrs);
    HostTensor x = randomTensor(c.x, rng), w = randomTensor(c.w, rng),
               dy = randomTensor(ys, rng);
    struct Run {
      OpKind op;
      std::vector<HostTensor> inputs;
      Shape result;
    };
    for (const Run &r : {Run{OpKind::Conv2d, {x, w}, ys},
                         Run{OpKind::Conv2dGradInput, {w, dy}, c.x},
                         Run{OpKind::Conv2dGradWeight, {x, dy}, c.w}}) {
      INFO(remat::ops::opName(r.op));
      std::vector<Shape> inputShapes = {r.inputs[0].shape, r.inputs[1].shape};
      // oneDNN runs every one of these, and the workspace runOp gives
      // holds what it needs (scratchpad and blocked copies).
      std::optional<remat::runtime::cpu::DnnlConvInfo> info =
          remat::runtime::cpu::dnnlConvInfo(r.op, c.attrs, inputShapes, {r.result});
      REQUIRE(info.has_value());
      // The cases meant for blocked layouts take them (in the expected
      // chunks), the rest run in place.
      int64_t chunks = 0;
      if (i >= firstBlocked &&
          !(r.op == OpKind::Conv2dGradInput && c.x[1] < 16))
        chunks = c.x[0] / (c.x[0] % 8 == 0 ? 8 : c.x[0] % 6 == 0 ? 6 : 1);
      CHECK(info->blockedChunks == chunks);
      HostTensor viaDnnl =
          runOp<float>(r.op, c.attrs, r.inputs, {typeOf(r.result)})[0];
      remat::runtime::cpu::setDnnlConvBlocked(false);
      HostTensor viaPlain =
          runOp<float>(r.op, c.attrs, r.inputs, {typeOf(r.result)})[0];
      remat::runtime::cpu::setDnnlConvBlocked(true);
      remat::runtime::cpu::setDnnlConvEnabled(false);
      HostTensor viaIm2col =
          runOp<float>(r.op, c.attrs, r.inputs, {typeOf(r.result)})[0];
      remat::runtime::cpu::setDnnlConvEnabled(true);
      CHECK(normalizedError(viaDnnl, viaIm2col) < 1e-6);
      CHECK(normalizedError(viaPlain, viaIm2col) < 1e-6);
    }
  }
}

TEST_CASE("conv2d in several workspace blocks matches a direct sum, and its "
          "gradients are its adjoints",
          "[runtime]") {
  // K = 64·3·3 = 576 rows leave room for 1820 of the 56·56 = 3136 output
  // positions in the workspace: two blocks.
  std::mt19937 rng(41);
  Shape xs = {2, 64, 56, 56}, ws = {3, 64, 3, 3};
  OpAttrs attrs = convAttrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1);
  Shape ys = convOutputShape(xs, ws, attrs);
  HostTensor x = randomTensor(xs, rng), w = randomTensor(ws, rng),
             dy = randomTensor(ys, rng);
  HostTensor y = runOp<float>(OpKind::Conv2d, attrs, {x, w}, {typeOf(ys)})[0];
  HostTensor direct = y;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t o = 0; o < 3; ++o)
      for (int64_t i = 0; i < 56; ++i)
        for (int64_t j = 0; j < 56; ++j) {
          double s = 0;
          for (int64_t c = 0; c < 64; ++c)
            for (int64_t a = 0; a < 3; ++a)
              for (int64_t b = 0; b < 3; ++b) {
                int64_t ih = i - 1 + a, iw = j - 1 + b;
                if (ih < 0 || ih >= 56 || iw < 0 || iw >= 56)
                  continue;
                s += x.values[size_t(((n * 64 + c) * 56 + ih) * 56 + iw)] *
                     w.values[size_t(((o * 64 + c) * 3 + a) * 3 + b)];
              }
          direct.values[size_t(((n * 3 + o) * 56 + i) * 56 + j)] = s;
        }
  CHECK(normalizedError(y, direct) < 1e-5);
  // <conv2d(x, w), dy> = <x, dx> = <w, dw>.
  HostTensor dx =
      runOp<float>(OpKind::Conv2dGradInput, attrs, {w, dy}, {typeOf(xs)})[0];
  HostTensor dw =
      runOp<float>(OpKind::Conv2dGradWeight, attrs, {x, dy}, {typeOf(ws)})[0];
  double forward = dot(direct, dy);
  CHECK(std::abs(dot(x, dx) - forward) < 1e-4 * std::abs(forward) + 1e-2);
  CHECK(std::abs(dot(w, dw) - forward) < 1e-4 * std::abs(forward) + 1e-2);
}

TEST_CASE("max_pool2d_grad and avg_pool2d_grad match finite differences of "
          "their pools",
          "[runtime]") {
  std::mt19937 rng(42);
  struct Case {
    const char *what;
    Shape x;
    std::vector<int64_t> kernel, strides, pads, dilations;
    bool ceil, countIncludePad;
  };
  std::vector<Case> cases = {
      {"3x3 stride 2 pad 1",
       {2, 2, 7, 7},
       {3, 3},
       {2, 2},
       {1, 1, 1, 1},
       {1, 1},
       false,
       false},
      {"ceil mode, asymmetric pads",
       {1, 3, 6, 7},
       {3, 2},
       {2, 2},
       {1, 0, 0, 1},
       {1, 1},
       true,
       false},
      {"count_include_pad, ceil mode",
       {1, 2, 5, 6},
       {3, 3},
       {2, 2},
       {1, 1, 1, 0},
       {1, 1},
       true,
       true},
      {"overlapping stride 1",
       {2, 1, 5, 5},
       {2, 3},
       {1, 1},
       {0, 1, 1, 1},
       {1, 1},
       false,
       true},
      {"dilation 2 (max only)",
       {1, 2, 8, 7},
       {2, 2},
       {1, 2},
       {1, 0, 0, 1},
       {2, 2},
       false,
       false},
  };
  for (const Case &c : cases)
    for (bool isMax : {true, false}) {
      if (!isMax && c.dilations != std::vector<int64_t>{1, 1})
        continue;
      INFO(c.what << (isMax ? ", max" : ", avg"));
      OpAttrs attrs;
      attrs.kernelShape = c.kernel;
      attrs.strides = c.strides;
      attrs.pads = c.pads;
      attrs.ceilMode = c.ceil;
      if (isMax)
        attrs.dilations = c.dilations;
      else
        attrs.countIncludePad = c.countIncludePad;
      OpKind forward = isMax ? OpKind::MaxPool2d : OpKind::AvgPool2d;
      remat::ops::LabeledTypes ins;
      ins.types = {typeOf(c.x)};
      Shape ys = remat::ops::inferResultTypes(forward, attrs, ins, {})[0].shape;
      HostTensor x = randomTensor(c.x, rng), dy = randomTensor(ys, rng);
      HostTensor dx = isMax ? runOp<float>(OpKind::MaxPool2dGrad, attrs,
                                           {x, dy}, {typeOf(c.x)})[0]
                            : runOp<float>(OpKind::AvgPool2dGrad, attrs, {dy},
                                           {typeOf(c.x)})[0];
      checkAgainstFD(dx, forward, attrs, {x}, {typeOf(ys)}, {dy}, 0);
    }
}

TEST_CASE("max_pool2d's gradient goes to the first maximum of a tie",
          "[runtime]") {
  OpAttrs attrs;
  attrs.kernelShape = {2, 2};
  attrs.strides = {2, 2};
  attrs.pads = {0, 0, 0, 0};
  attrs.dilations = {1, 1};
  HostTensor x = tensorOf({1, 1, 2, 2}, {1, 3, 3, 2});
  HostTensor dy = tensorOf({1, 1, 1, 1}, {5});
  HostTensor y =
      runOp<float>(OpKind::MaxPool2d, attrs, {x}, {typeOf({1, 1, 1, 1})})[0];
  HostTensor dx = runOp<float>(OpKind::MaxPool2dGrad, attrs, {x, dy},
                               {typeOf({1, 1, 2, 2})})[0];
  CHECK(y.values[0] == 3);
  CHECK(dx.values == std::vector<double>{0, 5, 0, 0});
}

TEST_CASE("max_pool2d and its gradient take the first maximum, or the first "
          "NaN, inside the plane and at its edges",
          "[runtime]") {
  // Small integers make ties common; 3x3 windows at stride 1 with padding
  // 1 are inside the plane (the kernels' fast path) except at its edges.
  std::mt19937 rng(44);
  Shape xs = {2, 3, 7, 6};
  HostTensor x = randomTensor(xs, rng, 0, 4);
  for (double &v : x.values)
    v = std::floor(v);
  x.values[2 * 6 + 3] = std::nan("");      // an inner window's
  x.values[42 + 0 * 6 + 0] = std::nan(""); // a corner's
  x.values[42 * 4 + 3 * 6 + 2] = std::nan("");
  x.values[42 * 4 + 3 * 6 + 4] = std::nan(""); // two in one window
  OpAttrs attrs;
  attrs.kernelShape = {3, 3};
  attrs.strides = {1, 1};
  attrs.pads = {1, 1, 1, 1};
  attrs.dilations = {1, 1};
  Shape ys = xs;
  HostTensor dy = randomTensor(ys, rng);
  HostTensor y = runOp<float>(OpKind::MaxPool2d, attrs, {x}, {typeOf(ys)})[0];
  HostTensor dx =
      runOp<float>(OpKind::MaxPool2dGrad, attrs, {x, dy}, {typeOf(xs)})[0];
  std::vector<double> wantDx(x.values.size(), 0.0);
  int64_t h = xs[2], w = xs[3];
  for (int64_t p = 0; p < xs[0] * xs[1]; ++p)
    for (int64_t oy = 0; oy < h; ++oy)
      for (int64_t ox = 0; ox < w; ++ox) {
        int64_t best = -1;
        for (int64_t iy = oy - 1; iy <= oy + 1; ++iy)
          for (int64_t ix = ox - 1; ix <= ox + 1; ++ix) {
            if (iy < 0 || iy >= h || ix < 0 || ix >= w)
              continue;
            int64_t at = p * h * w + iy * w + ix;
            bool bestNan = best >= 0 && std::isnan(x.values[best]);
            if (best < 0 || (!bestNan && (std::isnan(x.values[at]) ||
                                          x.values[at] > x.values[best])))
              best = at;
          }
        int64_t o = p * h * w + oy * w + ox;
        INFO("plane " << p << ", window (" << oy << ", " << ox << ")");
        if (std::isnan(x.values[best]))
          CHECK(std::isnan(y.values[o]));
        else
          CHECK(y.values[o] == x.values[best]);
        wantDx[best] += double(float(dy.values[o]));
      }
  for (size_t i = 0; i < wantDx.size(); ++i) {
    INFO("dx element " << i);
    CHECK(dx.values[i] == Approx(wantDx[i]).margin(1e-5));
  }
}

TEST_CASE("conv2d and its gradients on bf16 tensors, through oneDNN's bf16 "
          "kernels or on float copies, are within bf16's rounding of the "
          "result of the bf16 operands",
          "[runtime]") {
  std::mt19937 rng(47);
  // Values exactly bf16, as f32 (the reference's inputs) and as bf16.
  auto bf16Values = [&](const Shape &s) {
    return bf16Rounded(randomTensor(s, rng));
  };
  auto absolute = [](HostTensor t) {
    for (double &v : t.values)
      v = std::abs(v);
    return t;
  };
  std::vector<ConvCase> cases = bf16ConvCases();
  const double eps = std::numeric_limits<float>::epsilon();
  bool anyNative = false;
  for (bool dnnl : {true, false}) {
    remat::runtime::cpu::setDnnlConvEnabled(dnnl);
    for (const ConvCase &c : cases) {
      Shape ys = convOutputShape(c.x, c.w, c.attrs);
      HostTensor x = bf16Values(c.x), w = bf16Values(c.w), dy = bf16Values(ys);
      nlohmann::json attrs = {{"strides", c.attrs.strides},
                              {"pads", c.attrs.pads},
                              {"dilations", c.attrs.dilations},
                              {"groups", c.attrs.groups}};
      struct Run {
        OpKind op;
        HostTensor a, b;
        Shape result;
      };
      for (const Run &r : {Run{OpKind::Conv2d, x, w, ys},
                           Run{OpKind::Conv2dGradInput, w, dy, c.x},
                           Run{OpKind::Conv2dGradWeight, x, dy, c.w}}) {
        std::vector<remat::ops::TensorType> ins = {{DType::BF16, r.a.shape},
                                                   {DType::BF16, r.b.shape}},
                                            outs = {{DType::BF16, r.result}};
        bool native =
            remat::runtime::cpu::cpuBf16Staging(r.op, c.attrs, ins, outs)
                .kind == remat::runtime::cpu::Bf16Staging::Kind::Dnnl;
        anyNative |= native;
        INFO(c.what << ", " << remat::ops::opName(r.op) << ", oneDNN " << dnnl
                    << ", native " << native);
        // oneDNN runs them where it has bf16 kernels, only while it is on.
        if (!dnnl)
          CHECK_FALSE(native);
        HostTensor got = runOnBackend(*createCpuBackend(),
                                      {r.op,
                                       attrs,
                                       {asBf16(r.a), asBf16(r.b)},
                                       {typeOf(r.result, DType::BF16)}})[0];
        // The exact result in double, and the sum of the products'
        // magnitudes (the same op on |a| and |b|).
        HostTensor exact = runOp<double>(r.op, c.attrs, {r.a, r.b},
                                         {typeOf(r.result, DType::F64)})[0];
        HostTensor magnitude =
            runOp<double>(r.op, c.attrs, {absolute(r.a), absolute(r.b)},
                          {typeOf(r.result, DType::F64)})[0];
        // Terms summed into one result: a window (conv2d), the output
        // channels of a group at each tap (conv2d_grad_input), or every
        // output position of the batch (conv2d_grad_weight).
        int64_t terms = r.op == OpKind::Conv2d ? c.w[1] * c.w[2] * c.w[3]
                        : r.op == OpKind::Conv2dGradInput
                            ? c.w[0] / int64_t(c.attrs.groups) * c.w[2] * c.w[3]
                            : ys[0] * ys[2] * ys[3];
        double worst = 0;
        for (int64_t i = 0; i < got.size(); ++i) {
          double e = exact.values[size_t(i)];
          double bound = double(terms) * eps * magnitude.values[size_t(i)] +
                         std::ldexp(std::abs(e), -8) + 1e-30;
          worst = std::max(worst, std::abs(got.values[size_t(i)] - e) / bound);
        }
        CHECK(worst <= 1.0);
      }
    }
  }
  remat::runtime::cpu::setDnnlConvEnabled(true);
  if (!anyNative)
    WARN("no oneDNN bf16 convolution on this CPU (or build): only the "
         "float copies were checked");
}

TEST_CASE("a bf16 convolution reads float32 weights rounded to bf16 and "
          "gives its float32 weights gradient unrounded, through oneDNN or "
          "on float copies",
          "[runtime]") {
  std::mt19937 rng(53);
  std::vector<ConvCase> cases = bf16ConvCases();
  bool anyNative = false;
  for (bool dnnl : {true, false}) {
    remat::runtime::cpu::setDnnlConvEnabled(dnnl);
    for (const ConvCase &c : cases) {
      Shape ys = convOutputShape(c.x, c.w, c.attrs);
      // float32 weights with more bits than bf16 holds.
      HostTensor x = bf16Rounded(randomTensor(c.x, rng)),
                 w = randomTensor(c.w, rng),
                 dy = bf16Rounded(randomTensor(ys, rng));
      nlohmann::json attrs = {{"strides", c.attrs.strides},
                              {"pads", c.attrs.pads},
                              {"dilations", c.attrs.dilations},
                              {"groups", c.attrs.groups}};
      auto run = [&](OpKind op, const HostTensor &a, const HostTensor &b,
                     const TensorType &result) {
        return runOnBackend(*createCpuBackend(), {op, attrs, {a, b}, {result}})
            .at(0);
      };
      auto native = [&](OpKind op, DType a, DType b, DType result,
                        const Shape &as, const Shape &bs, const Shape &rs) {
        return remat::runtime::cpu::cpuBf16Staging(
                   op, c.attrs, {{a, as}, {b, bs}}, {{result, rs}})
                   .kind == remat::runtime::cpu::Bf16Staging::Kind::Dnnl;
      };
      INFO(c.what << ", oneDNN " << dnnl);
      const DType B = DType::BF16, F = DType::F32;
      // conv2d and conv2d_grad_input: float32 weights give the bits of
      // their bf16 copy, on the same path.
      HostTensor y = run(OpKind::Conv2d, asBf16(x), w, typeOf(ys, B));
      CHECK(y.values == run(OpKind::Conv2d, asBf16(x), asBf16(bf16Rounded(w)),
                            typeOf(ys, B))
                            .values);
      CHECK(native(OpKind::Conv2d, B, F, B, c.x, c.w, ys) ==
            native(OpKind::Conv2d, B, B, B, c.x, c.w, ys));
      HostTensor dx =
          run(OpKind::Conv2dGradInput, w, asBf16(dy), typeOf(c.x, B));
      CHECK(dx.values == run(OpKind::Conv2dGradInput, asBf16(bf16Rounded(w)),
                             asBf16(dy), typeOf(c.x, B))
                             .values);
      CHECK(native(OpKind::Conv2dGradInput, F, B, B, c.w, ys, c.x) ==
            native(OpKind::Conv2dGradInput, B, B, B, c.w, ys, c.x));
      // conv2d_grad_weight: the float32 sum the bf16 result is rounded from.
      bool nativeWide = native(OpKind::Conv2dGradWeight, B, B, F, c.x, ys, c.w);
      anyNative |= nativeWide;
      if (!dnnl)
        CHECK_FALSE(nativeWide);
      CHECK(nativeWide ==
            native(OpKind::Conv2dGradWeight, B, B, B, c.x, ys, c.w));
      HostTensor dw =
          run(OpKind::Conv2dGradWeight, asBf16(x), asBf16(dy), typeOf(c.w, F));
      HostTensor dwBf16 =
          run(OpKind::Conv2dGradWeight, asBf16(x), asBf16(dy), typeOf(c.w, B));
      CHECK(bf16Rounded(dw).values == dwBf16.values);
      // Unrounded: some of the float32 sums are not bf16 values.
      CHECK(dw.values != bf16Rounded(dw).values);
    }
  }
  remat::runtime::cpu::setDnnlConvEnabled(true);
  if (!anyNative)
    WARN("no oneDNN bf16 convolution on this CPU (or build): only the "
         "float copies were checked");
}

//===- DnnlConv.cpp - conv2d and its gradients through oneDNN -------------===//
//
// One oneDNN primitive descriptor per (op, shapes, attributes), made on
// first use and kept for the process: the compiler asks only for its
// scratchpad size, the runtime also makes the primitive (oneDNN's JIT code)
// on its first run. Each descriptor uses a user-provided scratchpad, so
// oneDNN allocates nothing per call, and convolution_direct on plain
// layouts, so the arena's buffers are used in place.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/DnnlConv.h"

#include "runtime/backends/cpu/CpuWorkspace.h"
#include "runtime/backends/cpu/EnvChoice.h"

#include <atomic>

#ifdef REMAT_HAVE_DNNL
#include <dnnl.hpp>

#include <array>
#include <climits>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#endif

namespace remat::runtime::cpu {

namespace {

// 0: im2col, 1: oneDNN on plain layouts only, 2: oneDNN, blocked layouts
// where chooseBlocked says; -1: not yet read from REMAT_CPU_CONV.
std::atomic<int> &modeFlag() {
  static std::atomic<int> flag{-1};
  return flag;
}

int mode() {
  int flag = modeFlag();
  if (flag < 0) {
    std::string value =
        envChoice("REMAT_CPU_CONV", {"auto", "im2col", "plain"});
    flag = value == "im2col" ? 0 : value == "plain" ? 1 : 2;
    modeFlag() = flag;
  }
  return flag;
}

} // namespace

std::optional<ConvTypes> bf16ConvTypes(OpKind op, ops::DType in0,
                                       ops::DType in1, ops::DType out) {
  using ops::DType;
  // The weights: conv2d's second operand, the input gradient's first, the
  // weights gradient's result; the other two are activations.
  DType activations[2], weights;
  switch (op) {
  case OpKind::Conv2d:
    activations[0] = in0, activations[1] = out, weights = in1;
    break;
  case OpKind::Conv2dGradInput:
    activations[0] = in1, activations[1] = out, weights = in0;
    break;
  case OpKind::Conv2dGradWeight:
    activations[0] = in0, activations[1] = in1, weights = out;
    break;
  default:
    return std::nullopt;
  }
  if (activations[0] != DType::BF16 || activations[1] != DType::BF16)
    return std::nullopt;
  if (weights == DType::BF16)
    return ConvTypes::Bf16;
  if (weights == DType::F32)
    return ConvTypes::Bf16FloatWeights;
  return std::nullopt;
}

void setDnnlConvEnabled(bool on) { modeFlag() = on ? 2 : 0; }

void setDnnlConvBlocked(bool on) {
  if (mode() != 0)
    modeFlag() = on ? 2 : 1;
}

#ifndef REMAT_HAVE_DNNL

bool dnnlConvEnabled() { return false; }

std::string dnnlConvDescription() {
  return "none (built without oneDNN: libdnnl-dev not found)";
}

std::optional<DnnlConvInfo> dnnlConvInfo(OpKind, const OpAttrs &,
                                         const std::vector<Shape> &,
                                         const std::vector<Shape> &,
                                         ConvTypes) {
  return std::nullopt;
}

bool dnnlConvRun(OpKind, const OpAttrs &, const std::vector<Shape> &,
                 const std::vector<Shape> &, const void *, const void *, void *,
                 void *, uint64_t, ConvTypes) {
  return false;
}

#else

bool dnnlConvEnabled() { return mode() != 0; }

std::string dnnlConvDescription() {
  const dnnl_version_t *v = dnnl_version();
  std::string runtime = v->cpu_runtime == DNNL_RUNTIME_OMP   ? "OpenMP"
                        : v->cpu_runtime == DNNL_RUNTIME_SEQ ? "sequential"
                                                             : "threads";
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) +
         "." + std::to_string(v->patch) + " (cpu runtime: " + runtime + ")" +
         (mode() == 0   ? ", off (REMAT_CPU_CONV=im2col)"
          : mode() == 1 ? ", plain layouts only (REMAT_CPU_CONV=plain)"
                        : "");
}

namespace {

using dnnl::memory;

/// Bytes rounded up to a cache line, for the workspace's parts.
uint64_t lineUp(uint64_t bytes) { return (bytes + 63) / 64 * 64; }

/// One operand's layout: the plain one of remat's buffer (for a blocked
/// entry, one chunk of the batch; weights whole) and the one the primitive
/// wants, with a reorder between them and room for it in the workspace
/// where the two differ.
struct Operand {
  memory::desc plain, used;
  uint64_t offset = 0; // in the workspace, when the operand goes through it
  bool reordered() const { return plain != used; }
};

/// One convolution's descriptor, primitive (made on its first run), its
/// three operands, and how it runs: on remat's buffers in place (plain),
/// or (blocked) `chunks` pieces of the batch, each reordered into oneDNN's
/// blocked layouts in the workspace, the weights reordered once and
/// the weights gradient's pieces summed in chunk order. On bf16 operands
/// the weights gradient is computed in float32; into bf16 weights it is
/// rounded once, its chunks summed in a float32 copy (`wideSum`) first.
/// float32 weights of bf16 activations always go through the workspace
/// (their reorder rounds them to bf16).
struct Entry {
  bool usable = false, blocked = false;
  int64_t chunks = 1;
  uint64_t scratchpadBytes = 0, workspaceBytes = 0;
  dnnl::primitive_desc pd;
  std::unique_ptr<dnnl::primitive> primitive;
  Operand x, w, y;
  /// The float32 sum of a bf16 weights gradient's chunks, in the workspace
  /// at `offset` (plain: its layout; used: remat's bf16 buffer's).
  Operand wideSum;
  /// Made on first use: the reorders of dnnlConvRun's operand i into the
  /// primitive's layout, of its result back (backSum: summed into it), and
  /// of the float32 sum into the result.
  std::optional<dnnl::reorder> into[2], back, backSum, fromWide;
};

struct Cache {
  std::mutex mutex;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::map<std::vector<int64_t>, Entry> entries;
};

Cache &cache() {
  static Cache c;
  return c;
}

bool isConv(OpKind op) {
  return op == OpKind::Conv2d || op == OpKind::Conv2dGradInput ||
         op == OpKind::Conv2dGradWeight;
}

/// Whether this convolution runs on blocked layouts: spatial kernels
/// (3x3, 7x7, ...) without groups and with at least 16 output channels,
/// where oneDNN's direct JIT kernels beat its GEMM on nchw even with the
/// reorders (resnet50 at batch 32: `remat profile` puts its convolutions
/// at 2.7-3.4 s a step, against 3.9-4.0 s all on nchw; benchmarks.md).
/// The input gradient also needs 16 input channels: with 3 (an image) the
/// blocked layout pads them to 16 and runs slower. A rule on shapes only, so
/// that the kernel, and every bit it computes, never depends on the budget.
/// On bf16 operands every ungrouped convolution runs blocked: oneDNN's
/// bf16 kernels (AMX, avx512_bf16) take only blocked or channels-last
/// layouts, and on nchw it falls back to a GEMM several times slower.
bool chooseBlocked(OpKind op, const OpAttrs &attrs, const ConvShapes &s,
                   ConvTypes types) {
  if (mode() != 2 || attrs.groups != 1)
    return false;
  return types != ConvTypes::F32 ||
         (s.w[2] * s.w[3] > 1 && s.w[0] >= 16 &&
          (op != OpKind::Conv2dGradInput || s.w[1] >= 16));
}

/// The batch's pieces for a blocked convolution: the largest divisor of
/// the batch that is at most 8 images per piece, so the reordered copies
/// stay small.
int64_t chunksOf(int64_t batch) {
  int64_t per = std::min<int64_t>(batch, 8);
  while (batch % per != 0)
    --per;
  return batch / per;
}

/// Makes the entry's descriptor: blocked (layouts of oneDNN's choice) or
/// plain (remat's, used in place); leaves it unusable when oneDNN refuses.
void describe(Entry &e, dnnl::engine &engine, OpKind op, const OpAttrs &attrs,
              const ConvShapes &s, bool blocked, ConvTypes types) {
  int64_t groups = int64_t(attrs.groups);
  if (s.x.size() != 4 || s.w.size() != 4 || s.y.size() != 4 || groups < 1 ||
      attrs.strides.size() != 2 || attrs.pads.size() != 4 ||
      attrs.dilations.size() != 2)
    return;
  // oneDNN's kernels index in 32 bits (DnnlMatmul.cpp).
  for (const Shape *shape : {&s.x, &s.w, &s.y})
    for (int64_t d : *shape)
      if (d <= 0 || d > INT32_MAX)
        return;
  e.blocked = blocked;
  e.chunks = blocked ? chunksOf(s.x[0]) : 1;
  auto f32 = memory::data_type::f32;
  auto type = types == ConvTypes::F32 ? f32 : memory::data_type::bf16;
  // The type of remat's weights buffer (or their gradient's).
  auto wBuffer = types == ConvTypes::Bf16 ? type : f32;
  // The weights gradient of bf16 activations is computed in float32 (into
  // bf16 weights rounded once, below).
  bool wideWeights = types != ConvTypes::F32 && op == OpKind::Conv2dGradWeight;
  auto wType = wideWeights ? f32 : type;
  auto any = memory::format_tag::any;
  Shape xs = s.x, ys = s.y;
  xs[0] = ys[0] = s.x[0] / e.chunks;
  memory::dims ws = s.w;
  memory::format_tag wTag = memory::format_tag::oihw;
  if (groups > 1) {
    ws = {groups, s.w[0] / groups, s.w[1], s.w[2], s.w[3]};
    wTag = memory::format_tag::goihw;
  }
  e.x.plain = memory::desc(xs, type, memory::format_tag::nchw);
  e.y.plain = memory::desc(ys, type, memory::format_tag::nchw);
  e.w.plain = memory::desc(ws, wBuffer, wTag);
  memory::desc x = blocked ? memory::desc(xs, type, any) : e.x.plain,
               y = blocked ? memory::desc(ys, type, any) : e.y.plain,
               w = memory::desc(ws, type, blocked ? any : wTag),
               dw = memory::desc(ws, wType, blocked ? any : wTag);
  memory::dims strides = attrs.strides;
  memory::dims gaps; // oneDNN counts the gaps between taps: ONNX's minus 1
  for (int64_t d : attrs.dilations)
    gaps.push_back(d - 1);
  memory::dims padL = {attrs.pads[0], attrs.pads[1]},
               padR = {attrs.pads[2], attrs.pads[3]};
  dnnl::primitive_attr pattr;
  pattr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  auto direct = dnnl::algorithm::convolution_direct;
  try {
    dnnl::convolution_forward::primitive_desc forward(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                        direct, x, w, y, strides, gaps, padL,
                                        padR),
        pattr, engine);
    if (op == OpKind::Conv2d)
      e.pd = forward;
    else if (op == OpKind::Conv2dGradInput)
      e.pd = dnnl::convolution_backward_data::primitive_desc(
          dnnl::convolution_backward_data::desc(direct, x, w, y, strides, gaps,
                                                padL, padR),
          pattr, engine, forward);
    else
      e.pd = dnnl::convolution_backward_weights::primitive_desc(
          dnnl::convolution_backward_weights::desc(direct, x, dw, y, strides,
                                                   gaps, padL, padR),
          pattr, engine, forward);
  } catch (const dnnl::error &) {
    return;
  }
  e.x.used =
      op == OpKind::Conv2dGradInput ? e.pd.diff_src_desc() : e.pd.src_desc();
  e.w.used = op == OpKind::Conv2dGradWeight ? e.pd.diff_weights_desc()
                                            : e.pd.weights_desc();
  e.y.used = op == OpKind::Conv2d ? e.pd.dst_desc() : e.pd.diff_dst_desc();
  // oneDNN's reference kernels are far slower than remat's own.
  if (std::string(e.pd.impl_info_str()).rfind("ref", 0) == 0)
    return;
  e.scratchpadBytes = e.pd.scratchpad_desc().get_size();
  uint64_t end = lineUp(e.scratchpadBytes);
  for (Operand *o : {&e.x, &e.w, &e.y}) {
    // Plain layouts were asked for and would be reordered (float32
    // weights of bf16 activations, and a weights gradient summed in
    // float32 into bf16 weights, are converted, not reordered).
    if (!blocked && o->reordered() &&
        !(o == &e.w && (wideWeights || wBuffer != type)))
      return;
    // The weights gradient's pieces are summed into the result, so in
    // chunks it always goes through the workspace.
    if (o->reordered() ||
        (o == &e.w && op == OpKind::Conv2dGradWeight && e.chunks > 1)) {
      o->offset = end;
      end += lineUp(o->used.get_size());
    }
  }
  if (wideWeights && wBuffer != f32 && e.chunks > 1) {
    e.wideSum.plain = memory::desc(ws, f32, wTag);
    e.wideSum.used = e.w.plain;
    e.wideSum.offset = end;
    end += lineUp(e.wideSum.plain.get_size());
  }
  e.workspaceBytes = end;
  e.usable = true;
}

/// The entry for this convolution, described on first use; null when
/// oneDNN does not run it. The cache's mutex must be held.
Entry *lookup(Cache &c, OpKind op, const OpAttrs &attrs,
              const std::vector<Shape> &inputs,
              const std::vector<Shape> &outputs, ConvTypes types) {
  if (!dnnlConvEnabled() || !isConv(op) || inputs.size() != 2 ||
      outputs.size() != 1)
    return nullptr;
  ConvShapes s(op, inputs, outputs);
  bool blocked = s.w.size() == 4 && chooseBlocked(op, attrs, s, types);
  std::vector<int64_t> key = {int64_t(op), int64_t(attrs.groups),
                              int64_t(blocked), int64_t(types)};
  for (const std::vector<int64_t> *part :
       std::initializer_list<const std::vector<int64_t> *>{
           &s.x, &s.w, &s.y, &attrs.strides, &attrs.pads, &attrs.dilations}) {
    key.push_back(int64_t(part->size()));
    key.insert(key.end(), part->begin(), part->end());
  }
  auto [it, inserted] = c.entries.try_emplace(std::move(key));
  if (inserted) {
    describe(it->second, c.engine, op, attrs, s, blocked, types);
    // A blocked descriptor oneDNN refuses falls back to plain layouts.
    if (!it->second.usable && blocked) {
      it->second = Entry();
      describe(it->second, c.engine, op, attrs, s, false, types);
    }
  }
  return it->second.usable ? &it->second : nullptr;
}

} // namespace

std::optional<DnnlConvInfo> dnnlConvInfo(OpKind op, const OpAttrs &attrs,
                                         const std::vector<Shape> &inputs,
                                         const std::vector<Shape> &outputs,
                                         ConvTypes types) {
  Cache &c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  Entry *e = lookup(c, op, attrs, inputs, outputs, types);
  if (!e)
    return std::nullopt;
  return DnnlConvInfo{e->workspaceBytes, e->blocked ? e->chunks : 0};
}

bool dnnlConvRun(OpKind op, const OpAttrs &attrs,
                 const std::vector<Shape> &inputs,
                 const std::vector<Shape> &outputs, const void *in0,
                 const void *in1, void *out, void *scratch,
                 uint64_t scratchBytes, ConvTypes types) {
  Cache &c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  Entry *e = lookup(c, op, attrs, inputs, outputs, types);
  if (!e || e->workspaceBytes > scratchBytes)
    return false;
  if (!e->primitive)
    e->primitive = std::make_unique<dnnl::primitive>(e->pd);
  // The op's two operands and its result: the operand, oneDNN's argument,
  // remat's buffer, and whether the buffer is split into the batch's
  // chunks (activations) or whole (weights).
  struct Role {
    Operand *operand;
    int arg;
    void *data;
    bool chunked;
  };
  auto mut = [](const void *p) { return const_cast<void *>(p); };
  std::array<Role, 3> roles;
  if (op == OpKind::Conv2d)
    roles = {Role{&e->x, DNNL_ARG_SRC, mut(in0), true},
             Role{&e->w, DNNL_ARG_WEIGHTS, mut(in1), false},
             Role{&e->y, DNNL_ARG_DST, out, true}};
  else if (op == OpKind::Conv2dGradInput)
    roles = {Role{&e->w, DNNL_ARG_WEIGHTS, mut(in0), false},
             Role{&e->y, DNNL_ARG_DIFF_DST, mut(in1), true},
             Role{&e->x, DNNL_ARG_DIFF_SRC, out, true}};
  else
    roles = {Role{&e->x, DNNL_ARG_SRC, mut(in0), true},
             Role{&e->y, DNNL_ARG_DIFF_DST, mut(in1), true},
             Role{&e->w, DNNL_ARG_DIFF_WEIGHTS, out, false}};
  auto reorder = [&](std::optional<dnnl::reorder> &r, const memory::desc &from,
                     const memory::desc &to,
                     bool accumulate) -> dnnl::reorder & {
    if (!r) {
      dnnl::primitive_attr attr;
      if (accumulate) {
        dnnl::post_ops sum;
        sum.append_sum(1.0f);
        attr.set_post_ops(sum);
      }
      r.emplace(
          dnnl::reorder::primitive_desc(c.engine, from, c.engine, to, attr));
    }
    return *r;
  };
  char *workspace = static_cast<char *>(scratch);
  memory scratchpad(e->pd.scratchpad_desc(), c.engine,
                    e->scratchpadBytes ? workspace : nullptr);
  for (int64_t chunk = 0; chunk < e->chunks; ++chunk) {
    std::unordered_map<int, memory> args = {{DNNL_ARG_SCRATCHPAD, scratchpad}};
    memory result, resultPlain;
    for (size_t i = 0; i < roles.size(); ++i) {
      const Role &r = roles[i];
      Operand &o = *r.operand;
      // remat's buffer (this chunk of it) in place, or its copy in the
      // workspace in the primitive's layout.
      char *base = static_cast<char *>(r.data) +
                   (r.chunked ? chunk * int64_t(o.plain.get_size()) : 0);
      memory plain(o.plain, c.engine, base);
      bool isResult = i == 2;
      bool viaWorkspace =
          o.reordered() || (isResult && !r.chunked && e->chunks > 1);
      if (!viaWorkspace) {
        args.emplace(r.arg, plain);
        continue;
      }
      memory used(o.used, c.engine, workspace + o.offset);
      if (isResult) {
        result = used;
        resultPlain = plain;
      } else if (r.chunked || chunk == 0) { // weights once
        reorder(e->into[i], o.plain, o.used, false)
            .execute(c.stream, plain, used);
      }
      args.emplace(r.arg, used);
    }
    e->primitive->execute(c.stream, args);
    if (result) {
      // A chunk's result back into remat's buffer, or into the float32 sum
      // of a bf16 weights gradient; the weights gradient's later chunks are
      // summed with what the earlier ones left.
      bool accumulate = !roles[2].chunked && chunk > 0;
      memory target = !e->wideSum.plain.is_zero()
                          ? memory(e->wideSum.plain, c.engine,
                                   workspace + e->wideSum.offset)
                          : resultPlain;
      reorder(accumulate ? e->backSum : e->back, result.get_desc(),
              target.get_desc(), accumulate)
          .execute(c.stream, result, target);
    }
  }
  if (!e->wideSum.plain.is_zero()) {
    memory sum(e->wideSum.plain, c.engine, workspace + e->wideSum.offset),
        plain(e->wideSum.used, c.engine, out);
    reorder(e->fromWide, e->wideSum.plain, e->wideSum.used, false)
        .execute(c.stream, sum, plain);
  }
  c.stream.wait();
  return true;
}

#endif // REMAT_HAVE_DNNL

} // namespace remat::runtime::cpu

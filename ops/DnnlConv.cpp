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
#include "ops/DnnlConv.h"

#include "ops/CpuWorkspace.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#ifdef REMAT_HAVE_DNNL
#include <dnnl.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#endif

namespace remat::ops {

namespace {

std::atomic<int> &enabledFlag() {
  // -1: not yet read from the environment.
  static std::atomic<int> flag{-1};
  return flag;
}

} // namespace

void setDnnlConvEnabled(bool on) { enabledFlag() = on ? 1 : 0; }

#ifndef REMAT_HAVE_DNNL

bool dnnlConvEnabled() { return false; }

std::string dnnlConvDescription() {
  return "none (built without oneDNN: libdnnl-dev not found)";
}

std::optional<uint64_t> dnnlConvScratchBytes(OpKind, const OpAttrs &,
                                             const std::vector<Shape> &,
                                             const std::vector<Shape> &) {
  return std::nullopt;
}

bool dnnlConvRun(OpKind, const OpAttrs &, const std::vector<Shape> &,
                 const std::vector<Shape> &, const float *, const float *,
                 float *, void *, uint64_t) {
  return false;
}

#else

bool dnnlConvEnabled() {
  int flag = enabledFlag();
  if (flag < 0) {
    const char *choice = std::getenv("REMAT_CPU_CONV");
    flag = choice && std::strcmp(choice, "im2col") == 0 ? 0 : 1;
    enabledFlag() = flag;
  }
  return flag == 1;
}

std::string dnnlConvDescription() {
  const dnnl_version_t *v = dnnl_version();
  std::string runtime = v->cpu_runtime == DNNL_RUNTIME_OMP   ? "OpenMP"
                        : v->cpu_runtime == DNNL_RUNTIME_SEQ ? "sequential"
                                                             : "threads";
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) +
         "." + std::to_string(v->patch) + " (cpu runtime: " + runtime + ")" +
         (dnnlConvEnabled() ? "" : ", off (REMAT_CPU_CONV=im2col)");
}

namespace {

using dnnl::memory;

/// One convolution's descriptor, primitive (made on its first run) and the
/// layouts of its three operands.
struct Entry {
  bool usable = false;
  uint64_t scratchBytes = 0;
  dnnl::primitive_desc pd;
  std::unique_ptr<dnnl::primitive> primitive;
  memory::desc x, w, y;
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

/// Makes the entry's descriptor; leaves it unusable when oneDNN refuses.
void describe(Entry &e, dnnl::engine &engine, OpKind op, const OpAttrs &attrs,
              const ConvShapes &s) {
  int64_t groups = int64_t(attrs.groups);
  if (s.x.size() != 4 || s.w.size() != 4 || s.y.size() != 4 || groups < 1 ||
      attrs.strides.size() != 2 || attrs.pads.size() != 4 ||
      attrs.dilations.size() != 2)
    return;
  for (const Shape *shape : {&s.x, &s.w, &s.y})
    for (int64_t d : *shape)
      if (d <= 0)
        return;
  auto f32 = memory::data_type::f32;
  e.x = memory::desc(s.x, f32, memory::format_tag::nchw);
  e.y = memory::desc(s.y, f32, memory::format_tag::nchw);
  if (groups > 1)
    e.w = memory::desc({groups, s.w[0] / groups, s.w[1], s.w[2], s.w[3]}, f32,
                       memory::format_tag::goihw);
  else
    e.w = memory::desc(s.w, f32, memory::format_tag::oihw);
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
                                        direct, e.x, e.w, e.y, strides, gaps,
                                        padL, padR),
        pattr, engine);
    if (op == OpKind::Conv2d)
      e.pd = forward;
    else if (op == OpKind::Conv2dGradInput)
      e.pd = dnnl::convolution_backward_data::primitive_desc(
          dnnl::convolution_backward_data::desc(direct, e.x, e.w, e.y, strides,
                                                gaps, padL, padR),
          pattr, engine, forward);
    else
      e.pd = dnnl::convolution_backward_weights::primitive_desc(
          dnnl::convolution_backward_weights::desc(direct, e.x, e.w, e.y,
                                                   strides, gaps, padL, padR),
          pattr, engine, forward);
  } catch (const dnnl::error &) {
    return;
  }
  // Plain layouts were asked for; a descriptor that would reorder them is
  // not used.
  const memory::desc &x = op == OpKind::Conv2dGradInput ? e.pd.diff_src_desc()
                                                        : e.pd.src_desc();
  const memory::desc &w = op == OpKind::Conv2dGradWeight
                              ? e.pd.diff_weights_desc()
                              : e.pd.weights_desc();
  const memory::desc &y =
      op == OpKind::Conv2d ? e.pd.dst_desc() : e.pd.diff_dst_desc();
  if (x != e.x || w != e.w || y != e.y)
    return;
  e.scratchBytes = e.pd.scratchpad_desc().get_size();
  e.usable = true;
}

/// The entry for this convolution, described on first use; null when
/// oneDNN does not run it. The cache's mutex must be held.
Entry *lookup(Cache &c, OpKind op, const OpAttrs &attrs,
              const std::vector<Shape> &inputs,
              const std::vector<Shape> &outputs) {
  if (!dnnlConvEnabled() || !isConv(op) || inputs.size() != 2 ||
      outputs.size() != 1)
    return nullptr;
  ConvShapes s(op, inputs, outputs);
  std::vector<int64_t> key = {int64_t(op), int64_t(attrs.groups)};
  for (const std::vector<int64_t> *part :
       std::initializer_list<const std::vector<int64_t> *>{
           &s.x, &s.w, &s.y, &attrs.strides, &attrs.pads, &attrs.dilations}) {
    key.push_back(int64_t(part->size()));
    key.insert(key.end(), part->begin(), part->end());
  }
  auto [it, inserted] = c.entries.try_emplace(std::move(key));
  if (inserted)
    describe(it->second, c.engine, op, attrs, s);
  return it->second.usable ? &it->second : nullptr;
}

} // namespace

std::optional<uint64_t>
dnnlConvScratchBytes(OpKind op, const OpAttrs &attrs,
                     const std::vector<Shape> &inputs,
                     const std::vector<Shape> &outputs) {
  Cache &c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  Entry *e = lookup(c, op, attrs, inputs, outputs);
  if (!e)
    return std::nullopt;
  return e->scratchBytes;
}

bool dnnlConvRun(OpKind op, const OpAttrs &attrs,
                 const std::vector<Shape> &inputs,
                 const std::vector<Shape> &outputs, const float *in0,
                 const float *in1, float *out, void *scratch,
                 uint64_t scratchBytes) {
  Cache &c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  Entry *e = lookup(c, op, attrs, inputs, outputs);
  if (!e || e->scratchBytes > scratchBytes)
    return false;
  if (!e->primitive)
    e->primitive = std::make_unique<dnnl::primitive>(e->pd);
  // The arena's buffers as oneDNN memory (no copies).
  auto wrap = [&](const memory::desc &md, const float *data) {
    return memory(md, c.engine, const_cast<float *>(data));
  };
  memory scratchpad(e->pd.scratchpad_desc(), c.engine,
                    e->scratchBytes ? scratch : nullptr);
  std::unordered_map<int, memory> args = {{DNNL_ARG_SCRATCHPAD, scratchpad}};
  if (op == OpKind::Conv2d) {
    args.emplace(DNNL_ARG_SRC, wrap(e->x, in0));
    args.emplace(DNNL_ARG_WEIGHTS, wrap(e->w, in1));
    args.emplace(DNNL_ARG_DST, wrap(e->y, out));
  } else if (op == OpKind::Conv2dGradInput) {
    args.emplace(DNNL_ARG_WEIGHTS, wrap(e->w, in0));
    args.emplace(DNNL_ARG_DIFF_DST, wrap(e->y, in1));
    args.emplace(DNNL_ARG_DIFF_SRC, wrap(e->x, out));
  } else {
    args.emplace(DNNL_ARG_SRC, wrap(e->x, in0));
    args.emplace(DNNL_ARG_DIFF_DST, wrap(e->y, in1));
    args.emplace(DNNL_ARG_DIFF_WEIGHTS, wrap(e->w, out));
  }
  e->primitive->execute(c.stream, args);
  c.stream.wait();
  return true;
}

#endif // REMAT_HAVE_DNNL

} // namespace remat::ops

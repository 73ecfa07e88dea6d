//===- dnnl_conv_bench.cpp - oneDNN's convolutions on a plan's shapes -----===//
//
// remat-dnnl-conv-bench PLAN [plain|any]: times oneDNN (Debian's libdnnl,
// 2.x) on every first-computed conv2d of PLAN (a remat plan file): forward,
// backward data and backward weights, each the fastest of 2 runs after one
// warm-up, summed over the plan's convolutions. `plain` (default) keeps
// remat's layouts (nchw activations, oihw weights: no reorders), `any` lets
// oneDNN pick its blocked layouts (the reorders to and from them are not
// timed). It prints the sums, the largest scratchpad one convolution needs
// and the implementations used, to compare with `remat profile PLAN`'s
// rows of the convolution and its two gradients (docs/benchmarks.md).
// Groups, strides, pads and dilations are the plan's.
//
//===----------------------------------------------------------------------===//
#include <dnnl.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <unordered_map>

namespace {

using dnnl::memory;

double seconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2 || std::string(argv[1]) == "--help") {
    std::printf("usage: remat-dnnl-conv-bench PLAN [plain|any]\n"
                "Times oneDNN's convolutions on the conv2d shapes of a remat "
                "plan (see the source's header).\n");
    return argc < 2 ? 2 : 0;
  }
  bool blocked = argc > 2 && std::string(argv[2]) == "any";
  std::ifstream in(argv[1]);
  if (!in) {
    std::fprintf(stderr, "remat-dnnl-conv-bench: cannot read '%s'\n", argv[1]);
    return 1;
  }
  nlohmann::json plan = nlohmann::json::parse(in);
  const auto &buffers = plan.at("buffers");
  auto shapeOf = [&](const nlohmann::json &step, const char *side, int i) {
    return buffers.at(step.at(side).at(i).get<size_t>())
        .at("shape")
        .get<memory::dims>();
  };
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  auto act = blocked ? memory::format_tag::any : memory::format_tag::nchw;
  double total[3] = {0, 0, 0};
  size_t largestScratch = 0, convs = 0;
  std::map<std::string, int> impls;
  for (const auto &step : plan.at("steps")) {
    if (step.at("op") != "conv2d" || step.value("recompute", false))
      continue;
    memory::dims xd = shapeOf(step, "inputs", 0), wd = shapeOf(step, "inputs", 1),
                 yd = shapeOf(step, "outputs", 0);
    const auto &attrs = step.at("attrs");
    auto pads = attrs.at("pads").get<memory::dims>();
    auto strides = attrs.at("strides").get<memory::dims>();
    memory::dims dilations;
    for (auto d : attrs.at("dilations").get<memory::dims>())
      dilations.push_back(d - 1); // oneDNN counts the gaps
    int64_t groups = attrs.value("groups", 1);
    memory::desc wmd;
    if (groups > 1) {
      memory::dims gwd = {groups, wd[0] / groups, wd[1], wd[2], wd[3]};
      wmd = memory::desc(gwd, memory::data_type::f32,
                         blocked ? memory::format_tag::any
                                 : memory::format_tag::goihw);
    } else {
      wmd = memory::desc(wd, memory::data_type::f32,
                         blocked ? memory::format_tag::any
                                 : memory::format_tag::oihw);
    }
    memory::desc xmd(xd, memory::data_type::f32, act),
        ymd(yd, memory::data_type::f32, act);
    memory::dims padL = {pads[0], pads[1]}, padR = {pads[2], pads[3]};
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    auto algorithm = dnnl::algorithm::convolution_direct;
    dnnl::convolution_forward::primitive_desc fwd(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                        algorithm, xmd, wmd, ymd, strides,
                                        dilations, padL, padR),
        attr, engine);
    dnnl::convolution_backward_data::primitive_desc bwdData(
        dnnl::convolution_backward_data::desc(algorithm, xmd, wmd, ymd,
                                              strides, dilations, padL, padR),
        attr, engine, fwd);
    dnnl::convolution_backward_weights::primitive_desc bwdWeights(
        dnnl::convolution_backward_weights::desc(algorithm, xmd, wmd, ymd,
                                                 strides, dilations, padL,
                                                 padR),
        attr, engine, fwd);
    size_t scratchBytes = std::max({fwd.scratchpad_desc().get_size(),
                                    bwdData.scratchpad_desc().get_size(),
                                    bwdWeights.scratchpad_desc().get_size()});
    largestScratch = std::max(largestScratch, scratchBytes);
    memory scratch(memory::desc({memory::dim(std::max<size_t>(scratchBytes, 1))},
                                memory::data_type::u8, memory::format_tag::a),
                   engine);
    // Each primitive's own descriptors: with `any` they may differ.
    memory x(fwd.src_desc(), engine), w(fwd.weights_desc(), engine),
        y(fwd.dst_desc(), engine), dyData(bwdData.diff_dst_desc(), engine),
        wData(bwdData.weights_desc(), engine),
        dx(bwdData.diff_src_desc(), engine),
        xWeights(bwdWeights.src_desc(), engine),
        dy(bwdWeights.diff_dst_desc(), engine),
        dw(bwdWeights.diff_weights_desc(), engine);
    dnnl::convolution_forward forward(fwd);
    dnnl::convolution_backward_data backwardData(bwdData);
    dnnl::convolution_backward_weights backwardWeights(bwdWeights);
    // One primitive's seconds, run to completion.
    auto timed = [&](const dnnl::primitive &primitive,
                     const std::unordered_map<int, memory> &args) {
      double start = seconds();
      primitive.execute(stream, args);
      stream.wait();
      return seconds() - start;
    };
    double best[3] = {1e30, 1e30, 1e30};
    for (int run = 0; run < 3; ++run) {
      double took[3] = {
          timed(forward, {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w},
                          {DNNL_ARG_DST, y}, {DNNL_ARG_SCRATCHPAD, scratch}}),
          timed(backwardData, {{DNNL_ARG_DIFF_DST, dyData},
                               {DNNL_ARG_WEIGHTS, wData},
                               {DNNL_ARG_DIFF_SRC, dx},
                               {DNNL_ARG_SCRATCHPAD, scratch}}),
          timed(backwardWeights, {{DNNL_ARG_SRC, xWeights},
                                  {DNNL_ARG_DIFF_DST, dy},
                                  {DNNL_ARG_DIFF_WEIGHTS, dw},
                                  {DNNL_ARG_SCRATCHPAD, scratch}})};
      if (run == 0) // the warm-up
        continue;
      for (int i = 0; i < 3; ++i)
        best[i] = std::min(best[i], took[i]);
    }
    for (int i = 0; i < 3; ++i)
      total[i] += best[i];
    ++impls[std::string(fwd.impl_info_str()) + " / " +
            bwdData.impl_info_str() + " / " + bwdWeights.impl_info_str()];
    ++convs;
  }
  std::printf("%zu convolutions, %s layouts: forward %.3f s, backward data "
              "%.3f s, backward weights %.3f s, total %.3f s; largest "
              "scratchpad %zu B\n",
              convs, blocked ? "oneDNN's own (any)" : "plain (nchw, oihw)",
              total[0], total[1], total[2], total[0] + total[1] + total[2],
              largestScratch);
  for (const auto &[impl, count] : impls)
    std::printf("  %d x %s\n", count, impl.c_str());
  return 0;
}

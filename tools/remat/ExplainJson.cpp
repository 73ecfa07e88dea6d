//===- ExplainJson.cpp - The JSON output of `remat explain` ---------------===//
//
// The facts of the text listing and the timeline as one JSON object
// (`remat explain --json FILE`): live bytes per step and by role, saved and
// recomputed tensors with the steps that produce, read and drop them.
//
//===----------------------------------------------------------------------===//
#include "tools/remat/ExplainCommand.h"

namespace remat::tools {

using namespace remat::runtime;

namespace {

BufferRole roleAt(int index) { return static_cast<BufferRole>(index); }

} // namespace

nlohmann::json explanationJson(const Plan &plan, const PlanExplanation &ex) {
  using nlohmann::json;
  json out = json::object();
  out["model"] = plan.model;
  out["arena_bytes"] = plan.arenaBytes;
  out["steps"] = plan.steps.size();
  out["backward_start"] = ex.backwardStart;
  out["report"] = plan.report;
  out["peak_live_bytes"] = ex.peakLiveBytes;
  out["peak_step"] = ex.peakStep;
  out["live_bytes"] = ex.liveBytes;
  json byRole = json::object();
  for (int r = 0; r < kNumBufferRoles; ++r)
    byRole[roleName(roleAt(r))] = ex.liveBytesByRole[r];
  out["live_bytes_by_role"] = byRole;
  out["scratch_bytes"] = ex.scratchBytes;
  out["recompute_steps"] = ex.recomputeSteps;
  auto stepOrNull = [&](int64_t s) -> json {
    if (s < 0)
      return nullptr;
    return json{{"index", s},
                {"op", plan.steps[s].op},
                {"phase", phaseName(plan.steps[s].phase)},
                {"recompute", plan.steps[s].recompute}};
  };
  auto bufferFields = [&](json &j, int64_t b) {
    const BufferDesc &buf = plan.buffers[b];
    j["buffer"] = b;
    j["name"] = buf.name;
    j["role"] = roleName(buf.role);
    j["dtype"] = dtypeName(buf.dtype);
    j["shape"] = buf.shape;
    j["bytes"] = buf.bytes;
  };
  json saved = json::array();
  for (const SavedActivation &s : ex.saved) {
    json j = json::object();
    bufferFields(j, s.buffer);
    j["producer"] = stepOrNull(s.producerStep);
    j["first_reader"] = stepOrNull(s.firstLaterReader);
    j["last_reader"] = stepOrNull(s.lastReader);
    j["read_by_recompute"] = s.readByRecompute;
    j["recomputed_as"] = s.recomputedAs >= 0
                             ? json(plan.buffers[s.recomputedAs].name)
                             : json(nullptr);
    j["reason"] = s.reason;
    saved.push_back(j);
  }
  json recomputed = json::array();
  for (const RecomputedTensor &r : ex.recomputed) {
    json j = json::object();
    bufferFields(j, r.buffer);
    j["producer"] = stepOrNull(r.producerStep);
    j["original"] =
        r.original >= 0 ? json(plan.buffers[r.original].name) : json(nullptr);
    j["original_step"] = stepOrNull(r.originalStep);
    j["dropped_after"] = stepOrNull(r.droppedAfter);
    j["consumer"] = stepOrNull(r.consumerStep);
    j["reason"] = r.reason;
    recomputed.push_back(j);
  }
  out["saved"] = saved;
  out["recomputed"] = recomputed;
  out["totals"] = {{"saved_tensors", ex.saved.size()},
                   {"saved_bytes", ex.savedBytes},
                   {"recomputed_tensors", ex.recomputed.size()},
                   {"recomputed_bytes", ex.recomputedBytes}};
  return out;
}

} // namespace remat::tools

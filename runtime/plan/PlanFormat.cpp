//===- PlanFormat.cpp - Plan file parse and serialize ---------------------===//
#include "runtime/plan/PlanFormat.h"
#include "runtime/plan/InputFile.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

namespace remat::runtime {

using nlohmann::json;

namespace {

struct NameTable {
  const char *name;
  int value;
};

constexpr NameTable kRoles[] = {
    {"param", 0},      {"grad", 1},      {"optimizer", 2}, {"input", 3},
    {"activation", 4}, {"temporary", 5}, {"state", 6},     {"accumulator", 7}};
constexpr NameTable kPhases[] = {
    {"forward", 0}, {"backward", 1}, {"optimizer", 2}};
constexpr const char *kInitKinds[] = {"normal", "uniform", "zeros", "ones"};
constexpr const char *kDataKinds[] = {"randn",     "randint", "sequence",
                                      "labels_of", "teacher", "sample_mask"};

template <size_t N>
std::optional<int> lookup(const NameTable (&table)[N], const std::string &s) {
  for (const NameTable &entry : table)
    if (s == entry.name)
      return entry.value;
  return std::nullopt;
}

template <size_t N> const char *nameOf(const NameTable (&table)[N], int value) {
  for (const NameTable &entry : table)
    if (entry.value == value)
      return entry.name;
  return "?";
}

template <size_t N> std::string listNames(const NameTable (&table)[N]) {
  std::string out;
  for (const NameTable &entry : table)
    out += (out.empty() ? "" : "|") + std::string(entry.name);
  return out;
}

/// Reads fields of one JSON object and reports errors with source and path.
class Reader {
public:
  Reader(const std::string &source) : source(source) {}

  [[noreturn]] void fail(const std::string &path,
                         const std::string &message) const {
    throw PlanError(source + ": " + (path.empty() ? "/" : path) + ": " +
                    message);
  }

  const json &field(const json &obj, const std::string &path,
                    const char *key) const {
    auto it = obj.find(key);
    if (it == obj.end())
      fail(path, std::string("missing field \"") + key + "\"");
    return *it;
  }

  const json *optionalField(const json &obj, const char *key) const {
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }

  /// out = field `key` of `obj` where present (a number / an integer).
  void optional(const json &obj, const std::string &path, const char *key,
                double &out) const {
    if (const json *f = optionalField(obj, key))
      out = number(*f, path + "/" + key);
  }
  void optional(const json &obj, const std::string &path, const char *key,
                int64_t &out) const {
    if (const json *f = optionalField(obj, key))
      out = int64(*f, path + "/" + key);
  }

  /// The index of `kind` in `names`; else an error listing them.
  template <size_t N>
  int kindIndex(const std::string &kind, const char *const (&names)[N],
                const std::string &path, const char *what) const {
    std::string expected;
    for (size_t i = 0; i < N; ++i) {
      if (kind == names[i])
        return int(i);
      expected += (i ? "|" : "") + std::string(names[i]);
    }
    fail(path, std::string("unknown ") + what + " kind '" + kind +
                   "' (expected " + expected + ")");
  }

  void expectObject(const json &v, const std::string &path) const {
    if (!v.is_object())
      fail(path, std::string("expected an object, got ") + v.type_name());
  }
  void expectArray(const json &v, const std::string &path) const {
    if (!v.is_array())
      fail(path, std::string("expected an array, got ") + v.type_name());
  }

  std::string str(const json &v, const std::string &path) const {
    if (!v.is_string())
      fail(path, std::string("expected a string, got ") + v.type_name());
    return v.get<std::string>();
  }
  int64_t int64(const json &v, const std::string &path) const {
    if (v.is_number_unsigned()) {
      if (v.get<uint64_t>() > uint64_t(INT64_MAX))
        fail(path, "integer out of range");
      return int64_t(v.get<uint64_t>());
    }
    if (!v.is_number_integer())
      fail(path, std::string("expected an integer, got ") + v.type_name());
    return v.get<int64_t>();
  }
  uint64_t uint64(const json &v, const std::string &path) const {
    if (v.is_number_unsigned())
      return v.get<uint64_t>();
    if (v.is_number_integer())
      fail(path, "expected a non-negative integer, got " +
                     std::to_string(v.get<int64_t>()));
    fail(path,
         std::string("expected a non-negative integer, got ") + v.type_name());
  }
  double number(const json &v, const std::string &path) const {
    if (!v.is_number())
      fail(path, std::string("expected a number, got ") + v.type_name());
    return v.get<double>();
  }
  bool boolean(const json &v, const std::string &path) const {
    if (!v.is_boolean())
      fail(path, std::string("expected a boolean, got ") + v.type_name());
    return v.get<bool>();
  }
  std::vector<int64_t> intArray(const json &v, const std::string &path) const {
    expectArray(v, path);
    std::vector<int64_t> out;
    for (size_t i = 0; i < v.size(); ++i)
      out.push_back(int64(v[i], path + "/" + std::to_string(i)));
    return out;
  }

  /// Fails on any key of `obj` not in `known`.
  void rejectUnknownKeys(const json &obj, const std::string &path,
                         std::initializer_list<const char *> known) const {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      bool found = false;
      for (const char *k : known)
        found |= it.key() == k;
      if (!found)
        fail(path, "unknown field \"" + it.key() + "\"");
    }
  }

  const std::string &source;
};

InitSpec parseInit(const Reader &r, const json &v, const std::string &path) {
  r.expectObject(v, path);
  r.rejectUnknownKeys(v, path, {"kind", "mean", "std", "low", "high"});
  InitSpec init;
  std::string kind = r.str(r.field(v, path, "kind"), path + "/kind");
  init.kind =
      InitSpec::Kind(r.kindIndex(kind, kInitKinds, path + "/kind", "init"));
  r.optional(v, path, "mean", init.mean);
  r.optional(v, path, "std", init.std);
  r.optional(v, path, "low", init.low);
  r.optional(v, path, "high", init.high);
  return init;
}

DataSpec parseData(const Reader &r, const json &v, const std::string &path) {
  r.expectObject(v, path);
  r.rejectUnknownKeys(
      v, path,
      {"kind", "mean", "std", "low", "high", "vocab", "a", "c", "of", "shift",
       "classes"});
  DataSpec data;
  std::string kind = r.str(r.field(v, path, "kind"), path + "/kind");
  data.kind =
      DataSpec::Kind(r.kindIndex(kind, kDataKinds, path + "/kind", "data"));
  r.optional(v, path, "mean", data.mean);
  r.optional(v, path, "std", data.std);
  for (auto [key, field] : {std::pair{"low", &data.low},
                            {"high", &data.high},
                            {"vocab", &data.vocab},
                            {"a", &data.a},
                            {"c", &data.c},
                            {"of", &data.of},
                            {"shift", &data.shift},
                            {"classes", &data.classes}})
    r.optional(v, path, key, *field);
  if (data.kind == DataSpec::Kind::Sequence && !r.optionalField(v, "vocab"))
    r.fail(path, "data kind 'sequence' needs \"vocab\"");
  if (data.readsInput() && !r.optionalField(v, "of"))
    r.fail(path, "data kind '" + kind + "' needs \"of\"");
  return data;
}

BufferDesc parseBuffer(const Reader &r, const json &v,
                       const std::string &path) {
  r.expectObject(v, path);
  r.rejectUnknownKeys(
      v, path,
      {"name", "role", "dtype", "shape", "offset", "bytes", "init", "data"});
  BufferDesc b;
  b.name = r.str(r.field(v, path, "name"), path + "/name");
  std::string where = path + " '" + b.name + "'";
  std::string role = r.str(r.field(v, path, "role"), path + "/role");
  auto parsedRole = lookup(kRoles, role);
  if (!parsedRole)
    r.fail(where,
           "unknown role '" + role + "' (expected " + listNames(kRoles) + ")");
  b.role = BufferRole(*parsedRole);
  std::string dtype = r.str(r.field(v, path, "dtype"), path + "/dtype");
  std::optional<DType> parsedDType = parseDType(dtype);
  if (!parsedDType)
    r.fail(where, "unknown dtype '" + dtype + "' (expected " +
                      ops::dtypeNames() + ")");
  b.dtype = *parsedDType;
  b.shape = r.intArray(r.field(v, path, "shape"), path + "/shape");
  b.offset = r.uint64(r.field(v, path, "offset"), path + "/offset");
  b.bytes = r.uint64(r.field(v, path, "bytes"), path + "/bytes");
  if (const json *f = r.optionalField(v, "init"))
    b.init = parseInit(r, *f, path + "/init");
  if (const json *f = r.optionalField(v, "data"))
    b.data = parseData(r, *f, path + "/data");
  return b;
}

StepDesc parseStep(const Reader &r, const json &v, const std::string &path) {
  r.expectObject(v, path);
  r.rejectUnknownKeys(
      v, path, {"op", "inputs", "outputs", "attrs", "phase", "recompute"});
  StepDesc s;
  s.op = r.str(r.field(v, path, "op"), path + "/op");
  s.inputs = r.intArray(r.field(v, path, "inputs"), path + "/inputs");
  s.outputs = r.intArray(r.field(v, path, "outputs"), path + "/outputs");
  if (const json *f = r.optionalField(v, "attrs")) {
    r.expectObject(*f, path + "/attrs");
    s.attrs = *f;
  }
  std::string phase = r.str(r.field(v, path, "phase"), path + "/phase");
  auto parsedPhase = lookup(kPhases, phase);
  if (!parsedPhase)
    r.fail(path + "/phase", "unknown phase '" + phase + "' (expected " +
                                listNames(kPhases) + ")");
  s.phase = Phase(*parsedPhase);
  if (const json *f = r.optionalField(v, "recompute"))
    s.recompute = r.boolean(*f, path + "/recompute");
  return s;
}

} // namespace

Plan parsePlan(const json &v, const std::string &source) {
  Reader r(source);
  r.expectObject(v, "");
  // Format and version first: a newer file must fail with the version
  // message, not with whatever field it renamed.
  std::string format = r.str(r.field(v, "", "format"), "/format");
  if (format == "remat-model")
    r.fail("/format", "this is a remat model, not a plan: train it with "
                      "`remat train " + source + " --steps N`, or compile it "
                      "with `remat compile " + source +
                      " --emit=plan -o P.plan`");
  if (format != kPlanFormatName)
    r.fail("/format", "not a remat plan (format is '" + format +
                          "', expected '" + kPlanFormatName + "')");
  int64_t version = r.int64(r.field(v, "", "version"), "/version");
  if (version != kPlanFormatVersion)
    r.fail("/version", "unsupported plan version " + std::to_string(version) +
                           " (this runtime reads version " +
                           std::to_string(kPlanFormatVersion) + ")");
  r.rejectUnknownKeys(v, "",
                      {"format", "version", "model", "seed", "alignment",
                       "arena_bytes", "buffers", "steps", "loss",
                       "tokens_per_sample", "batch", "ranks", "microbatches",
                       "step_samples", "weights", "report"});
  Plan plan;
  plan.model = r.str(r.field(v, "", "model"), "/model");
  if (const json *f = r.optionalField(v, "seed"))
    plan.seed = r.uint64(*f, "/seed");
  plan.alignment = r.uint64(r.field(v, "", "alignment"), "/alignment");
  plan.arenaBytes = r.uint64(r.field(v, "", "arena_bytes"), "/arena_bytes");
  const json &buffers = r.field(v, "", "buffers");
  r.expectArray(buffers, "/buffers");
  for (size_t i = 0; i < buffers.size(); ++i)
    plan.buffers.push_back(
        parseBuffer(r, buffers[i], "/buffers/" + std::to_string(i)));
  const json &steps = r.field(v, "", "steps");
  r.expectArray(steps, "/steps");
  for (size_t i = 0; i < steps.size(); ++i)
    plan.steps.push_back(parseStep(r, steps[i], "/steps/" + std::to_string(i)));
  plan.loss = r.int64(r.field(v, "", "loss"), "/loss");
  if (const json *f = r.optionalField(v, "tokens_per_sample"))
    plan.tokensPerSample = r.int64(*f, "/tokens_per_sample");
  plan.batch = r.int64(r.field(v, "", "batch"), "/batch");
  if (const json *f = r.optionalField(v, "ranks")) {
    plan.ranks = r.int64(*f, "/ranks");
    if (plan.ranks < 1 || plan.ranks > (int64_t(1) << 20))
      r.fail("/ranks", "ranks must be in [1, 2^20], got " +
                           std::to_string(plan.ranks));
  }
  if (const json *f = r.optionalField(v, "microbatches")) {
    plan.microbatches = r.int64(*f, "/microbatches");
    if (plan.microbatches < 1 || plan.microbatches > kMaxMicrobatches)
      r.fail("/microbatches", "microbatches must be in [1, " +
                                  std::to_string(kMaxMicrobatches) + "], got " +
                                  std::to_string(plan.microbatches));
  }
  if (plan.microbatches > 1 &&
      (plan.batch < 1 || plan.batch > (int64_t(1) << 48)))
    r.fail("/batch", "a plan of " + std::to_string(plan.microbatches) +
                         " micro-batches needs a batch in [1, 2^48], got " +
                         std::to_string(plan.batch));
  if (const json *f = r.optionalField(v, "step_samples")) {
    int64_t given = r.int64(*f, "/step_samples");
    // Slices that differ by at most one sample: more than (batch - 1) per
    // micro-batch, at most batch.
    int64_t least = (plan.batch - 1) * plan.microbatches + 1;
    int64_t most = plan.batch * plan.microbatches;
    if (plan.microbatches < 2 || given < least || given > most)
      r.fail("/step_samples",
             plan.microbatches < 2
                 ? std::string("step_samples needs microbatches > 1")
                 : "step_samples must be in [" + std::to_string(least) + ", " +
                       std::to_string(most) + "] for " +
                       std::to_string(plan.microbatches) +
                       " micro-batches of at most " +
                       std::to_string(plan.batch) + " samples, got " +
                       std::to_string(given));
    plan.stepSamples = given;
  }
  if (const json *f = r.optionalField(v, "weights")) {
    plan.weights = r.str(*f, "/weights");
    if (plan.weights.empty() || plan.weights.front() == '/' ||
        plan.weights.find("..") != std::string::npos)
      r.fail("/weights", "expected a file name relative to the plan's "
                         "directory, got '" + plan.weights + "'");
  }
  if (const json *f = r.optionalField(v, "report")) {
    r.expectObject(*f, "/report");
    plan.report = *f;
  }
  return plan;
}

Plan parsePlanText(const std::string &text, const std::string &source) {
  json v;
  try {
    v = parseJsonDepthLimited(text, [&](const std::string &message) {
      throw PlanError(source + ": " + message);
    });
  } catch (const json::parse_error &e) {
    std::string what = e.what();
    // nlohmann prefixes "[json.exception.parse_error.101] "; drop the tag.
    if (auto pos = what.find("] "); pos != std::string::npos)
      what = what.substr(pos + 2);
    bool truncated = e.byte >= text.size();
    throw PlanError(source + ": " +
                    (truncated
                         ? "truncated JSON (unexpected end of input)"
                         : "malformed JSON at byte " + std::to_string(e.byte)) +
                    ": " + what);
  } catch (const json::exception &e) {
    // Not a syntax error: a number literal out of range ("1e999" is
    // out_of_range.406), which nlohmann reports without a byte position.
    std::string what = e.what();
    if (auto pos = what.find("] "); pos != std::string::npos)
      what = what.substr(pos + 2);
    throw PlanError(source + ": malformed JSON: " + what);
  }
  return parsePlan(v, source);
}

Plan readPlanFile(const std::string &path) {
  if (std::optional<std::string> why = inputProblem(path))
    throw PlanError(path + ": cannot open the plan file: " + *why);
  if (looksLikeOnnx(path))
    throw PlanError(path + ": this is an ONNX model, not a plan: train it "
                           "with `remat train " + path + " --steps N` "
                           "(docs/onnx.md)");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw PlanError(path + ": cannot open the plan file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parsePlanText(buffer.str(), path);
}

std::string planWeightsPath(const std::string &planPath,
                            const std::string &weights) {
  if (weights.empty() || weights.front() == '/' ||
      weights.find("..") != std::string::npos)
    throw PlanError(planPath + ": /weights: expected a file name relative to "
                               "the plan's directory, got '" + weights + "'");
  size_t slash = planPath.rfind('/');
  return slash == std::string::npos ? weights
                                    : planPath.substr(0, slash + 1) + weights;
}

json serializePlan(const Plan &plan) {
  json out = json::object();
  // nlohmann's default object is a sorted map, so key order is stable.
  out["format"] = kPlanFormatName;
  out["version"] = kPlanFormatVersion;
  out["model"] = plan.model;
  out["seed"] = plan.seed;
  out["alignment"] = plan.alignment;
  out["arena_bytes"] = plan.arenaBytes;
  json buffers = json::array();
  for (const BufferDesc &b : plan.buffers) {
    json jb = {{"name", b.name},
               {"role", roleName(b.role)},
               {"dtype", dtypeName(b.dtype)},
               {"shape", b.shape},
               {"offset", b.offset},
               {"bytes", b.bytes}};
    if (b.init) {
      json ji = {{"kind", initKindName(b.init->kind)}};
      if (b.init->kind == InitSpec::Kind::Normal) {
        ji["mean"] = b.init->mean;
        ji["std"] = b.init->std;
      } else if (b.init->kind == InitSpec::Kind::Uniform) {
        ji["low"] = b.init->low;
        ji["high"] = b.init->high;
      }
      jb["init"] = ji;
    }
    if (b.data) {
      const DataSpec &d = *b.data;
      json jd = {{"kind", dataKindName(d.kind)}};
      switch (d.kind) {
      case DataSpec::Kind::Randn:
        jd["mean"] = d.mean;
        jd["std"] = d.std;
        break;
      case DataSpec::Kind::Randint:
        jd["low"] = d.low;
        jd["high"] = d.high;
        break;
      case DataSpec::Kind::Sequence:
        jd["vocab"] = d.vocab;
        jd["a"] = d.a;
        jd["c"] = d.c;
        break;
      case DataSpec::Kind::LabelsOf:
        jd["of"] = d.of;
        jd["shift"] = d.shift;
        break;
      case DataSpec::Kind::Teacher:
        jd["of"] = d.of;
        if (isIndexDType(b.dtype))
          jd["classes"] = d.classes;
        break;
      case DataSpec::Kind::SampleMask:
        break;
      }
      jb["data"] = jd;
    }
    buffers.push_back(std::move(jb));
  }
  out["buffers"] = std::move(buffers);
  json steps = json::array();
  for (const StepDesc &s : plan.steps)
    steps.push_back({{"op", s.op},
                     {"inputs", s.inputs},
                     {"outputs", s.outputs},
                     {"attrs", s.attrs.is_null() ? json::object() : s.attrs},
                     {"phase", phaseName(s.phase)},
                     {"recompute", s.recompute}});
  out["steps"] = std::move(steps);
  out["loss"] = plan.loss;
  out["tokens_per_sample"] = plan.tokensPerSample;
  out["batch"] = plan.batch;
  if (plan.ranks > 1) // one-rank plans stay byte-identical to before
    out["ranks"] = plan.ranks;
  if (plan.microbatches > 1)
    out["microbatches"] = plan.microbatches;
  if (plan.microbatches > 1 &&
      plan.samplesPerStep() != plan.batch * plan.microbatches)
    out["step_samples"] = plan.samplesPerStep();
  if (!plan.weights.empty())
    out["weights"] = plan.weights;
  out["report"] = plan.report.is_null() ? json::object() : plan.report;
  return out;
}

namespace {

/// Of `k` micro-batches of at most `batch` samples, `stepSamples` in all,
/// those that hold `batch` (the first; the others hold `batch - 1`).
int64_t fullMicrobatches(int64_t k, int64_t batch, int64_t stepSamples) {
  return stepSamples - (batch - 1) * k;
}

} // namespace

MicrobatchSlice microbatchSlice(const Plan &plan, int64_t microbatch) {
  int64_t full =
      fullMicrobatches(plan.microbatches, plan.batch, plan.samplesPerStep());
  MicrobatchSlice part;
  part.first =
      microbatch * plan.batch - std::max<int64_t>(0, microbatch - full);
  part.samples = microbatch < full ? plan.batch : plan.batch - 1;
  part.padding = plan.batch - part.samples;
  return part;
}

int64_t rowsPerSample(const Plan &plan, const BufferDesc &b) {
  if (b.shape.empty() || plan.batch < 1 || b.shape[0] % plan.batch != 0)
    return 0;
  return b.shape[0] / plan.batch;
}

std::string describeMicrobatches(int64_t k, int64_t batch,
                                 int64_t stepSamples) {
  std::string text = std::to_string(k) + " micro-batches";
  int64_t full = fullMicrobatches(k, batch, stepSamples);
  if (full >= k)
    return text + " of " + std::to_string(batch) + " samples each";
  return text + ": " + std::to_string(full) + " of " + std::to_string(batch) +
         " samples, " + std::to_string(k - full) + " of " +
         std::to_string(batch - 1) + " (" + std::to_string(stepSamples) +
         " in all)";
}

std::string serializePlanText(const Plan &plan, int indent) {
  return serializePlan(plan).dump(indent) + "\n";
}

const char *roleName(BufferRole r) { return nameOf(kRoles, int(r)); }
std::optional<BufferRole> parseRole(const std::string &name) {
  if (auto v = lookup(kRoles, name))
    return BufferRole(*v);
  return std::nullopt;
}
const char *phaseName(Phase p) { return nameOf(kPhases, int(p)); }
std::optional<Phase> parsePhase(const std::string &name) {
  if (auto v = lookup(kPhases, name))
    return Phase(*v);
  return std::nullopt;
}
const char *initKindName(InitSpec::Kind k) { return kInitKinds[int(k)]; }
const char *dataKindName(DataSpec::Kind k) { return kDataKinds[int(k)]; }

uint64_t floatElementBytes(const Plan &plan) {
  for (const BufferDesc &b : plan.buffers)
    if (b.dtype == DType::F64)
      return 8;
  return 4;
}

void appendFloatsAs(DType dtype, const char *f32Bytes, uint64_t bytes,
                    std::vector<char> &out) {
  if (dtype != DType::F64) {
    out.insert(out.end(), f32Bytes, f32Bytes + bytes);
    return;
  }
  size_t at = out.size();
  out.resize(at + bytes / sizeof(float) * sizeof(double));
  for (uint64_t i = 0; i < bytes / sizeof(float); ++i) {
    float f;
    std::memcpy(&f, f32Bytes + i * sizeof(float), sizeof(float));
    double d = f;
    std::memcpy(out.data() + at + i * sizeof(double), &d, sizeof(double));
  }
}

std::vector<char> floatsAs(DType dtype, std::vector<char> f32Bytes) {
  if (dtype != DType::F64)
    return f32Bytes;
  std::vector<char> out;
  appendFloatsAs(dtype, f32Bytes.data(), f32Bytes.size(), out);
  return out;
}

std::optional<uint64_t> checkedByteSize(const Shape &shape, DType dtype) {
  auto n = checkedNumElements(shape);
  uint64_t size = dtypeSize(dtype);
  if (!n || *n > UINT64_MAX / size)
    return std::nullopt;
  return *n * size;
}

std::string gradBufferName(const std::string &paramName) {
  return "grad:" + paramName;
}
std::string optimizerStateName(const std::string &state,
                               const std::string &paramName) {
  return state + ":" + paramName;
}
std::string paramNameOfGrad(const std::string &gradName) {
  if (gradName.rfind("grad:", 0) == 0)
    return gradName.substr(5);
  return gradName;
}

} // namespace remat::runtime

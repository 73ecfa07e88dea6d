//===- ModelGraph.cpp - Read, validate and flatten a model file -----------===//
//
// The reader works in four steps:
//   1. parse the JSON, check format/version;
//   2. settle the config: defaults, then the preset, then --set overrides;
//   3. define inputs and global params, then flatten the top-level op list:
//      each scope is topologically sorted (cycles and undefined names are
//      reported with the op's JSON pointer), block calls are expanded
//      `repeat` times with their params instantiated per layer;
//   4. check the loss and normalize the optimizer; warn of parameters no
//      op reads.
// Every error names its place as FILE:LINE:COLUMN and JSON pointer; the
// line and column come from a scan of the text (compiler/JsonLocation.h).
// Every shape is inferred as the op is flattened, by the op's type rule
// (ops/ShapeRules.h), so a shape error names the op that caused it. Config
// expressions are evaluated by compiler/Expression.h.
//
//===----------------------------------------------------------------------===//

#include "compiler/ModelGraph.h"

#include "compiler/Expression.h"
#include "compiler/JsonLocation.h"

#include "ops/ShapeRules.h"
#include "ops/Suggest.h"
#include "runtime/plan/PlanFormat.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>

using nlohmann::json;

namespace remat::model {

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

bool isFloatDType(const std::string &d) {
  auto dtype = ops::parseDType(d);
  return dtype && ops::isFloatDType(*dtype);
}
bool isIndexDType(const std::string &d) {
  auto dtype = ops::parseDType(d);
  return dtype && ops::isIndexDType(*dtype);
}

int64_t dtypeBytes(const std::string &d) {
  auto dtype = ops::parseDType(d);
  return dtype ? int64_t(ops::dtypeSize(*dtype)) : 0;
}

/// Products stay below 2^62 so that byte counts and sums of a few of them
/// never overflow int64.
static constexpr int64_t kMaxElements = int64_t(1) << 62;

int64_t ValueType::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d <= 0)
      throw std::overflow_error("dimension " + std::to_string(d) +
                                " is not positive");
    if (n > kMaxElements / d)
      throw std::overflow_error("shape " + str() +
                                " has more than 2^62 elements");
    n *= d;
  }
  return n;
}

int64_t ValueType::bytes() const {
  int64_t n = numElements();
  int64_t b = dtypeBytes(dtype);
  if (n > kMaxElements / std::max<int64_t>(b, 1))
    throw std::overflow_error("shape " + str() + " has more than 2^62 bytes");
  return n * b;
}

static std::string shapeStr(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string ValueType::str() const { return dtype + shapeStr(shape); }

int ModelGraph::findValue(const std::string &name) const {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].name == name)
      return static_cast<int>(i);
  return -1;
}

int ModelGraph::appendOp(Op op, const ValueType &type) {
  Value v;
  v.name = op.name;
  v.kind = ValueKind::Op;
  v.type = type;
  values.push_back(std::move(v));
  op.result = static_cast<int>(values.size()) - 1;
  ops.push_back(std::move(op));
  return ops.back().result;
}

//===----------------------------------------------------------------------===//
// Ops: names, attributes and type rules come from the op table
//===----------------------------------------------------------------------===//

namespace {

/// The op a model file may use under this name, or nullopt.
std::optional<ops::OpKind> modelOpKind(const std::string &name) {
  auto kind = ops::parseOpKind(name);
  if (kind && ops::opInfo(*kind).inModelFormat)
    return kind;
  return std::nullopt;
}

/// Attributes whose default depends on the op's operands or name rather than
/// being a constant of the op's definition.
bool hasDerivedDefault(ops::OpKind op, const std::string &attr) {
  return (op == ops::OpKind::Attention && attr == "scale") ||
         (op == ops::OpKind::Dropout && attr == "seed");
}

ops::TensorType toOpsType(const ValueType &t) {
  return ops::TensorType{*ops::parseDType(t.dtype), t.shape};
}

ValueType fromOpsType(const ops::TensorType &t) {
  return ValueType{ops::dtypeName(t.dtype), t.shape};
}

uint64_t fnv1a(const std::string &s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s)
    h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string jsonKind(const json &j) {
  switch (j.type()) {
  case json::value_t::null: return "null";
  case json::value_t::boolean: return "a boolean";
  case json::value_t::string: return "a string";
  case json::value_t::array: return "an array";
  case json::value_t::object: return "an object";
  default: return "a number";
  }
}

//===----------------------------------------------------------------------===//
// The reader
//===----------------------------------------------------------------------===//

/// One named definition inside a scope, for duplicate and order checks.
struct Definition {
  std::string pointer;
  int opIndex; ///< index in the scope's op list; -1 for inputs/params
};

class ModelReader {
public:
  ModelReader(const std::string &sourceName, const ModelOptions &options)
      : sourceName(sourceName), options(options) {}

  ModelGraph read(const std::string &text);

private:
  const std::string &sourceName;
  const ModelOptions &options;
  /// Where each value of the text starts, for messages.
  std::optional<JsonSourceMap> sourceMap;
  json root;
  ModelGraph graph;
  /// Block definitions by name, with their JSON pointers.
  std::map<std::string, const json *> blocks;
  /// Names visible everywhere: inputs and global params.
  std::map<std::string, int> globals;
  std::map<std::string, std::string> globalPointers;
  /// "CALL.N" while the ops of repetition N of an outermost block call are
  /// flattened (Op::block), else empty.
  std::string blockInstance;

  /// "FILE:LINE:COLUMN" of the value at `pointer` (or of its nearest
  /// enclosing value the file has); "FILE" when the text was not scanned.
  std::string locate(const std::string &pointer) const {
    SourcePosition at = sourceMap ? sourceMap->find(pointer) : SourcePosition{};
    return at.known() ? sourceName + ":" + at.str() : sourceName;
  }

  /// Throws "FILE:LINE:COLUMN: WHERE: WHY". `where` is a JSON pointer,
  /// optionally followed by " 'NAME'" (an op's name); the line and column
  /// are those of its pointer, or of `at` when given (a field inside it).
  [[noreturn]] void fail(const std::string &where, const std::string &why,
                         const std::string &at = "") {
    std::string pointer = at.empty() ? where.substr(0, where.find(" '")) : at;
    throw ModelError(locate(pointer) + ": " + where +
                     (where.empty() ? "" : ": ") + why);
  }

  /// The names of `map`'s keys, for suggestions.
  template <typename Map>
  static std::vector<std::string> keysOf(const Map &map) {
    std::vector<std::string> keys;
    for (const auto &entry : map)
      keys.push_back(entry.first);
    return keys;
  }

  void checkKeys(const json &object, const std::string &pointer,
                 std::initializer_list<const char *> allowed) {
    if (!object.is_object())
      fail(pointer, "expected an object, got " + jsonKind(object));
    for (auto it = object.begin(); it != object.end(); ++it) {
      bool ok = false;
      for (const char *a : allowed)
        ok |= it.key() == a;
      if (!ok) {
        std::string list;
        for (const char *a : allowed)
          list += std::string(list.empty() ? "" : ", ") + a;
        fail(pointer + "/" + it.key(),
             "unknown field '" + it.key() + "'" +
                 didYouMean(it.key(), std::vector<std::string>(allowed.begin(),
                                                               allowed.end())) +
                 " (expected one of: " + list + ")");
      }
    }
  }

  const json &require(const json &object, const std::string &pointer,
                      const char *key) {
    auto it = object.find(key);
    if (it == object.end())
      fail(pointer + "/" + key, std::string("missing field '") + key + "'");
    return *it;
  }

  std::string requireString(const json &object, const std::string &pointer,
                            const char *key) {
    const json &v = require(object, pointer, key);
    if (!v.is_string() || v.get<std::string>().empty())
      fail(pointer + "/" + key, "expected a non-empty string, got " +
                                    jsonKind(v));
    return v.get<std::string>();
  }

  /// The optional string field "kind" of `object` ("" when absent).
  std::string kindOf(const json &object, const std::string &pointer) {
    auto it = object.find("kind");
    if (it == object.end())
      return "";
    if (!it->is_string())
      fail(pointer + "/kind", "expected a string, got " + jsonKind(*it));
    return it->get<std::string>();
  }

  double number(const json &v, const std::string &pointer) {
    if (v.is_number())
      return v.get<double>();
    if (v.is_string()) {
      try {
        return evaluateExpression(v.get<std::string>(), graph.config);
      } catch (const std::invalid_argument &e) {
        fail(pointer, e.what());
      }
    }
    fail(pointer, "expected a number or an expression string, got " +
                      jsonKind(v));
  }

  int64_t integer(const json &v, const std::string &pointer) {
    double d = number(v, pointer);
    if (d != std::floor(d) || std::fabs(d) > 9.0e18)
      fail(pointer, "expected an integer, got " + std::to_string(d));
    return static_cast<int64_t>(d);
  }

  std::vector<int64_t> shape(const json &v, const std::string &pointer) {
    if (!v.is_array())
      fail(pointer, "a shape must be an array of dimensions, got " +
                        jsonKind(v));
    std::vector<int64_t> dims;
    for (size_t i = 0; i < v.size(); ++i) {
      std::string p = pointer + "/" + std::to_string(i);
      double d = number(v[i], p);
      if (d != std::floor(d))
        fail(p, "dimension " + std::to_string(d) + " is not an integer");
      if (d <= 0)
        // (A double below -2^63 has no long long to print as.)
        fail(p, "dimension " +
                    (d >= -9.0e18 ? std::to_string((long long)d)
                                  : std::to_string(d)) +
                    " must be positive");
      if (d > 4.0e18)
        fail(p, "dimension overflows 64 bits");
      dims.push_back(static_cast<int64_t>(d));
    }
    ValueType t{"f32", dims};
    try {
      t.bytes();
    } catch (const std::overflow_error &e) {
      fail(pointer, e.what());
    }
    return dims;
  }

  std::string dtype(const json &object, const std::string &pointer,
                    const std::string &fallback) {
    auto it = object.find("dtype");
    if (it == object.end())
      return fallback;
    if (!it->is_string() || dtypeBytes(it->get<std::string>()) == 0)
      fail(pointer + "/dtype",
           "unknown dtype " + it->dump() +
               (it->is_string()
                    ? didYouMean(it->get<std::string>(),
                                 {"f32", "f16", "bf16", "i32", "i64"})
                    : "") +
               " (expected f32, f16, bf16, i32 or i64)");
    return it->get<std::string>();
  }

  void readConfig();
  void readInputs();
  int defineParam(const json &param, const std::string &pointer,
                  const std::string &prefix);
  json normalizeInit(const json &init, const std::string &pointer);
  json normalizeData(const json &data, const std::string &pointer,
                     const ValueType &type);
  void flattenScope(const json &ops, const std::string &pointer,
                    std::map<std::string, int> scope,
                    const std::string &prefix, int depth,
                    std::map<std::string, int> &exported);
  int emitOp(const json &op, const std::string &pointer,
             const std::string &opName, const std::vector<int> &operands);
  void expandBlock(const json &call, const std::string &pointer,
                   const std::string &callName,
                   const std::vector<int> &operands, int depth,
                   std::vector<int> &outputs);
  void readLoss();
  void checkOpsReachLoss();
  void warnUnusedParams();
  void readOptimizer();
  std::string declarationNotes(const std::vector<int> &operands);
};

ModelGraph ModelReader::read(const std::string &text) {
  // 1. Parse (nesting limited as for plans, runtime/plan/PlanFormat.h).
  try {
    root = runtime::parseJsonDepthLimited(
        text, [&](const std::string &message) {
          throw ModelError(sourceName + ": " + message);
        });
  } catch (const json::parse_error &e) {
    // e.byte counts from 1 and points just past the offending character.
    SourcePosition at = positionOfByte(text, e.byte > 0 ? e.byte - 1 : 0);
    std::string what = e.what();
    auto colon = what.find("; ");
    if (colon != std::string::npos)
      what = what.substr(colon + 2);
    throw ModelError(sourceName + ":" + at.str() + ": malformed JSON: " + what);
  } catch (const json::exception &e) {
    // Not a syntax error: a number literal out of range ("1e999" is
    // out_of_range.406), which nlohmann reports without a position; the
    // scan finds it.
    std::string what = e.what();
    if (auto pos = what.find("] "); pos != std::string::npos)
      what = what.substr(pos + 2);
    JsonSourceMap scanned(text);
    if (const auto &number = scanned.overflowingNumber())
      throw ModelError(sourceName + ":" + number->position.str() + ": " +
                       number->pointer + (number->pointer.empty() ? "" : ": ") +
                       "malformed JSON: number overflow parsing '" +
                       number->text +
                       "' (beyond the largest double, about 1.8e308)");
    throw ModelError(sourceName + ": malformed JSON: " + what);
  }
  sourceMap.emplace(text);
  // A plan file is JSON too: say what it is rather than which field is
  // unknown.
  if (root.is_object() &&
      root.value("format", json()) == runtime::kPlanFormatName)
    fail("/format", "this is a remat plan (format \"" +
                        std::string(runtime::kPlanFormatName) +
                        "\"), not a model: run it with `remat run " +
                        sourceName + "`");
  checkKeys(root, "", {"format", "version", "name", "description", "config",
                       "presets", "seed", "tokens_per_sample", "inputs",
                       "params", "blocks", "ops", "loss", "optimizer"});
  if (root.value("format", json()) != "remat-model")
    fail("/format", "expected \"remat-model\" (is this a model file?)");
  const json &version = require(root, "", "version");
  if (!version.is_number_integer() || version.get<int>() != kModelFormatVersion)
    fail("/version", "unsupported model format version " + version.dump() +
                         "; this remat reads version " +
                         std::to_string(kModelFormatVersion));
  graph.name = requireString(root, "", "name");
  graph.sourceName = sourceName;
  if (root.contains("seed"))
    graph.seed = integer(root["seed"], "/seed");

  // 2. Config.
  readConfig();
  if (options.ranks > 1) {
    if (!graph.config.count("batch"))
      throw OptionError(sourceName + ": --ranks " +
                        std::to_string(options.ranks) +
                        " needs the model's config variable 'batch' (the "
                        "global batch the ranks share)");
    double global = graph.config["batch"];
    if (global != std::floor(global) || global < double(options.ranks) ||
        std::fmod(global, double(options.ranks)) != 0)
      throw OptionError(sourceName + ": --ranks " +
                        std::to_string(options.ranks) +
                        " does not divide the global batch " +
                        std::to_string(int64_t(global)) + " (config 'batch'); pick a "
                        "batch that is a multiple of the rank count (--set "
                        "batch=...)");
    graph.config["batch"] = global / double(options.ranks);
    graph.ranks = options.ranks;
    graph.shardOptimizer = options.shardOptimizer;
  }
  if (graph.config.count("batch"))
    graph.batch = static_cast<int64_t>(graph.config["batch"]);
  if (root.contains("tokens_per_sample"))
    graph.tokensPerSample = integer(root["tokens_per_sample"],
                                    "/tokens_per_sample");

  // 3. Inputs, params, blocks, ops.
  readInputs();
  if (root.contains("params")) {
    const json &params = root["params"];
    if (!params.is_array())
      fail("/params", "expected an array, got " + jsonKind(params));
    for (size_t i = 0; i < params.size(); ++i) {
      std::string p = "/params/" + std::to_string(i);
      int id = defineParam(params[i], p, "");
      const std::string &name = graph.values[id].name;
      if (globals.count(name))
        fail(p, "'" + name + "' is defined twice (first at " +
                    globalPointers[name] + ")");
      globals[name] = id;
      globalPointers[name] = p;
    }
  }
  if (root.contains("blocks")) {
    const json &bs = root["blocks"];
    if (!bs.is_object())
      fail("/blocks", "expected an object of named blocks, got " +
                          jsonKind(bs));
    for (auto it = bs.begin(); it != bs.end(); ++it) {
      std::string p = "/blocks/" + it.key();
      checkKeys(*it, p, {"inputs", "outputs", "params", "ops", "description"});
      blocks[it.key()] = &*it;
    }
  }
  const json &ops = require(root, "", "ops");
  std::map<std::string, int> exported;
  flattenScope(ops, "/ops", globals, "", 0, exported);

  // 4. Loss and optimizer.
  readLoss();
  checkOpsReachLoss();
  readOptimizer();
  warnUnusedParams();
  return std::move(graph);
}

void ModelReader::checkOpsReachLoss() {
  // The training step computes the loss and its gradients, nothing else:
  // an op whose result never reaches the loss would run for nothing (and
  // its parameters would get no gradient), so it is a model error.
  std::vector<char> needed = valuesReachingLoss(graph);
  for (const Op &op : graph.ops)
    if (!needed[size_t(op.result)])
      fail(op.where(), "its result does not reach the loss '" +
                           graph.values[size_t(graph.loss)].name +
                           "': the training step would compute it for "
                           "nothing (remove it, or use its result)");
}

void ModelReader::warnUnusedParams() {
  // A parameter no op reads gets no gradient and only takes memory; it is
  // valid (the step is well defined) but probably a mistake. A block's
  // parameter is reported once for all repetitions.
  std::vector<char> read(graph.values.size(), 0);
  for (const Op &op : graph.ops)
    for (int v : op.operands)
      read[size_t(v)] = 1;
  std::set<std::string> reported;
  for (size_t i = 0; i < graph.values.size(); ++i) {
    const Value &v = graph.values[i];
    if (v.kind != ValueKind::Param || read[i] ||
        !reported.insert(v.pointer).second)
      continue;
    std::string declared = v.name;
    try {
      declared =
          root.at(json::json_pointer(v.pointer)).at("name").get<std::string>();
    } catch (const json::exception &) {
    }
    graph.warnings.push_back(
        locate(v.pointer) + ": " + v.pointer + " '" + declared +
        "': parameter '" + declared +
        "' is not read by any op: it gets no gradient and only takes "
        "memory (use it, or remove it)");
  }
}

void ModelReader::readConfig() {
  if (root.contains("config")) {
    const json &config = root["config"];
    if (!config.is_object())
      fail("/config", "expected an object, got " + jsonKind(config));
    for (auto it = config.begin(); it != config.end(); ++it) {
      if (!it->is_number())
        fail("/config/" + it.key(), "a config value must be a number, got " +
                                        jsonKind(*it));
      graph.config[it.key()] = it->get<double>();
    }
  }
  auto known = [&]() {
    std::string list;
    for (auto &[k, v] : graph.config)
      list += (list.empty() ? "" : ", ") + k;
    return list.empty() ? std::string("none") : list;
  };
  if (!options.preset.empty()) {
    const json *presets = root.contains("presets") ? &root["presets"] : nullptr;
    if (!presets || !presets->is_object() ||
        !presets->contains(options.preset)) {
      std::string list;
      if (presets && presets->is_object())
        for (auto it = presets->begin(); it != presets->end(); ++it)
          list += (list.empty() ? "" : ", ") + it.key();
      std::vector<std::string> names;
      if (presets && presets->is_object())
        for (auto it = presets->begin(); it != presets->end(); ++it)
          names.push_back(it.key());
      throw OptionError(locate("/presets") + ": /presets: unknown preset '" +
                        options.preset + "'" +
                        didYouMean(options.preset, names) +
                        " (available: " + (list.empty() ? "none" : list) + ")");
    }
    const json &preset = (*presets)[options.preset];
    std::string p = "/presets/" + options.preset;
    if (!preset.is_object())
      fail(p, "expected an object, got " + jsonKind(preset));
    for (auto it = preset.begin(); it != preset.end(); ++it) {
      if (!graph.config.count(it.key()))
        fail(p + "/" + it.key(),
             "unknown config variable '" + it.key() + "'" +
                 didYouMean(it.key(), keysOf(graph.config)) +
                 " (known: " + known() + ")");
      if (!it->is_number())
        fail(p + "/" + it.key(), "a config value must be a number");
      graph.config[it.key()] = it->get<double>();
    }
  }
  for (const auto &[key, text] : options.overrides) {
    if (!graph.config.count(key))
      throw OptionError(sourceName + ": --set " + key + "=" + text +
                        ": unknown config variable '" + key + "'" +
                        didYouMean(key, keysOf(graph.config)) +
                        " (known: " + known() + ")");
    try {
      size_t used = 0;
      double v = std::stod(text, &used);
      if (used != text.size())
        throw std::invalid_argument("trailing text");
      graph.config[key] = v;
    } catch (const std::exception &) {
      throw OptionError(sourceName + ": --set " + key + "=" + text +
                        ": the value is not a number");
    }
  }
}

void ModelReader::readInputs() {
  if (!root.contains("inputs"))
    return;
  const json &inputs = root["inputs"];
  if (!inputs.is_array())
    fail("/inputs", "expected an array, got " + jsonKind(inputs));
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string p = "/inputs/" + std::to_string(i);
    const json &in = inputs[i];
    checkKeys(in, p, {"name", "shape", "dtype", "data", "description"});
    Value v;
    v.kind = ValueKind::Input;
    v.name = requireString(in, p, "name");
    v.type.dtype = dtype(in, p, "f32");
    v.type.shape = shape(require(in, p, "shape"), p + "/shape");
    if (globals.count(v.name))
      fail(p, "'" + v.name + "' is defined twice (first at " +
                  globalPointers[v.name] + ")");
    v.data = normalizeData(in.value("data", json()), p + "/data", v.type);
    v.pointer = p;
    globals[v.name] = static_cast<int>(graph.values.size());
    globalPointers[v.name] = p;
    graph.values.push_back(std::move(v));
  }
  // labels_of and teacher refer to another input by name; resolve it now.
  for (Value &v : graph.values) {
    std::string kind = v.data.value("kind", "");
    if (kind != "labels_of" && kind != "teacher")
      continue;
    std::string of = v.data["of"];
    std::string pointer = globalPointers[v.name] + "/data/of";
    if (!globals.count(of) || graph.values[globals[of]].kind != ValueKind::Input)
      fail(pointer, "'" + of + "' is not an input");
    const ValueType &source = graph.values[globals[of]].type;
    if (kind == "labels_of") {
      if (source.shape != v.type.shape)
        fail(pointer,
             "labels_of '" + of + "' needs the same shape as '" + v.name + "'");
      continue;
    }
    if (isIndexDType(source.dtype) || source.shape.empty() ||
        graph.values[globals[of]].data.value("kind", "") == "teacher")
      fail(pointer, "a teacher reads a float input of rank >= 1 that is not "
                    "itself a teacher's; '" +
                        of + "' is not one");
    std::vector<int64_t> rows(source.shape.begin(), source.shape.end() - 1);
    bool labels = isIndexDType(v.type.dtype);
    std::vector<int64_t> expected = rows;
    if (!labels && !v.type.shape.empty())
      expected.push_back(v.type.shape.back());
    if (v.type.shape != expected || (!labels && v.type.shape.empty()))
      fail(pointer, "teacher of '" + of + "' (shape " +
                        ops::formatShape(source.shape) + ") gives " +
                        (labels ? "labels of shape " + ops::formatShape(rows)
                                : "targets of shape " + ops::formatShape(rows) +
                                      " + [outputs]") +
                        ", but '" + v.name + "' has shape " +
                        ops::formatShape(v.type.shape));
  }
}

json ModelReader::normalizeData(const json &data, const std::string &pointer,
                                const ValueType &type) {
  bool index = isIndexDType(type.dtype);
  if (data.is_null()) {
    if (index)
      fail(pointer, "an integer input needs a 'data' object saying how to "
                    "generate it (teacher, sequence, labels_of or randint)");
    return json{{"kind", "randn"}, {"std", 1.0}};
  }
  checkKeys(data, pointer, {"kind", "std", "low", "high", "vocab", "of",
                            "shift", "a", "c", "classes"});
  std::string kind = kindOf(data, pointer);
  json out{{"kind", kind}};
  if (kind == "randn") {
    if (index)
      fail(pointer, "randn data needs a float input");
    out["std"] = data.contains("std") ? number(data["std"], pointer + "/std")
                                      : 1.0;
  } else if (kind == "randint") {
    if (!index)
      fail(pointer, "randint data needs an i32/i64 input");
    out["low"] = data.contains("low") ? integer(data["low"], pointer + "/low")
                                      : 0;
    out["high"] = integer(require(data, pointer, "high"), pointer + "/high");
    if (out["high"].get<int64_t>() <= out["low"].get<int64_t>())
      fail(pointer, "randint needs low < high");
  } else if (kind == "sequence") {
    if (!index)
      fail(pointer, "sequence data needs an i32/i64 input");
    out["vocab"] = integer(require(data, pointer, "vocab"), pointer + "/vocab");
    out["a"] = data.contains("a") ? integer(data["a"], pointer + "/a") : 5;
    out["c"] = data.contains("c") ? integer(data["c"], pointer + "/c") : 3;
    if (out["vocab"].get<int64_t>() < 2)
      fail(pointer + "/vocab", "vocab must be at least 2");
  } else if (kind == "labels_of") {
    if (!index)
      fail(pointer, "labels_of data needs an i32/i64 input");
    const json &of = require(data, pointer, "of");
    if (!of.is_string())
      fail(pointer + "/of", "expected the name of an input");
    out["of"] = of;
    out["shift"] = data.contains("shift")
                       ? integer(data["shift"], pointer + "/shift")
                       : 1;
  } else if (kind == "teacher") {
    const json &of = require(data, pointer, "of");
    if (!of.is_string())
      fail(pointer + "/of", "expected the name of a float input");
    out["of"] = of;
    if (index) {
      out["classes"] =
          integer(require(data, pointer, "classes"), pointer + "/classes");
      if (out["classes"].get<int64_t>() < 1)
        fail(pointer + "/classes", "classes must be at least 1");
    } else if (data.contains("classes")) {
      fail(pointer + "/classes", "classes is for integer labels; a float "
                                 "input gets one target per last-dim entry");
    }
  } else {
    fail(pointer + "/kind", "unknown data kind '" + kind +
                                "' (expected randn, randint, sequence, "
                                "labels_of or teacher)");
  }
  return out;
}

json ModelReader::normalizeInit(const json &init, const std::string &pointer) {
  if (init.is_null())
    return json{{"kind", "normal"}, {"mean", 0.0}, {"std", 0.02}};
  checkKeys(init, pointer, {"kind", "mean", "std", "low", "high"});
  std::string kind = kindOf(init, pointer);
  auto num = [&](const char *key, double fallback) {
    return init.contains(key) ? number(init[key], pointer + "/" + key)
                              : fallback;
  };
  if (kind == "normal")
    return json{{"kind", kind}, {"mean", num("mean", 0)}, {"std", num("std", 0.02)}};
  if (kind == "uniform") {
    double low = num("low", -1), high = num("high", 1);
    if (!(low < high))
      fail(pointer, "uniform init needs low < high");
    return json{{"kind", kind}, {"low", low}, {"high", high}};
  }
  if (kind == "zeros" || kind == "ones")
    return json{{"kind", kind}};
  fail(pointer + "/kind", "unknown init kind '" + kind +
                              "' (expected normal, uniform, zeros or ones)");
}

int ModelReader::defineParam(const json &param, const std::string &pointer,
                             const std::string &prefix) {
  checkKeys(param, pointer, {"name", "shape", "dtype", "init", "description"});
  Value v;
  v.kind = ValueKind::Param;
  v.name = prefix + requireString(param, pointer, "name");
  v.type.dtype = dtype(param, pointer, "f32");
  if (!isFloatDType(v.type.dtype))
    fail(pointer + "/dtype", "a parameter must be a float tensor");
  v.type.shape = shape(require(param, pointer, "shape"), pointer + "/shape");
  v.init = normalizeInit(param.value("init", json()), pointer + "/init");
  v.pointer = pointer;
  graph.values.push_back(std::move(v));
  return static_cast<int>(graph.values.size()) - 1;
}

void ModelReader::flattenScope(const json &ops, const std::string &pointer,
                               std::map<std::string, int> scope,
                               const std::string &prefix, int depth,
                               std::map<std::string, int> &exported) {
  if (!ops.is_array())
    fail(pointer, "expected an array of ops, got " + jsonKind(ops));
  if (depth > 16)
    fail(pointer, "blocks nest deeper than 16 (a block that calls itself?)");

  // Definitions made by this scope's ops, with duplicate checks.
  std::map<std::string, Definition> defined;
  std::vector<std::vector<std::string>> outputsOf(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    std::string p = pointer + "/" + std::to_string(i);
    const json &op = ops[i];
    if (!op.is_object())
      fail(p, "expected an op object, got " + jsonKind(op));
    std::string kind = requireString(op, p, "op");
    if (kind == "block") {
      checkKeys(op, p, {"name", "op", "block", "inputs", "outputs", "repeat",
                        "description"});
    } else {
      checkKeys(op, p, {"name", "op", "inputs", "attrs", "shape",
                        "description"});
    }
    std::string name = requireString(op, p, "name");
    if (op.contains("outputs")) {
      const json &outs = op["outputs"];
      if (!outs.is_array() || outs.empty())
        fail(p + "/outputs", "expected a non-empty array of names");
      for (const json &o : outs) {
        if (!o.is_string())
          fail(p + "/outputs", "expected names");
        outputsOf[i].push_back(o);
      }
    } else {
      outputsOf[i].push_back(name);
    }
    for (const std::string &n : outputsOf[i]) {
      auto it = defined.find(n);
      if (it != defined.end())
        fail(p + " '" + name + "'", "'" + n + "' is defined twice (first at " +
                                       it->second.pointer + ")");
      if (scope.count(n))
        fail(p + " '" + name + "'",
             "'" + n + "' is defined twice (it is already an input or param)");
      defined[n] = Definition{p, static_cast<int>(i)};
    }
  }

  // Dependencies between this scope's ops, then a stable topological order.
  std::vector<std::vector<std::string>> inputNames(ops.size());
  std::vector<std::vector<int>> users(ops.size());
  std::vector<int> pending(ops.size(), 0);
  for (size_t i = 0; i < ops.size(); ++i) {
    std::string p = pointer + "/" + std::to_string(i);
    std::string where = p + " '" + ops[i]["name"].get<std::string>() + "'";
    const json &ins = ops[i].value("inputs", json::array());
    if (!ins.is_array())
      fail(where, "'inputs' must be an array of names");
    for (const json &in : ins) {
      if (!in.is_string())
        fail(where, "'inputs' must be an array of names, got " + in.dump());
      std::string n = in;
      inputNames[i].push_back(n);
      auto it = defined.find(n);
      if (it != defined.end()) {
        if (it->second.opIndex == (int)i)
          fail(where, "'" + n + "' uses itself (a cycle)");
        users[it->second.opIndex].push_back(static_cast<int>(i));
        ++pending[i];
      } else if (!scope.count(n)) {
        std::vector<std::string> known = keysOf(defined);
        for (const auto &entry : scope)
          known.push_back(entry.first);
        fail(where, "'" + n + "' is not defined" + didYouMean(n, known));
      }
    }
  }
  std::vector<int> order, ready;
  for (size_t i = 0; i < ops.size(); ++i)
    if (!pending[i])
      ready.push_back(static_cast<int>(i));
  while (!ready.empty()) {
    std::sort(ready.begin(), ready.end(), std::greater<int>());
    int i = ready.back();
    ready.pop_back();
    order.push_back(i);
    for (int u : users[i])
      if (--pending[u] == 0)
        ready.push_back(u);
  }
  if (order.size() != ops.size()) {
    // Walk unfinished ops along their unfinished inputs until one repeats.
    int start = 0;
    while (!pending[start])
      ++start;
    std::vector<int> path;
    std::vector<int> seenAt(ops.size(), -1);
    int cur = start;
    while (seenAt[cur] < 0) {
      seenAt[cur] = static_cast<int>(path.size());
      path.push_back(cur);
      for (const std::string &n : inputNames[cur]) {
        auto it = defined.find(n);
        if (it != defined.end() && pending[it->second.opIndex]) {
          cur = it->second.opIndex;
          break;
        }
      }
    }
    std::string cycle;
    for (size_t k = seenAt[cur]; k < path.size(); ++k)
      cycle += ops[path[k]]["name"].get<std::string>() + " -> ";
    cycle += ops[cur]["name"].get<std::string>();
    fail(pointer + "/" + std::to_string(cur) + " '" +
             ops[cur]["name"].get<std::string>() + "'",
         "cycle: " + cycle);
  }

  // Emit in order.
  for (int i : order) {
    std::string p = pointer + "/" + std::to_string(i);
    const json &op = ops[i];
    std::vector<int> operands;
    for (const std::string &n : inputNames[i])
      operands.push_back(scope.at(n));
    std::string name = op["name"];
    if (op["op"] == "block") {
      std::vector<int> outputs;
      expandBlock(op, p, prefix + name, operands, depth, outputs);
      if (outputs.size() != outputsOf[i].size())
        fail(p + " '" + name + "'",
             "block has " + std::to_string(outputs.size()) +
                 " outputs but the call names " +
                 std::to_string(outputsOf[i].size()));
      for (size_t k = 0; k < outputs.size(); ++k)
        scope[outputsOf[i][k]] = outputs[k];
    } else {
      scope[name] = emitOp(op, p, prefix + name, operands);
    }
  }
  exported = std::move(scope);
}

int ModelReader::emitOp(const json &op, const std::string &pointer,
                        const std::string &opName,
                        const std::vector<int> &operands) {
  std::string kind = op["op"];
  std::string where = pointer + " '" + op["name"].get<std::string>() + "'";
  std::optional<ops::OpKind> opKind = modelOpKind(kind);
  if (!opKind) {
    std::vector<std::string> names = modelOpNames();
    names.push_back("block");
    std::string suggestion = didYouMean(kind, names);
    std::string list;
    for (const std::string &name : names)
      list += (list.empty() ? "" : ", ") + name;
    fail(where, "unknown op '" + kind + "'" +
                    (suggestion.empty() ? " (expected one of: " + list + ")"
                                        : suggestion + " (ops: docs/ops.md)"));
  }
  const ops::OpInfo &info = ops::opInfo(*opKind);
  if ((int)operands.size() != info.numInputs)
    fail(where, kind + " takes " + std::to_string(info.numInputs) +
                    " operand" + (info.numInputs == 1 ? "" : "s") + ", got " +
                    std::to_string(operands.size()));

  // Attributes: only known ones, each typed and evaluated, defaults filled.
  json attrs = json::object();
  const json &given = op.value("attrs", json::object());
  if (!given.is_object())
    fail(where, "'attrs' must be an object");
  for (auto it = given.begin(); it != given.end(); ++it) {
    bool known = false;
    for (const ops::AttrInfo &a : info.attrs)
      known |= it.key() == a.name;
    if (!known) {
      std::string list;
      std::vector<std::string> names;
      for (const ops::AttrInfo &a : info.attrs) {
        list += std::string(list.empty() ? "" : ", ") + a.name;
        names.push_back(a.name);
      }
      fail(where,
           kind + " has no attribute '" + it.key() + "'" +
               didYouMean(it.key(), names) +
               (list.empty() ? "" : " (it takes: " + list + ")"),
           pointer + "/attrs/" + it.key());
    }
  }
  for (const ops::AttrInfo &a : info.attrs) {
    std::string ap = pointer + "/attrs/" + a.name;
    auto it = given.find(a.name);
    if (it == given.end()) {
      if (a.required && !hasDerivedDefault(*opKind, a.name))
        fail(where, kind + " needs attribute '" + a.name + "'");
      continue;
    }
    switch (a.type) {
    case ops::AttrType::Bool:
      if (!it->is_boolean())
        fail(ap, "expected true or false, got " + jsonKind(*it));
      attrs[a.name] = it->get<bool>();
      break;
    case ops::AttrType::F32:
      attrs[a.name] = number(*it, ap);
      break;
    case ops::AttrType::I64:
      attrs[a.name] = integer(*it, ap);
      break;
    case ops::AttrType::I64Array: {
      if (!it->is_array())
        fail(ap, "expected an array of integers");
      std::vector<int64_t> values;
      for (size_t k = 0; k < it->size(); ++k)
        values.push_back(integer((*it)[k], ap + "/" + std::to_string(k)));
      attrs[a.name] = values;
      break;
    }
    }
  }
  if (info.resultTypeGiven)
    attrs["shape"] = shape(require(op, where, "shape"), pointer + "/shape");
  else if (op.contains("shape"))
    fail(where, kind + " takes no 'shape' (its result shape is inferred)");

  std::vector<ValueType> types;
  for (int id : operands)
    types.push_back(graph.values[id].type);
  // Negative reduction axes count from the end, as in NumPy.
  if (attrs.contains("axes") && !types.empty())
    for (auto &axis : attrs["axes"])
      if (axis.get<int64_t>() < 0)
        axis = axis.get<int64_t>() + (int64_t)types[0].shape.size();

  // Defaults: those of the op's definition, and those that depend on the
  // operands or the op's name.
  for (const ops::AttrInfo &a : info.attrs) {
    if (attrs.contains(a.name))
      continue;
    if (*opKind == ops::OpKind::Attention && std::string(a.name) == "scale")
      attrs["scale"] =
          1.0 / std::sqrt(types[0].shape.empty()
                              ? 1.0
                              : (double)std::max<int64_t>(
                                    1, types[0].shape.back()));
    else if (*opKind == ops::OpKind::Dropout && std::string(a.name) == "seed")
      attrs["seed"] = static_cast<int64_t>(
          fnv1a(opName, fnv1a(std::to_string(graph.seed))) >> 1);
    else
      setDefinedDefault(attrs, a);
  }

  // The result type, by the op's type rule.
  ValueType result;
  bool typing = false; ///< past the attributes: a type error of the operands
  try {
    json typed = attrs;
    typed.erase("shape");
    ops::OpAttrs parsed = ops::parseAttrs(*opKind, typed);
    std::vector<int64_t> given;
    if (info.resultTypeGiven)
      given = attrs["shape"].get<std::vector<int64_t>>();
    typing = true;
    result = inferResultType(graph, *opKind, parsed, operands,
                             info.resultTypeGiven ? &given : nullptr);
  } catch (const ops::TypeRuleError &e) {
    fail(where, kind + ": " + e.what() +
                    (typing ? declarationNotes(operands) : std::string()));
  } catch (const std::exception &e) {
    fail(where, kind + ": " + e.what());
  }

  Op flat;
  flat.name = opName;
  flat.kind = kind;
  flat.pointer = pointer;
  SourcePosition at = sourceMap ? sourceMap->find(pointer) : SourcePosition{};
  flat.line = at.line;
  flat.column = at.column;
  flat.operands = operands;
  flat.attrs = std::move(attrs);
  flat.block = blockInstance;
  return graph.appendOp(std::move(flat), result);
}

std::string ModelReader::declarationNotes(const std::vector<int> &operands) {
  // A type error is reported at the op; the operand whose shape is wrong
  // may be a parameter or input declared elsewhere, so say where each is
  // declared and with which shape.
  std::string notes;
  std::set<int> seen;
  for (int id : operands) {
    const Value &v = graph.values[size_t(id)];
    if (v.kind == ValueKind::Op || v.pointer.empty() || !seen.insert(id).second)
      continue;
    std::string shapePointer = v.pointer + "/shape";
    notes += std::string("; ") +
             (v.kind == ValueKind::Param ? "param" : "input") + " '" + v.name +
             "' is declared with shape " + ops::formatShape(v.type.shape) +
             " at " + locate(shapePointer) + " (" + shapePointer + ")";
  }
  return notes;
}

void ModelReader::expandBlock(const json &call, const std::string &pointer,
                              const std::string &callName,
                              const std::vector<int> &operands, int depth,
                              std::vector<int> &outputs) {
  std::string where = pointer + " '" + call["name"].get<std::string>() + "'";
  std::string blockName = requireString(call, pointer, "block");
  auto it = blocks.find(blockName);
  if (it == blocks.end())
    fail(where, "unknown block '" + blockName + "'" +
                    didYouMean(blockName, keysOf(blocks)));
  const json &block = *it->second;
  std::string bp = "/blocks/" + blockName;
  int64_t repeat = call.contains("repeat")
                       ? integer(call["repeat"], pointer + "/repeat")
                       : 1;
  if (repeat < 1 || repeat > 100000)
    fail(pointer + "/repeat", "repeat must be in 1..100000, got " +
                                  std::to_string(repeat));

  std::vector<std::string> formals, results;
  for (const char *key : {"inputs", "outputs"}) {
    const json &list = require(block, bp, key);
    if (!list.is_array())
      fail(bp + "/" + key, "expected an array of names");
    for (const json &n : list) {
      if (!n.is_string())
        fail(bp + "/" + key, "expected names, got " + n.dump());
      (std::string(key) == "inputs" ? formals : results).push_back(n);
    }
  }
  if (formals.size() != operands.size())
    fail(where, "block '" + blockName + "' takes " +
                    std::to_string(formals.size()) + " inputs, got " +
                    std::to_string(operands.size()));
  if (repeat > 1 && results.size() != formals.size())
    fail(where, "a repeated block must have as many outputs as inputs (its "
                "outputs feed the next repetition); '" +
                    blockName + "' has " + std::to_string(formals.size()) +
                    " and " + std::to_string(results.size()));

  std::vector<int> current = operands;
  for (int64_t layer = 0; layer < repeat; ++layer) {
    std::string prefix = callName + "." + std::to_string(layer) + ".";
    std::map<std::string, int> scope = globals;
    std::map<std::string, std::string> localPointers;
    for (size_t k = 0; k < formals.size(); ++k) {
      if (scope.count(formals[k]) && !globals.count(formals[k]))
        fail(bp + "/inputs", "'" + formals[k] + "' is defined twice");
      scope[formals[k]] = current[k];
      localPointers[formals[k]] = bp + "/inputs";
    }
    if (block.contains("params")) {
      const json &params = block["params"];
      if (!params.is_array())
        fail(bp + "/params", "expected an array");
      for (size_t k = 0; k < params.size(); ++k) {
        std::string pp = bp + "/params/" + std::to_string(k);
        int id = defineParam(params[k], pp, prefix);
        std::string local = params[k]["name"];
        if (localPointers.count(local))
          fail(pp, "'" + local + "' is defined twice (first at " +
                       localPointers[local] + ")");
        localPointers[local] = pp;
        scope[local] = id;
      }
    }
    std::map<std::string, int> exported;
    bool outermost = blockInstance.empty();
    if (outermost)
      blockInstance = callName + "." + std::to_string(layer);
    flattenScope(require(block, bp, "ops"), bp + "/ops", scope, prefix,
                 depth + 1, exported);
    if (outermost)
      blockInstance.clear();
    current.clear();
    for (const std::string &r : results) {
      auto found = exported.find(r);
      if (found == exported.end())
        fail(bp + "/outputs", "output '" + r + "' is not defined in block '" +
                                  blockName + "'");
      current.push_back(found->second);
    }
  }
  outputs = current;
}

void ModelReader::readLoss() {
  // The loss may name any value; ops inside blocks are reachable by their
  // flattened name (e.g. "h.11.out").
  std::vector<std::string> names, scalars;
  for (const Value &v : graph.values) {
    names.push_back(v.name);
    if (v.kind == ValueKind::Op && v.type.shape.empty() &&
        isFloatDType(v.type.dtype))
      scalars.push_back(v.name);
  }
  if (!root.contains("loss"))
    fail("/loss", "missing field 'loss': the name of the float scalar "
                  "(shape []) an op computes, which the training step "
                  "minimizes" +
                      (scalars.empty()
                           ? std::string(" (no op computes one yet: end with a "
                                         "reduction of all axes)")
                           : ", e.g. \"loss\": \"" + scalars.back() + "\""));
  std::string name = requireString(root, "", "loss");
  int id = -1;
  for (size_t i = 0; i < graph.values.size(); ++i)
    if (graph.values[i].name == name)
      id = static_cast<int>(i);
  if (id < 0)
    fail("/loss", "'" + name + "' is not defined" + didYouMean(name, names));
  const Value &v = graph.values[id];
  if (!v.type.shape.empty() || !isFloatDType(v.type.dtype))
    fail("/loss", "'" + name + "' is " + v.type.str() +
                      "; the loss must be a float scalar (shape [])");
  if (v.kind != ValueKind::Op)
    fail("/loss", "'" + name + "' is an input or parameter, not computed");
  graph.loss = id;
}

void ModelReader::readOptimizer() {
  const json &opt = root.value("optimizer", json{{"kind", "sgd"}});
  checkKeys(opt, "/optimizer", {"kind", "lr", "momentum", "weight_decay",
                                "beta1", "beta2", "eps"});
  std::string kind = kindOf(opt, "/optimizer");
  auto num = [&](const char *key, double fallback) {
    return opt.contains(key) ? number(opt[key], std::string("/optimizer/") + key)
                             : fallback;
  };
  if (kind == "sgd") {
    for (const char *k : {"beta1", "beta2", "eps"})
      if (opt.contains(k))
        fail(std::string("/optimizer/") + k, "sgd has no '" +
                                                 std::string(k) + "'");
    graph.optimizer = json{{"kind", kind},
                           {"lr", num("lr", 0.01)},
                           {"momentum", num("momentum", 0.0)},
                           {"weight_decay", num("weight_decay", 0.0)}};
  } else if (kind == "adamw") {
    if (opt.contains("momentum"))
      fail("/optimizer/momentum", "adamw has no 'momentum' (use beta1)");
    graph.optimizer = json{{"kind", kind},
                           {"lr", num("lr", 1e-3)},
                           {"beta1", num("beta1", 0.9)},
                           {"beta2", num("beta2", 0.999)},
                           {"eps", num("eps", 1e-8)},
                           {"weight_decay", num("weight_decay", 0.01)}};
  } else {
    fail("/optimizer/kind", "unknown optimizer '" + kind + "'" +
                                didYouMean(kind, {"sgd", "adamw"}) +
                                " (expected sgd or adamw)");
  }
  if (graph.optimizer["lr"].get<double>() < 0)
    fail("/optimizer/lr", "the learning rate must not be negative");
}
} // namespace

json toJson(const ModelGraph &graph) {
  json out;
  out["format"] = "remat-flat-model";
  out["version"] = 1;
  out["name"] = graph.name;
  out["seed"] = graph.seed;
  out["config"] = graph.config;
  json values = json::array();
  for (const Value &v : graph.values) {
    json j{{"name", v.name},
           {"kind", v.kind == ValueKind::Input   ? "input"
                    : v.kind == ValueKind::Param ? "param"
                    : v.kind == ValueKind::State ? "state"
                                                 : "op"},
           {"dtype", v.type.dtype},
           {"shape", v.type.shape}};
    if (!v.init.is_null())
      j["init"] = v.init;
    if (!v.data.is_null())
      j["data"] = v.data;
    values.push_back(j);
  }
  out["values"] = values;
  json ops = json::array();
  for (const Op &op : graph.ops) {
    json operands = json::array();
    for (int id : op.operands)
      operands.push_back(graph.values[id].name);
    ops.push_back({{"name", op.name},
                   {"op", op.kind},
                   {"inputs", operands},
                   {"attrs", op.attrs}});
  }
  out["ops"] = ops;
  out["loss"] = graph.values[graph.loss].name;
  out["optimizer"] = graph.optimizer;
  return out;
}

const std::vector<std::string> &modelOpNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (int k = 0; k < ops::kNumOpKinds; ++k)
      if (ops::opInfo(ops::OpKind(k)).inModelFormat)
        n.push_back(ops::opName(ops::OpKind(k)));
    return n;
  }();
  return names;
}

void setDefinedDefault(json &attrs, const ops::AttrInfo &attr) {
  if (attr.type == ops::AttrType::Bool)
    attrs[attr.name] = std::string(attr.defaultText) == "true";
  else if (attr.type == ops::AttrType::I64)
    attrs[attr.name] = std::strtoll(attr.defaultText, nullptr, 10);
  else
    attrs[attr.name] = std::strtod(attr.defaultText, nullptr);
}

ValueType inferResultType(const ModelGraph &graph, ops::OpKind kind,
                          const ops::OpAttrs &attrs,
                          const std::vector<int> &operands,
                          const std::vector<int64_t> *given) {
  const ops::OpInfo &info = ops::opInfo(kind);
  ops::LabeledTypes inputs;
  for (size_t i = 0; i < operands.size(); ++i) {
    const Value &v = graph.values[size_t(operands[i])];
    inputs.types.push_back(toOpsType(v.type));
    inputs.labels.push_back(std::string("operand ") + info.operandNames[i] +
                            " '" + v.name + "'");
  }
  std::vector<ops::TensorType> givenTypes;
  if (given) {
    ValueType r{operands.empty() ? "f32"
                                 : graph.values[size_t(operands[0])].type.dtype,
                *given};
    r.numElements();
    givenTypes.push_back(toOpsType(r));
  }
  ValueType result =
      fromOpsType(ops::inferResultTypes(kind, attrs, inputs, givenTypes).at(0));
  result.bytes();
  return result;
}

std::vector<char> valuesReachingLoss(const ModelGraph &graph) {
  std::vector<char> needed(graph.values.size(), 0);
  needed[size_t(graph.loss)] = 1;
  for (auto it = graph.ops.rbegin(); it != graph.ops.rend(); ++it)
    if (needed[size_t(it->result)])
      for (int v : it->operands)
        needed[size_t(v)] = 1;
  // A state update has no readers; it runs when what it reads is computed.
  for (const Op &op : graph.ops) {
    std::optional<ops::OpKind> kind = ops::parseOpKind(op.kind);
    if (!kind || !ops::opInfo(*kind).updatesState)
      continue;
    bool reads = true;
    for (size_t i = 1; i < op.operands.size(); ++i)
      reads &= needed[size_t(op.operands[i])] != 0;
    if (reads)
      needed[size_t(op.result)] = needed[size_t(op.operands[0])] = 1;
  }
  return needed;
}

ModelGraph loadModel(const std::string &text, const std::string &sourceName,
                     const ModelOptions &options) {
  return ModelReader(sourceName, options).read(text);
}

} // namespace remat::model

//===- ModelReader.cpp - Read, validate and flatten a model file ----------===//
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
// This file runs the steps and holds steps 1, 2 and 4 and the field
// readers; step 3 is Declarations.cpp's (inputs and params) and
// Flatten.cpp's (ops and blocks).
//
//===----------------------------------------------------------------------===//

#include "compiler/json/ModelReader.h"

#include "compiler/Expression.h"
#include "ops/Suggest.h"
#include "runtime/plan/PlanFormat.h"

#include <cmath>
#include <set>

namespace remat::model::json_reader {

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
// Fields with located errors
//===----------------------------------------------------------------------===//

void ModelReader::checkKeys(const json &object, const std::string &pointer,
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

const json &ModelReader::require(const json &object,
                                 const std::string &pointer, const char *key) {
  auto it = object.find(key);
  if (it == object.end())
    fail(pointer + "/" + key, std::string("missing field '") + key + "'");
  return *it;
}

std::string ModelReader::requireString(const json &object,
                                       const std::string &pointer,
                                       const char *key) {
  const json &v = require(object, pointer, key);
  if (!v.is_string() || v.get<std::string>().empty())
    fail(pointer + "/" + key, "expected a non-empty string, got " +
                                  jsonKind(v));
  return v.get<std::string>();
}

std::string ModelReader::kindOf(const json &object,
                                const std::string &pointer) {
  auto it = object.find("kind");
  if (it == object.end())
    return "";
  if (!it->is_string())
    fail(pointer + "/kind", "expected a string, got " + jsonKind(*it));
  return it->get<std::string>();
}

double ModelReader::number(const json &v, const std::string &pointer) {
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

int64_t ModelReader::integer(const json &v, const std::string &pointer) {
  double d = number(v, pointer);
  if (d != std::floor(d) || std::fabs(d) > 9.0e18)
    fail(pointer, "expected an integer, got " + std::to_string(d));
  return static_cast<int64_t>(d);
}

std::vector<int64_t> ModelReader::shape(const json &v,
                                       const std::string &pointer) {
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

std::string ModelReader::dtype(const json &object, const std::string &pointer,
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

//===----------------------------------------------------------------------===//
// The steps
//===----------------------------------------------------------------------===//

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
  // --ranks N and --microbatches K: the step is one slice of the batch.
  if (int64_t parts = options.ranks * options.microbatches; parts > 1) {
    std::string flags = options.splitFlags();
    if (!graph.config.count("batch"))
      throw OptionError(sourceName + ": " + flags +
                        " needs the model's config variable 'batch' (the "
                        "batch to split)");
    double global = graph.config["batch"];
    if (global == std::floor(global) && global >= 1 && global < double(parts))
      throw OptionError(sourceName + ": " + flags + " splits the batch into " +
                        std::to_string(parts) + " slices, more than its " +
                        std::to_string(int64_t(global)) +
                        " samples (config 'batch')");
    // The ranks' shares are equal; a rank's micro-batches may differ by one
    // sample.
    if (global != std::floor(global) || global < double(parts))
      throw OptionError(sourceName + ": " + flags +
                        " needs a whole number of samples in config 'batch', "
                        "got " +
                        nlohmann::json(global).dump());
    if (std::fmod(global, double(options.ranks)) != 0)
      throw OptionError(
          sourceName + ": --ranks " + std::to_string(options.ranks) +
          " does not divide the global batch " +
          std::to_string(int64_t(global)) +
          " (config 'batch') into equal slices; pick a batch that is a "
          "multiple of " +
          std::to_string(options.ranks) + " (--set batch=...)");
    int64_t rankBatch = int64_t(global) / options.ranks;
    graph.config["batch"] = double(options.microbatchSamples(rankBatch));
    graph.ranks = options.ranks;
    graph.shardOptimizer = options.shardOptimizer && options.ranks > 1;
    graph.microbatches = options.microbatches;
    graph.stepSamples = rankBatch;
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

} // namespace remat::model::json_reader

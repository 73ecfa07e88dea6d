//===- Declarations.cpp - A model's inputs and params ---------------------===//
//
// Step 3 of the model reader, first part: the inputs with their synthetic
// data and the params with their initializers (global ones and a block's,
// instantiated per repetition).
//
//===----------------------------------------------------------------------===//

#include "compiler/json/ModelReader.h"

namespace remat::model::json_reader {

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

} // namespace remat::model::json_reader

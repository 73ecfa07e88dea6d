//===- ModelReader.h - Reading a JSON model into a ModelGraph ---*- C++ -*-===//
//
// The state of one read of a JSON model (docs/model-format.md) and the
// helpers that read its fields with located errors, private to the reader's
// files: ModelReader.cpp (the steps, the config, the loss and optimizer),
// Declarations.cpp (inputs and params) and Flatten.cpp (ops and blocks).
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_COMPILER_JSON_MODELREADER_H
#define REMAT_COMPILER_JSON_MODELREADER_H

#include "compiler/JsonLocation.h"
#include "compiler/ModelGraph.h"

#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace remat::model::json_reader {

using nlohmann::json;

/// "a string", "an array", ... for messages.
std::string jsonKind(const json &j);

/// One read of a model file: read() parses it, settles the config, defines
/// the inputs and params, flattens the ops and checks the loss.
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

  /// Checks that `object` is an object whose fields are all in `allowed`.
  void checkKeys(const json &object, const std::string &pointer,
                 std::initializer_list<const char *> allowed);
  /// The field `key` of `object`, which must be present.
  const json &require(const json &object, const std::string &pointer,
                      const char *key);
  /// The field `key` of `object`, a non-empty string.
  std::string requireString(const json &object, const std::string &pointer,
                            const char *key);
  /// The optional string field "kind" of `object` ("" when absent).
  std::string kindOf(const json &object, const std::string &pointer);
  /// A number, or an expression of the config (compiler/Expression.h).
  double number(const json &v, const std::string &pointer);
  /// A number that is an integer.
  int64_t integer(const json &v, const std::string &pointer);
  /// A shape: positive integer dims, at most 2^62 bytes of f32.
  std::vector<int64_t> shape(const json &v, const std::string &pointer);
  /// The optional field "dtype" of `object`, a known dtype (`fallback`
  /// when absent).
  std::string dtype(const json &object, const std::string &pointer,
                    const std::string &fallback);

  // Steps 2 and 4 (ModelReader.cpp).
  void readConfig();
  void readLoss();
  void checkOpsReachLoss();
  void warnUnusedParams();
  void readOptimizer();

  // Step 3: inputs and params (Declarations.cpp).
  void readInputs();
  int defineParam(const json &param, const std::string &pointer,
                  const std::string &prefix);
  json normalizeInit(const json &init, const std::string &pointer);
  json normalizeData(const json &data, const std::string &pointer,
                     const ValueType &type);

  // Step 3: ops and blocks (Flatten.cpp).
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
  std::string declarationNotes(const std::vector<int> &operands);
};

} // namespace remat::model::json_reader

#endif // REMAT_COMPILER_JSON_MODELREADER_H

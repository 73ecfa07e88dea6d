//===- JsonLocation.h - Line and column of a JSON pointer -------*- C++ -*-===//
//
// nlohmann::json keeps no source positions, so a model error, which the
// reader knows by JSON pointer, is placed in the file by scanning the text
// once more: JsonSourceMap records where each value starts. The reader
// builds one only when it has something to report.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_COMPILER_JSONLOCATION_H
#define REMAT_COMPILER_JSONLOCATION_H

#include <cstddef>
#include <map>
#include <optional>
#include <string>

namespace remat::model {

/// A 1-based line and column (columns count characters, not bytes); line 0
/// means unknown.
struct SourcePosition {
  size_t line = 0;
  size_t column = 0;

  bool known() const { return line != 0; }
  std::string str() const; ///< "12:5"
};

/// The position of byte `offset` of `text` (an offset past the end gives
/// the position just after the last character).
SourcePosition positionOfByte(const std::string &text, size_t offset);

/// Where each value of a JSON text starts, by JSON pointer (RFC 6901: "" is
/// the root, "/ops/3/inputs/0" an array element, "~0" and "~1" escape '~'
/// and '/' in keys). The scan follows the JSON grammar and stops at the
/// first syntax error or past 1000 levels of nesting, keeping what it saw.
class JsonSourceMap {
public:
  explicit JsonSourceMap(const std::string &text);

  /// The position of the value at `pointer`, or of its nearest enclosing
  /// value the text has (a pointer to a missing field gives its object's
  /// position); unknown when not even the root was scanned.
  SourcePosition find(const std::string &pointer) const;

  /// The first number literal a double cannot hold ("1e999"), which
  /// nlohmann::json rejects without a position.
  struct Literal {
    std::string pointer;
    SourcePosition position;
    std::string text;
  };
  const std::optional<Literal> &overflowingNumber() const { return overflow; }

private:
  std::map<std::string, SourcePosition> positions;
  std::optional<Literal> overflow;
  friend class JsonScanner;
};

} // namespace remat::model

#endif // REMAT_COMPILER_JSONLOCATION_H

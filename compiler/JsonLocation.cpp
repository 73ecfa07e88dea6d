//===- JsonLocation.cpp - Line and column of a JSON pointer ---------------===//
#include "compiler/JsonLocation.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace remat::model {

std::string SourcePosition::str() const {
  return std::to_string(line) + ":" + std::to_string(column);
}

namespace {
/// UTF-8 continuation bytes do not start a character.
bool startsCharacter(char c) {
  return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
}

void appendUtf8(std::string &out, unsigned codePoint) {
  if (codePoint < 0x80) {
    out += char(codePoint);
  } else if (codePoint < 0x800) {
    out += char(0xC0 | (codePoint >> 6));
    out += char(0x80 | (codePoint & 0x3F));
  } else if (codePoint < 0x10000) {
    out += char(0xE0 | (codePoint >> 12));
    out += char(0x80 | ((codePoint >> 6) & 0x3F));
    out += char(0x80 | (codePoint & 0x3F));
  } else {
    out += char(0xF0 | (codePoint >> 18));
    out += char(0x80 | ((codePoint >> 12) & 0x3F));
    out += char(0x80 | ((codePoint >> 6) & 0x3F));
    out += char(0x80 | (codePoint & 0x3F));
  }
}

std::string escapePointerToken(const std::string &key) {
  std::string out;
  for (char c : key)
    out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}
} // namespace

SourcePosition positionOfByte(const std::string &text, size_t offset) {
  SourcePosition p{1, 1};
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++p.line;
      p.column = 1;
    } else if (startsCharacter(text[i])) {
      ++p.column;
    }
  }
  return p;
}

/// A recursive-descent walk of the JSON grammar that records positions
/// instead of building values. Throws nothing: `ok` turns false at the
/// first thing it cannot read, and the walk unwinds.
class JsonScanner {
public:
  JsonScanner(const std::string &text, JsonSourceMap &map)
      : text(text), map(map) {}

  void run() {
    skipSpace();
    value("", 0);
  }

private:
  static constexpr int kMaxDepth = 1000;
  const std::string &text;
  JsonSourceMap &map;
  size_t i = 0;
  SourcePosition at{1, 1};
  bool ok = true;

  bool atEnd() const { return i >= text.size(); }
  char peek() const { return atEnd() ? '\0' : text[i]; }
  void advance() {
    if (text[i] == '\n') {
      ++at.line;
      at.column = 1;
    } else if (i + 1 < text.size() && startsCharacter(text[i + 1])) {
      ++at.column;
    }
    ++i;
  }
  void skipSpace() {
    while (!atEnd() && (peek() == ' ' || peek() == '\t' || peek() == '\n' ||
                        peek() == '\r'))
      advance();
  }
  bool expect(char c) {
    skipSpace();
    if (peek() != c)
      return ok = false;
    advance();
    return true;
  }

  void value(const std::string &pointer, int depth) {
    if (!ok || depth > kMaxDepth || atEnd()) {
      ok = false;
      return;
    }
    map.positions[pointer] = at;
    char c = peek();
    if (c == '{')
      object(pointer, depth);
    else if (c == '[')
      array(pointer, depth);
    else if (c == '"')
      string();
    else if (c == '-' || (c >= '0' && c <= '9'))
      number(pointer);
    else
      word();
  }

  void object(const std::string &pointer, int depth) {
    advance(); // {
    skipSpace();
    if (peek() == '}') {
      advance();
      return;
    }
    while (ok) {
      skipSpace();
      if (peek() != '"') {
        ok = false;
        return;
      }
      std::string key = string();
      if (!expect(':'))
        return;
      skipSpace();
      value(pointer + "/" + escapePointerToken(key), depth + 1);
      skipSpace();
      if (peek() == ',') {
        advance();
        continue;
      }
      expect('}');
      return;
    }
  }

  void array(const std::string &pointer, int depth) {
    advance(); // [
    skipSpace();
    if (peek() == ']') {
      advance();
      return;
    }
    for (size_t index = 0; ok; ++index) {
      skipSpace();
      value(pointer + "/" + std::to_string(index), depth + 1);
      skipSpace();
      if (peek() == ',') {
        advance();
        continue;
      }
      expect(']');
      return;
    }
  }

  /// Reads a string literal and returns its decoded text.
  std::string string() {
    std::string out;
    advance(); // "
    while (!atEnd() && peek() != '"') {
      char c = peek();
      advance();
      if (c != '\\') {
        out += c;
        continue;
      }
      if (atEnd())
        break;
      char e = peek();
      advance();
      switch (e) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'u': {
        unsigned codePoint = hex4();
        if (codePoint >= 0xD800 && codePoint < 0xDC00 && peek() == '\\' &&
            i + 1 < text.size() && text[i + 1] == 'u') {
          advance();
          advance();
          unsigned low = hex4();
          codePoint = 0x10000 + ((codePoint - 0xD800) << 10) + (low - 0xDC00);
        }
        appendUtf8(out, codePoint);
        break;
      }
      default:
        out += e; // " \ /
      }
    }
    if (atEnd()) {
      ok = false;
      return out;
    }
    advance(); // "
    return out;
  }

  unsigned hex4() {
    unsigned v = 0;
    for (int k = 0; k < 4 && !atEnd(); ++k) {
      char c = peek();
      advance();
      v = v * 16 + (c >= 'a'   ? c - 'a' + 10
                    : c >= 'A' ? c - 'A' + 10
                               : c - '0');
    }
    return v;
  }

  void number(const std::string &pointer) {
    SourcePosition start = at;
    size_t begin = i;
    while (!atEnd() &&
           (std::isdigit(static_cast<unsigned char>(peek())) || peek() == '-' ||
            peek() == '+' || peek() == '.' || peek() == 'e' || peek() == 'E'))
      advance();
    std::string literal = text.substr(begin, i - begin);
    if (!map.overflow && std::isinf(std::strtod(literal.c_str(), nullptr)))
      map.overflow = JsonSourceMap::Literal{pointer, start, literal};
  }

  /// true, false, null.
  void word() {
    if (!std::isalpha(static_cast<unsigned char>(peek())))
      ok = false;
    while (!atEnd() && std::isalpha(static_cast<unsigned char>(peek())))
      advance();
  }
};

JsonSourceMap::JsonSourceMap(const std::string &text) {
  JsonScanner(text, *this).run();
}

SourcePosition JsonSourceMap::find(const std::string &pointer) const {
  std::string p = pointer;
  for (;;) {
    auto it = positions.find(p);
    if (it != positions.end())
      return it->second;
    if (p.empty())
      return {};
    p.erase(p.rfind('/') == std::string::npos ? 0 : p.rfind('/'));
  }
}

} // namespace remat::model

//===- Expression.cpp - The model format's config expressions -------------===//
#include "compiler/Expression.h"

#include "ops/Suggest.h"

#include <cctype>
#include <cmath>
#include <stdexcept>

namespace remat::model {

namespace {
/// Recursive-descent evaluator for config expressions.
class ExpressionParser {
public:
  ExpressionParser(const std::string &text,
                   const std::map<std::string, double> &config)
      : text(text), config(config) {}

  double parse() {
    double v = parseSum();
    skipSpace();
    if (pos != text.size())
      fail("unexpected '" + text.substr(pos, 1) + "'");
    return v;
  }

private:
  const std::string &text;
  const std::map<std::string, double> &config;
  size_t pos = 0;
  /// Open parentheses, sqrt( and unary signs around the current atom: the
  /// parser recurses once per level, so "((((...1" a million deep would
  /// overflow the stack.
  int depth = 0;
  static constexpr int kMaxDepth = 200;

  [[noreturn]] void fail(const std::string &why) {
    // A long expression is named by its start only.
    std::string shown =
        text.size() > 80 ? text.substr(0, 80) + "..." : text;
    throw std::invalid_argument("in expression \"" + shown + "\": " + why);
  }
  /// Enters one level of nesting for the lifetime of the guard.
  struct Nested {
    explicit Nested(ExpressionParser &p) : p(p) {
      if (++p.depth > kMaxDepth)
        p.fail("nested more than " + std::to_string(kMaxDepth) +
               " levels deep");
    }
    ~Nested() { --p.depth; }
    ExpressionParser &p;
  };
  void skipSpace() {
    while (pos < text.size() && std::isspace((unsigned char)text[pos]))
      ++pos;
  }
  bool eat(char c) {
    skipSpace();
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  double parseSum() {
    double v = parseProduct();
    while (true) {
      if (eat('+'))
        v += parseProduct();
      else if (eat('-'))
        v -= parseProduct();
      else
        return v;
    }
  }
  double parseProduct() {
    double v = parseUnary();
    while (true) {
      if (eat('*')) {
        v *= parseUnary();
      } else if (eat('/')) {
        double d = parseUnary();
        if (d == 0)
          fail("division by zero");
        v /= d;
      } else if (eat('%')) {
        double d = parseUnary();
        if (d == 0)
          fail("division by zero");
        v = std::fmod(v, d);
      } else {
        return v;
      }
    }
  }
  double parseUnary() {
    Nested guard(*this);
    if (eat('-'))
      return -parseUnary();
    if (eat('+'))
      return parseUnary();
    return parseAtom();
  }
  double parseAtom() {
    skipSpace();
    if (eat('(')) {
      double v = parseSum();
      if (!eat(')'))
        fail("missing ')'");
      return v;
    }
    if (pos < text.size() &&
        (std::isdigit((unsigned char)text[pos]) || text[pos] == '.')) {
      size_t used = 0;
      double v = 0;
      try {
        v = std::stod(text.substr(pos), &used);
      } catch (const std::out_of_range &) {
        fail("number out of range at '" + text.substr(pos, 20) + "'");
      } catch (const std::invalid_argument &) {
        fail("malformed number at '" + text.substr(pos, 20) + "'");
      }
      pos += used;
      return v;
    }
    if (pos < text.size() &&
        (std::isalpha((unsigned char)text[pos]) || text[pos] == '_')) {
      size_t start = pos;
      while (pos < text.size() &&
             (std::isalnum((unsigned char)text[pos]) || text[pos] == '_'))
        ++pos;
      std::string name = text.substr(start, pos - start);
      if (name == "sqrt") {
        if (!eat('('))
          fail("expected '(' after sqrt");
        double v = parseSum();
        if (!eat(')'))
          fail("missing ')'");
        if (v < 0)
          fail("sqrt of a negative number");
        return std::sqrt(v);
      }
      auto it = config.find(name);
      if (it == config.end()) {
        std::vector<std::string> names;
        for (const auto &entry : config)
          names.push_back(entry.first);
        fail("unknown config variable '" + name + "'" +
             didYouMean(name, names));
      }
      return it->second;
    }
    if (pos >= text.size())
      fail("unexpected end");
    fail("unexpected '" + text.substr(pos, 1) + "'");
  }
};
} // namespace

double evaluateExpression(const std::string &text,
                          const std::map<std::string, double> &config) {
  return ExpressionParser(text, config).parse();
}

} // namespace remat::model

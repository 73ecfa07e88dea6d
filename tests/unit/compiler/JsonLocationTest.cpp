// Tests of the JSON pointer -> line:column map (compiler/JsonLocation.h)
// that places model errors in the file.

#include "compiler/JsonLocation.h"

#include <catch2/catch.hpp>

using remat::model::JsonSourceMap;
using remat::model::positionOfByte;

namespace {
std::string at(const JsonSourceMap &map, const std::string &pointer) {
  auto p = map.find(pointer);
  return p.known() ? p.str() : "unknown";
}
} // namespace

TEST_CASE("every value of a JSON text is found by its pointer", "[compiler]") {
  std::string text = "{\n"
                     "  \"a\": 1,\n"
                     "  \"ops\": [\n"
                     "    { \"name\": \"h\", \"inputs\": [\"x\", \"w\"] },\n"
                     "    {\"name\":\"y\"}\n"
                     "  ],\n"
                     "  \"s/t\": {\"~k\": null}\n"
                     "}\n";
  JsonSourceMap map(text);
  CHECK(at(map, "") == "1:1");
  CHECK(at(map, "/a") == "2:8");
  CHECK(at(map, "/ops") == "3:10");
  CHECK(at(map, "/ops/0") == "4:5");
  CHECK(at(map, "/ops/0/name") == "4:15");
  CHECK(at(map, "/ops/0/inputs/1") == "4:36");
  CHECK(at(map, "/ops/1/name") == "5:13");
  // RFC 6901 escapes: '/' is ~1 and '~' is ~0 in a key.
  CHECK(at(map, "/s~1t/~0k") == "7:17");
  CHECK(map.overflowingNumber() == std::nullopt);
}

TEST_CASE("a pointer the text lacks gives its nearest enclosing value",
          "[compiler]") {
  std::string text = "{\"ops\": [\n  {\"name\": \"h\"}\n]}";
  JsonSourceMap map(text);
  // A missing field of /ops/0 is placed at /ops/0's object.
  CHECK(at(map, "/ops/0/attrs/axes") == "2:3");
  CHECK(at(map, "/loss") == "1:1");
  CHECK(at(JsonSourceMap(""), "/loss") == "unknown");
}

TEST_CASE("columns count characters, and strings may hold escapes",
          "[compiler]") {
  // "é" is two bytes of UTF-8, "\"" and "\u00e9" escapes inside strings.
  std::string text = "{\"n\u00e9\": \"\\\"\\u00e9]\", \"b\": 2}";
  JsonSourceMap map(text);
  CHECK(at(map, "/n\u00e9") == "1:8");
  CHECK(at(map, "/b") == "1:26");
  CHECK(positionOfByte("ab\ncd", 4).str() == "2:2");
  CHECK(positionOfByte("\u00e9x", 2).str() == "1:2");
}

TEST_CASE("the first number literal beyond a double is found", "[compiler]") {
  JsonSourceMap map("{\"config\": {\"ok\": 1e300,\n  \"big\": -1e999}}");
  REQUIRE(map.overflowingNumber());
  CHECK(map.overflowingNumber()->pointer == "/config/big");
  CHECK(map.overflowingNumber()->position.str() == "2:10");
  CHECK(map.overflowingNumber()->text == "-1e999");
}

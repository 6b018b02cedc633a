// The JSON writer (cusnap/common/json_writer.h): escaping of control characters, quotes and
// backslashes; UTF-8 kept when well-formed and replaced when not; numbers exact or shortest;
// NaN and infinities as null; the layout with and without indentation.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "cusnap/common/json_writer.h"

using cusnap::common::JsonWriter;

namespace {

std::string q(std::string_view text) { return JsonWriter::quote(text); }

}  // namespace

TEST_CASE("json strings: quotes, backslashes and every control character", "[json]") {
  CHECK(q("") == R"("")");
  CHECK(q("plain text") == R"("plain text")");
  CHECK(q("say \"hi\"") == R"("say \"hi\"")");
  CHECK(q("C:\\dir\\") == R"("C:\\dir\\")");
  CHECK(q("/") == R"("/")");  // the solidus needs no escape
  CHECK(q("\b\f\n\r\t") == R"("\b\f\n\r\t")");
  CHECK(q(std::string_view("a\0b", 3)) == R"("a\u0000b")");
  CHECK(q("\x01\x1f") == R"("\u0001\u001f")");
  CHECK(q("\x7f") == "\"\x7f\"");  // DEL is not a control character for JSON
  for (int c = 0; c < 0x20; ++c) {
    std::string escaped = q(std::string(1, static_cast<char>(c)));
    INFO("character " << c << " -> " << escaped);
    CHECK(escaped.size() > 3);
    CHECK(escaped[1] == '\\');
    for (char e : escaped) CHECK(static_cast<unsigned char>(e) >= 0x20);
  }
}

TEST_CASE("json strings: well-formed UTF-8 is kept, anything else becomes U+FFFD", "[json]") {
  const std::string fffd = "\xEF\xBF\xBD";
  CHECK(q("caf\xC3\xA9") == "\"caf\xC3\xA9\"");                  // U+00E9
  CHECK(q("\xE2\x82\xAC") == "\"\xE2\x82\xAC\"");                // U+20AC
  CHECK(q("\xF0\x9F\x98\x80") == "\"\xF0\x9F\x98\x80\"");        // U+1F600
  CHECK(q("\xF4\x8F\xBF\xBF") == "\"\xF4\x8F\xBF\xBF\"");        // U+10FFFF, the last code point
  CHECK(q("\xEF\xBF\xBD") == "\"" + fffd + "\"");                // U+FFFD itself
  CHECK(q("\x80") == "\"" + fffd + "\"");                        // stray continuation byte
  CHECK(q("\xC3") == "\"" + fffd + "\"");                        // truncated sequence
  CHECK(q("\xC3(") == "\"" + fffd + "(\"");                      // bad continuation
  CHECK(q("\xC0\xAF") == "\"" + fffd + fffd + "\"");             // overlong '/'
  CHECK(q("\xE0\x80\xAF") == "\"" + fffd + fffd + fffd + "\"");  // overlong, 3 bytes
  CHECK(q("\xED\xA0\x80") == "\"" + fffd + fffd + fffd + "\"");  // surrogate U+D800
  CHECK(q("\xF4\x90\x80\x80") == "\"" + fffd + fffd + fffd + fffd + "\"");  // above U+10FFFF
  CHECK(q("\xFF") == "\"" + fffd + "\"");
  CHECK(q("ok\xE2\x82") == "\"ok" + fffd + fffd + "\"");  // truncated at the end
}

TEST_CASE("json numbers: integers exact, doubles shortest, NaN and infinities null", "[json]") {
  JsonWriter j;
  j.begin_array();
  j.num(0)
      .num(-1)
      .num(std::numeric_limits<int64_t>::min())
      .num(std::numeric_limits<uint64_t>::max());
  j.num(uint8_t{255}).num(int16_t{-300});
  j.real(0.1).real(-0.0).real(1e300).real(2.5e-8).real(1.0 / 3.0);
  j.real(std::nan("")).real(std::numeric_limits<double>::infinity());
  j.real(-std::numeric_limits<double>::infinity());
  j.end_array();
  CHECK(j.text() ==
        "[0,-1,-9223372036854775808,18446744073709551615,255,-300,0.1,-0,1e+300,2.5e-08,"
        "0.3333333333333333,null,null,null]");
}

TEST_CASE("json structure: compact and indented", "[json]") {
  auto build = [](JsonWriter& j) {
    j.begin_object();
    j.key("name").str("k\"1");
    j.key("empty").begin_object().end_object();
    j.key("none").begin_array().end_array();
    j.key("list")
        .begin_array()
        .num(1)
        .boolean(true)
        .null()
        .begin_object()
        .key("x")
        .num(2)
        .end_object()
        .end_array();
    j.key("ok").boolean(false);
    j.end_object();
  };
  JsonWriter compact;
  build(compact);
  CHECK(compact.text() ==
        R"({"name":"k\"1","empty":{},"none":[],"list":[1,true,null,{"x":2}],"ok":false})");

  JsonWriter pretty(2);
  build(pretty);
  CHECK(pretty.text() ==
        "{\n"
        "  \"name\": \"k\\\"1\",\n"
        "  \"empty\": {},\n"
        "  \"none\": [],\n"
        "  \"list\": [\n"
        "    1,\n"
        "    true,\n"
        "    null,\n"
        "    {\n"
        "      \"x\": 2\n"
        "    }\n"
        "  ],\n"
        "  \"ok\": false\n"
        "}");
  std::string taken = pretty.take();
  CHECK(taken.back() == '}');
}

TEST_CASE("json keys are escaped like values", "[json]") {
  JsonWriter j;
  j.begin_object().key("a\nb\xFF").num(1).end_object();
  CHECK(j.text() == "{\"a\\nb\xEF\xBF\xBD\":1}");
}

// The JSON reader (cusnap/common/json_reader.h): every value type, escapes and surrogate pairs,
// exact 64-bit integers, member order, errors with their position, the nesting limit, and
// reading back what the JSON writer writes.
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <string>

#include "cusnap/common/json_reader.h"
#include "cusnap/common/json_writer.h"

using cusnap::common::JsonValue;
using cusnap::common::JsonWriter;

TEST_CASE("json reader: values, members in order, exact integers", "[json]") {
  std::string error;
  auto v = JsonValue::parse(
      R"( {"a": null, "b": true, "c": false, "n": -12.5e1, "big": 18446744073709551615,
          "neg": -9223372036854775808, "s": "x", "arr": [1, [], {}], "a": 2} )",
      &error);
  REQUIRE(v);
  REQUIRE(v->is_object());
  REQUIRE(v->members().size() == 9);
  CHECK(v->members()[0].first == "a");
  CHECK(v->find("a")->is_null());  // the first member of that name
  CHECK(v->find("b")->as_bool() == true);
  CHECK(v->find("c")->as_bool() == false);
  CHECK(v->find("n")->as_double() == -125.0);
  CHECK(!v->find("n")->as_uint());
  CHECK(v->find("big")->as_uint() == std::numeric_limits<uint64_t>::max());
  CHECK(!v->find("big")->as_int());
  CHECK(v->find("neg")->as_int() == std::numeric_limits<int64_t>::min());
  CHECK(*v->find("s")->as_string() == "x");
  CHECK(v->find("arr")->elements().size() == 3);
  CHECK(v->find("arr")->elements()[1].is_array());
  CHECK(v->find("arr")->elements()[2].is_object());
  CHECK(v->find("missing") == nullptr);
  CHECK(v->find("s")->find("x") == nullptr);  // not an object
}

TEST_CASE("json reader: string escapes and surrogate pairs", "[json]") {
  auto v = JsonValue::parse(R"("q\" b\\ s\/ \b\f\n\r\t \u0041\u00e9\u20ac\ud83d\ude00")");
  REQUIRE(v);
  CHECK(*v->as_string() == "q\" b\\ s/ \b\f\n\r\t A\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
  CHECK(!JsonValue::parse(R"("\ud83d")"));
  CHECK(!JsonValue::parse(R"("\ude00")"));
  CHECK(!JsonValue::parse(R"("\ud83d\u0041")"));
  CHECK(!JsonValue::parse(R"("\x")"));
  CHECK(!JsonValue::parse("\"a\tb\""));  // raw control character
}

TEST_CASE("json reader: malformed text is refused with its position", "[json]") {
  std::string error;
  CHECK(!JsonValue::parse("{\"a\": 1,\n  \"b\" 2}", &error));
  CHECK(error == "line 2, column 7: expected ':' after a name");
  for (const char* bad : {"", "[1,]", "{\"a\":1,}", "01", "1.", "-", "1e", "tru", "[1] x", "{1:2}",
                          "\"open", "[1 2]", "nan"}) {
    INFO(bad);
    CHECK(!JsonValue::parse(bad, &error));
    CHECK(!error.empty());
  }
  std::string deep(300, '[');
  deep += std::string(300, ']');
  CHECK(!JsonValue::parse(deep, &error));
  CHECK(error.find("deeper than 256") != std::string::npos);
  std::string ok(200, '[');
  ok += std::string(200, ']');
  CHECK(JsonValue::parse(ok));
}

TEST_CASE("json reader: reads back what the writer writes", "[json]") {
  JsonWriter w(2);
  w.begin_object();
  w.key("text").str("tab\there \xE2\x82\xAC \x01");
  w.key("u").num(std::numeric_limits<uint64_t>::max());
  w.key("i").num(std::numeric_limits<int64_t>::min());
  w.key("d").real(0.1);
  w.key("tiny").real(5e-324);
  w.key("list").begin_array().boolean(true).null().end_array();
  w.end_object();
  auto v = JsonValue::parse(w.text());
  REQUIRE(v);
  CHECK(*v->find("text")->as_string() == "tab\there \xE2\x82\xAC \x01");
  CHECK(v->find("u")->as_uint() == std::numeric_limits<uint64_t>::max());
  CHECK(v->find("i")->as_int() == std::numeric_limits<int64_t>::min());
  CHECK(v->find("d")->as_double() == 0.1);
  CHECK(v->find("tiny")->as_double() == 5e-324);
  CHECK(v->find("list")->elements()[0].as_bool() == true);
  CHECK(v->find("list")->elements()[1].is_null());
}

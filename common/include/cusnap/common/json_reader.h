// The one JSON reader of cusnap: reads back the documents cusnap writes with its JSON writer
// (json_writer.h), the replay report first of all (`cusnap compare`, compare/).
//
// Input: RFC 8259 text, UTF-8. Strings are decoded (every escape, \uXXXX surrogate pairs joined;
// a lone surrogate is an error); numbers keep their text, so 64-bit integers read back exactly
// (as_uint / as_int) as well as as doubles. Object members keep their order; find() returns the
// first member of a name. Nesting deeper than kMaxDepth is refused (hostile input cannot exhaust
// the stack). No exceptions but std::bad_alloc; no dependency beyond libstdc++.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cusnap::common {

class JsonValue {
 public:
  enum class Type : uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };
  static constexpr int kMaxDepth = 256;

  JsonValue() = default;

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::kNull; }
  bool is_bool() const { return type_ == Type::kBool; }
  bool is_number() const { return type_ == Type::kNumber; }
  bool is_string() const { return type_ == Type::kString; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_object() const { return type_ == Type::kObject; }

  // The value when it has that type (numbers: when the text is an integer in range), else none.
  std::optional<bool> as_bool() const;
  std::optional<double> as_double() const;
  std::optional<uint64_t> as_uint() const;
  std::optional<int64_t> as_int() const;
  const std::string* as_string() const { return is_string() ? &text_ : nullptr; }
  // A number's text as written.
  const std::string& number_text() const { return text_; }

  // Arrays: the elements; objects: the members (name, value) in order. Empty otherwise.
  const std::vector<JsonValue>& elements() const { return elements_; }
  const std::vector<std::pair<std::string, JsonValue>>& members() const { return members_; }
  // The first member called `name` of an object, or nullptr (also when this is no object).
  const JsonValue* find(std::string_view name) const;

  // Parses one JSON text (surrounding whitespace allowed, nothing else). On failure: none, and
  // `error` (when given) says what is wrong and at which line and column.
  static std::optional<JsonValue> parse(std::string_view text, std::string* error = nullptr);

 private:
  friend class JsonParser;
  Type type_ = Type::kNull;
  bool bool_ = false;
  std::string text_;  // a string's contents, a number's text
  std::vector<JsonValue> elements_;
  std::vector<std::pair<std::string, JsonValue>> members_;
};

}  // namespace cusnap::common

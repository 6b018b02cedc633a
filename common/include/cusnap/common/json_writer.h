// One small streaming JSON writer for the JSON documents cusnap writes itself: the replay report
// (replayer/report.cpp) and the emulator's usage statistics (CUSNAP_EMU_STATS,
// emulator/driver/stats.cpp), whose schemas are documented in docs/schemas/, and the expectations
// format/tools/sample_writer.cpp writes for the Python reader test.
//
// The rule: a document that serialises Cap'n Proto records (`cusnap info --json`, `cusnap dump
// --json`) is written by Cap'n Proto's JSON codec and its schema is the .capnp file; every other
// JSON document of cusnap is written with this writer and documented in docs/schemas/. No other
// JSON is built by hand.
//
// Output (RFC 8259, always valid UTF-8):
//   * strings (values and keys): `"` and `\` are escaped, and the control characters U+0000 to
//     U+001F: \b \f \n \r \t by name, the others as \u00XX. Well-formed UTF-8 is copied as is
//     (U+007F and everything above it unescaped); a byte that does not begin a well-formed UTF-8
//     sequence (stray continuation byte, overlong form, surrogate, beyond U+10FFFF, truncated
//     sequence) is written as U+FFFD, one per such byte.
//   * integers exactly (any width, signed or not); doubles in the shortest form that reads back
//     as the same double (std::to_chars), -0 as -0; NaN and the infinities, which JSON cannot
//     express, as null.
//   * keys in the order they are written (duplicates are the caller's business); indent 0 writes
//     everything on one line, indent n > 0 one member or element per line, n spaces per level,
//     and a space after each colon.
// Calls must nest (a key before every value in an object, none in an array); nothing checks it.
// No exceptions but std::bad_alloc; no dependency beyond libstdc++: the emulator links it.
#pragma once

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace cusnap::common {

class JsonWriter {
 public:
  explicit JsonWriter(int indent = 0) : indent_(indent) {}

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view name);

  JsonWriter& str(std::string_view text);
  template <std::integral T>
  requires(!std::same_as<T, bool>) JsonWriter& num(T value) {
    if constexpr (std::is_signed_v<T>) {
      return integer(static_cast<int64_t>(value));
    } else {
      return unsigned_integer(static_cast<uint64_t>(value));
    }
  }
  JsonWriter& real(double value);
  JsonWriter& boolean(bool value);
  JsonWriter& null();

  // The document so far (complete once every begin_* has its end_*), without a final newline.
  const std::string& text() const { return out_; }
  std::string take() { return std::move(out_); }

  // `text` as a JSON string literal, quotes included (the escaping above).
  static std::string quote(std::string_view text);

 private:
  JsonWriter& integer(int64_t value);
  JsonWriter& unsigned_integer(uint64_t value);
  void before_value();
  void newline();

  std::string out_;
  int indent_ = 0;
  int depth_ = 0;
  bool first_ = true;  // nothing written yet in the innermost object or array
  bool after_key_ = false;
};

}  // namespace cusnap::common

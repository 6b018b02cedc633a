#include "cusnap/common/json_writer.h"

#include <charconv>
#include <cmath>

namespace cusnap::common {
namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

// The length of the well-formed UTF-8 sequence at text[i] (RFC 3629, table 3-7 of the Unicode
// standard), or 0 when the byte there does not begin one.
size_t utf8_sequence(std::string_view text, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char lead = byte(i);
  size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // no overlong forms
    if (lead == 0xED) high = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;   // no overlong forms
    if (lead == 0xF4) high = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (text.size() - i < length) return 0;
  if (byte(i + 1) < low || byte(i + 1) > high) return 0;
  for (size_t k = 2; k < length; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return length;
}

void append_quoted(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        default:
          if (c < 0x20) {
            out += "\\u00";
            out += kHex[c >> 4];
            out += kHex[c & 0xF];
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    size_t length = utf8_sequence(text, i);
    if (length == 0) {
      out += kReplacement;
      ++i;
    } else {
      out.append(text.data() + i, length);
      i += length;
    }
  }
  out += '"';
}

}  // namespace

std::string JsonWriter::quote(std::string_view text) {
  std::string out;
  append_quoted(out, text);
  return out;
}

void JsonWriter::newline() {
  if (indent_ <= 0) return;
  out_ += '\n';
  out_.append(static_cast<size_t>(depth_) * static_cast<size_t>(indent_), ' ');
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_) out_ += ',';
  if (depth_ > 0) newline();
  first_ = false;
}

JsonWriter& JsonWriter::begin_object() {
  before_value();
  out_ += '{';
  ++depth_;
  first_ = true;
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  --depth_;
  if (!first_) newline();
  out_ += '}';
  first_ = false;
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  before_value();
  out_ += '[';
  ++depth_;
  first_ = true;
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  --depth_;
  if (!first_) newline();
  out_ += ']';
  first_ = false;
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
  if (!first_) out_ += ',';
  newline();
  first_ = false;
  append_quoted(out_, name);
  out_ += indent_ > 0 ? ": " : ":";
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::str(std::string_view text) {
  before_value();
  append_quoted(out_, text);
  return *this;
}

JsonWriter& JsonWriter::integer(int64_t value) {
  before_value();
  char buffer[24];
  auto [end, ignored] = std::to_chars(buffer, buffer + sizeof buffer, value);
  out_.append(buffer, end);
  return *this;
}

JsonWriter& JsonWriter::unsigned_integer(uint64_t value) {
  before_value();
  char buffer[24];
  auto [end, ignored] = std::to_chars(buffer, buffer + sizeof buffer, value);
  out_.append(buffer, end);
  return *this;
}

JsonWriter& JsonWriter::real(double value) {
  if (!std::isfinite(value)) return null();
  before_value();
  char buffer[32];
  auto [end, ignored] = std::to_chars(buffer, buffer + sizeof buffer, value);
  out_.append(buffer, end);
  return *this;
}

JsonWriter& JsonWriter::boolean(bool value) {
  before_value();
  out_ += value ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::null() {
  before_value();
  out_ += "null";
  return *this;
}

}  // namespace cusnap::common

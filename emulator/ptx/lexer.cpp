#include "lexer.h"

#include <bit>
#include <charconv>
#include <cstring>
#include <limits>

namespace cusnap::emu::ptx {
namespace {

bool ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c == '%';
}
bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }
// A modifier that starts with a digit, glued to the opcode or modifier before it: the texture
// and surface geometries `.1d`, `.2d`, `.3d`, `.2dms` (`tex.2d.v4`). A '.' right after an
// identifier character never starts a number (numbers consume their own '.').
bool dimension_modifier(std::string_view s, size_t i) {
  if (i == 0 || !ident_char(s[i - 1])) return false;
  size_t k = i + 1;
  while (k < s.size() && s[k] >= '0' && s[k] <= '9') ++k;
  return k > i + 1 && k < s.size() && ident_start(s[k]) && s[k] != 'e' && s[k] != 'E';
}
bool digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

bool tokenize(std::string_view s, std::vector<Token>& out, std::string& error) {
  out.clear();
  out.reserve(s.size() / 4);
  uint32_t line = 1;
  size_t i = 0;
  bool glued = false;
  const size_t n = s.size();
  while (i < n) {
    char c = s[i];
    if (c == '\0') break;  // fatbin PTX ends in NUL
    if (c == '\n') {
      ++line;
      ++i;
      glued = false;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++i;
      glued = false;
      continue;
    }
    if (c == '/' && i + 1 < n && s[i + 1] == '/') {
      while (i < n && s[i] != '\n') ++i;
      glued = false;
      continue;
    }
    if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      size_t start_line = line;
      i += 2;
      while (i + 1 < n && !(s[i] == '*' && s[i + 1] == '/')) {
        if (s[i] == '\n') ++line;
        ++i;
      }
      if (i + 1 >= n) {
        error = "line " + std::to_string(start_line) + ": unterminated /* comment";
        return false;
      }
      i += 2;
      glued = false;
      continue;
    }
    Token t;
    t.line = line;
    t.glued = glued;
    size_t start = i;
    if (c == '#') {  // preprocessor-style lines (#include in hand-written PTX): skip the line
      while (i < n && s[i] != '\n') ++i;
      glued = false;
      continue;
    }
    if (c == '"') {
      ++i;
      while (i < n && s[i] != '"' && s[i] != '\n') {
        if (s[i] == '\\' && i + 1 < n) ++i;
        ++i;
      }
      if (i >= n || s[i] != '"') {
        error = "line " + std::to_string(line) + ": unterminated string";
        return false;
      }
      t.kind = Tok::kString;
      t.text = s.substr(start + 1, i - start - 1);
      ++i;
    } else if (c == '.' && i + 1 < n && (ident_start(s[i + 1]) || dimension_modifier(s, i))) {
      ++i;
      while (i < n) {
        if (ident_char(s[i])) {
          ++i;
          continue;
        }
        if (s[i] == ':' && i + 2 < n && s[i + 1] == ':' && ident_char(s[i + 2])) {
          i += 2;
          continue;
        }
        break;
      }
      t.kind = Tok::kDot;
      t.text = s.substr(start, i - start);
    } else if (ident_start(c) && !(c == '%' && (i + 1 >= n || !ident_char(s[i + 1])))) {
      ++i;
      while (i < n && ident_char(s[i])) ++i;
      t.kind = Tok::kIdent;
      t.text = s.substr(start, i - start);
      if (t.text == "_") t.kind = Tok::kPunct;
    } else if (digit(c) || (c == '.' && i + 1 < n && digit(s[i + 1]))) {
      // Hex float immediates (0f/0d) and hex integers are alphanumeric runs; decimal floats
      // may carry an exponent with a sign.
      ++i;
      while (i < n) {
        char d = s[i];
        if (ident_char(d) || d == '.') {
          ++i;
          continue;
        }
        if ((d == '+' || d == '-') && (s[i - 1] == 'e' || s[i - 1] == 'E') &&
            !(s[start] == '0' && start + 1 < n &&
              (s[start + 1] == 'x' || s[start + 1] == 'X' || s[start + 1] == 'f' ||
               s[start + 1] == 'F' || s[start + 1] == 'd' || s[start + 1] == 'D'))) {
          ++i;
          continue;
        }
        break;
      }
      t.kind = Tok::kNumber;
      t.text = s.substr(start, i - start);
    } else if (std::strchr(",;:[]{}()+-|!@<>=*/&^~?", c) != nullptr ||
               (c == '%' && (i + 1 >= n || !ident_char(s[i + 1])))) {
      // A '%' that starts no identifier is the remainder operator of a constant expression.
      t.kind = Tok::kPunct;
      t.text = s.substr(i, 1);
      ++i;
    } else {
      error = "line " + std::to_string(line) + ": unexpected character '" + std::string(1, c) + "'";
      return false;
    }
    out.push_back(t);
    glued = true;
  }
  Token end;
  end.kind = Tok::kEnd;
  end.line = line;
  out.push_back(end);
  return true;
}

namespace {

bool hex_digit(char c) { return digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// Unsigned digits in `base`, all of `s`, into 64 bits.
bool parse_digits(std::string_view s, int base, uint64_t& out, std::string& why) {
  if (s.empty()) {
    why = "no digits";
    return false;
  }
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, out, base);
  if (ec == std::errc::result_out_of_range) {
    why = "does not fit in 64 bits";
    return false;
  }
  if (ec != std::errc() || ptr != end) {
    why = std::string("'") + (ec != std::errc() ? s[0] : *ptr) + "' is not a base-" +
          std::to_string(base) + " digit";
    return false;
  }
  return true;
}

}  // namespace

bool parse_number(std::string_view s, NumberValue& out, std::string& why) {
  out = NumberValue{};
  why.clear();
  if (s.empty() || !(digit(s[0]) || s[0] == '.')) {
    why = "not a number";
    return false;
  }
  const char p = s.size() > 1 && s[0] == '0' ? s[1] : '\0';
  if (p == 'f' || p == 'F' || p == 'd' || p == 'D') {  // 0fXXXXXXXX / 0dXXXXXXXXXXXXXXXX
    const bool single = p == 'f' || p == 'F';
    const size_t digits = single ? 8 : 16;
    std::string_view h = s.substr(2);
    for (char c : h)
      if (!hex_digit(c)) {
        why = std::string("'") + c + "' is not a hexadecimal digit";
        return false;
      }
    if (h.size() != digits) {
      why = std::string(single ? "0f" : "0d") + " needs exactly " + std::to_string(digits) +
            " hexadecimal digits";
      return false;
    }
    uint64_t bits = 0;
    if (!parse_digits(h, 16, bits, why)) return false;
    if (single) {
      out.kind = NumberValue::kF32Bits;
      out.bits = bits;
    } else {
      out.kind = NumberValue::kDouble;
      out.value = std::bit_cast<double>(bits);
    }
    return true;
  }
  const bool hex = p == 'x' || p == 'X';
  const bool binary = p == 'b' || p == 'B';
  if (!hex && !binary && s.find_first_of(".eE") != std::string_view::npos) {
    // A decimal floating-point literal: digits, an optional point, an optional signed exponent.
    const char* end = s.data() + s.size();
    auto [ptr, ec] = std::from_chars(s.data(), end, out.value, std::chars_format::general);
    if (ec == std::errc::result_out_of_range) {
      why = "out of the range of a double";
      return false;
    }
    if (ec != std::errc() || ptr != end) {
      why = "not a floating-point literal";
      return false;
    }
    out.kind = NumberValue::kDouble;
    return true;
  }
  std::string_view d = s;
  if (d.back() == 'U' || d.back() == 'u') {
    out.is_unsigned = true;
    d.remove_suffix(1);
  }
  int base = 10;
  if (hex || binary) {
    base = hex ? 16 : 2;
    d.remove_prefix(2);
  } else if (d.size() > 1 && d[0] == '0') {
    base = 8;
    d.remove_prefix(1);
  }
  if (!parse_digits(d, base, out.bits, why)) return false;
  out.kind = NumberValue::kInt;
  // Literals are .s64 unless they need .u64 to be represented.
  if (out.bits > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) out.is_unsigned = true;
  return true;
}

}  // namespace cusnap::emu::ptx

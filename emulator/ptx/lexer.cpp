#include "lexer.h"

#include <cstdlib>
#include <cstring>

namespace cusnap::emu::ptx {
namespace {

bool ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c == '%';
}
bool ident_char(char c) {
  return ident_start(c) || (c >= '0' && c <= '9');
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
    if (c == '\n') { ++line; ++i; glued = false; continue; }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') { ++i; glued = false; continue; }
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
    } else if (c == '.' && i + 1 < n && ident_start(s[i + 1])) {
      ++i;
      while (i < n) {
        if (ident_char(s[i])) { ++i; continue; }
        if (s[i] == ':' && i + 2 < n && s[i + 1] == ':' && ident_char(s[i + 2])) { i += 2; continue; }
        break;
      }
      t.kind = Tok::kDot;
      t.text = s.substr(start, i - start);
    } else if (ident_start(c)) {
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
    } else if (std::strchr(",;:[]{}()+-|!@<>=*", c) != nullptr) {
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

bool parse_number(std::string_view t, NumberValue& out) {
  out = NumberValue{};
  if (t.empty()) return false;
  std::string s(t);
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'f' || s[1] == 'F')) {
    if (s.size() != 10) return false;
    char* end = nullptr;
    out.bits = std::strtoull(s.c_str() + 2, &end, 16);
    if (*end != '\0') return false;
    out.kind = NumberValue::kF32Bits;
    return true;
  }
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'd' || s[1] == 'D')) {
    if (s.size() != 18) return false;
    char* end = nullptr;
    out.bits = std::strtoull(s.c_str() + 2, &end, 16);
    if (*end != '\0') return false;
    out.kind = NumberValue::kF64Bits;
    return true;
  }
  if (s.back() == 'U' || s.back() == 'u') {
    out.is_unsigned = true;
    s.pop_back();
  }
  const bool is_hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  if (!is_hex && s.find_first_of(".eE") != std::string::npos) {
    char* end = nullptr;
    out.value = std::strtod(s.c_str(), &end);
    if (*end != '\0') return false;
    out.kind = NumberValue::kDouble;
    return true;
  }
  char* end = nullptr;
  int base = 10;
  const char* p = s.c_str();
  if (is_hex) { base = 16; p += 2; }
  else if (s.size() > 2 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) { base = 2; p += 2; }
  else if (s.size() > 1 && s[0] == '0') { base = 8; p += 1; }
  if (*p == '\0') return false;
  out.bits = std::strtoull(p, &end, base);
  if (*end != '\0') return false;
  out.kind = NumberValue::kInt;
  return true;
}

}  // namespace cusnap::emu::ptx

// Numbers and constant expressions (PTX ISA "Constants", "Constant Expressions"): every number
// the parser reads goes through number_token() (the checked literal conversion of lexer.h) and,
// where PTX allows an expression, through parse_const_expr(). Integer expressions are evaluated
// in 64 bits with the ISA's signedness rules (literals are .s64 unless they need .u64 or carry
// `U`; unsigned wins in mixed operations; `%` reads its operands as unsigned; shifts keep the
// type of their first operand); floating-point ones in double precision. `WARP_SZ` is the
// predefined constant 32.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "parser_internal.h"

namespace cusnap::emu::ptx {
namespace {

NumberValue int_value(uint64_t bits, bool is_unsigned) {
  NumberValue v;
  v.kind = NumberValue::kInt;
  v.bits = bits;
  v.is_unsigned = is_unsigned;
  return v;
}

NumberValue double_value(double d) {
  NumberValue v;
  v.kind = NumberValue::kDouble;
  v.value = d;
  return v;
}

NumberValue truth(bool b) { return int_value(b ? 1 : 0, false); }

double as_double(const NumberValue& v) {
  if (v.kind == NumberValue::kDouble) return v.value;
  return v.is_unsigned ? static_cast<double>(v.bits)
                       : static_cast<double>(static_cast<int64_t>(v.bits));
}

bool nonzero(const NumberValue& v) {
  return v.kind == NumberValue::kDouble ? v.value != 0 : v.bits != 0;
}

}  // namespace

NumberValue Parser::number_token() {
  const Token& t = peek();
  if (t.kind != Tok::kNumber) fail("expected a number, found " + describe(t));
  NumberValue v;
  std::string why;
  if (!parse_number(t.text, v, why))
    fail_at(t.line, "malformed number '" + std::string(t.text) + "': " + why);
  next();
  return v;
}

bool Parser::at_const_expr() const {
  const Token& t = peek();
  if (t.kind == Tok::kNumber) return true;
  if (t.kind == Tok::kIdent) return t.text == "WARP_SZ";
  if (is_punct('(') || is_punct('~')) return true;
  if (is_punct('-') || is_punct('+') || is_punct('!')) {
    // A sign or `!` in front of a register is not an expression (and `!%p` is a negated
    // predicate); look through a run of them.
    size_t k = 1;
    while (is_punct('-', k) || is_punct('+', k) || is_punct('!', k) || is_punct('~', k)) ++k;
    const Token& u = peek(k);
    return u.kind == Tok::kNumber || is_punct('(', k) ||
           (u.kind == Tok::kIdent && u.text == "WARP_SZ");
  }
  return false;
}

// Two-character operators are two glued punctuation tokens.
bool Parser::at_op(const char* op) const {
  if (!is_punct(op[0])) return false;
  if (op[1] == '\0') {
    // A single-character operator must not be the first half of a longer one.
    const Token& u = peek(1);
    if (!u.glued || u.kind != Tok::kPunct) return true;
    const char c = u.text[0];
    switch (op[0]) {
      case '|':
        return c != '|';
      case '&':
        return c != '&';
      case '<':
        return c != '<' && c != '=';
      case '>':
        return c != '>' && c != '=';
      case '!':
        return c != '=';
      default:
        return true;
    }
  }
  return is_punct(op[1], 1) && peek(1).glued;
}

bool Parser::accept_op(const char* op) {
  if (!at_op(op)) return false;
  next();
  if (op[1] != '\0') next();
  return true;
}

NumberValue Parser::parse_const_expr() {
  const uint32_t line = peek().line;
  NumberValue c = parse_binary(0);
  if (!accept_punct('?')) return c;
  NumberValue a = parse_const_expr();
  expect_punct(':', "in a conditional constant expression");
  NumberValue b = parse_const_expr();
  if (c.kind != NumberValue::kInt)
    fail_at(line, "the condition of '?:' must be an integer constant");
  if (a.kind == NumberValue::kF32Bits || b.kind == NumberValue::kF32Bits)
    fail_at(line, "a 0f single-precision literal cannot be used in a constant expression");
  if ((a.kind == NumberValue::kDouble) != (b.kind == NumberValue::kDouble))
    fail_at(line, "the operands of '?:' must both be integers or both floating-point");
  NumberValue r = nonzero(c) ? a : b;
  if (r.kind == NumberValue::kInt) r.is_unsigned = a.is_unsigned || b.is_unsigned;
  return r;
}

// Precedence climbing over the binary operators, lowest level first.
NumberValue Parser::parse_binary(int level) {
  static const char* const kLevels[][4] = {
      {"||", nullptr},     {"&&", nullptr},          {"|", nullptr},         {"^", nullptr},
      {"&", nullptr},      {"==", "!=", nullptr},    {"<=", ">=", "<", ">"}, {"<<", ">>", nullptr},
      {"+", "-", nullptr}, {"*", "/", "%", nullptr},
  };
  constexpr int kCount = static_cast<int>(sizeof kLevels / sizeof kLevels[0]);
  if (level == kCount) return parse_unary();
  NumberValue a = parse_binary(level + 1);
  for (;;) {
    const char* op = nullptr;
    for (const char* candidate : kLevels[level]) {
      if (!candidate) break;
      // Inside `%r<N>` a '>' closes the count instead of comparing.
      if (no_greater_ && candidate[0] == '>') continue;
      if (at_op(candidate)) {
        op = candidate;
        break;
      }
    }
    if (!op) return a;
    const uint32_t line = peek().line;
    accept_op(op);
    NumberValue b = parse_binary(level + 1);
    a = apply_binary(op, a, b, line);
  }
}

NumberValue Parser::apply_binary(const std::string& op, const NumberValue& a, const NumberValue& b,
                                 uint32_t line) {
  if (a.kind == NumberValue::kF32Bits || b.kind == NumberValue::kF32Bits)
    fail_at(line, "a 0f single-precision literal cannot be used in a constant expression");
  const bool fp = a.kind == NumberValue::kDouble || b.kind == NumberValue::kDouble;
  const bool is_unsigned = a.is_unsigned || b.is_unsigned;  // the usual arithmetic conversions
  const uint64_t x = a.bits, y = b.bits;
  const auto sx = static_cast<int64_t>(x), sy = static_cast<int64_t>(y);
  auto integer_only = [&] {
    if (fp) fail_at(line, "operator '" + op + "' needs integer operands in a constant expression");
  };
  if (op == "||") return truth(nonzero(a) || nonzero(b));
  if (op == "&&") return truth(nonzero(a) && nonzero(b));
  if (op == "==" || op == "!=" || op == "<" || op == "<=" || op == ">" || op == ">=") {
    int cmp;
    if (fp) {
      const double dx = as_double(a), dy = as_double(b);
      if (std::isnan(dx) || std::isnan(dy)) return truth(op == "!=");
      cmp = dx < dy ? -1 : dx > dy ? 1 : 0;
    } else if (is_unsigned) {
      cmp = x < y ? -1 : x > y ? 1 : 0;
    } else {
      cmp = sx < sy ? -1 : sx > sy ? 1 : 0;
    }
    if (op == "==") return truth(cmp == 0);
    if (op == "!=") return truth(cmp != 0);
    if (op == "<") return truth(cmp < 0);
    if (op == "<=") return truth(cmp <= 0);
    if (op == ">") return truth(cmp > 0);
    return truth(cmp >= 0);
  }
  if (op == "|" || op == "^" || op == "&") {
    integer_only();
    return int_value(op == "|" ? x | y : op == "^" ? x ^ y : x & y, is_unsigned);
  }
  if (op == "<<" || op == ">>") {
    integer_only();
    if (y >= 64) not_supported_at(line, "a shift by 64 or more bits in a constant expression");
    if (op == "<<") return int_value(x << y, a.is_unsigned);
    return int_value(a.is_unsigned ? x >> y : static_cast<uint64_t>(sx >> y), a.is_unsigned);
  }
  if (op == "%") {
    integer_only();
    if (y == 0) fail_at(line, "remainder by zero in a constant expression");
    return int_value(x % y, false);  // the operands are read as .u64, the result is .s64
  }
  if (fp) {
    const double dx = as_double(a), dy = as_double(b);
    if (op == "+") return double_value(dx + dy);
    if (op == "-") return double_value(dx - dy);
    if (op == "*") return double_value(dx * dy);
    return double_value(dx / dy);
  }
  if (op == "+") return int_value(x + y, is_unsigned);
  if (op == "-") return int_value(x - y, is_unsigned);
  if (op == "*") return int_value(x * y, is_unsigned);
  if (y == 0) fail_at(line, "division by zero in a constant expression");
  if (is_unsigned) return int_value(x / y, true);
  if (sx == std::numeric_limits<int64_t>::min() && sy == -1) return int_value(x, false);  // wraps
  return int_value(static_cast<uint64_t>(sx / sy), false);
}

NumberValue Parser::parse_unary() {
  const uint32_t line = peek().line;
  if (accept_punct('+')) return parse_unary();
  if (accept_punct('-')) {
    NumberValue v = parse_unary();
    if (v.kind == NumberValue::kInt)
      v.bits = ~v.bits + 1;
    else if (v.kind == NumberValue::kF32Bits)
      v.bits ^= 0x80000000u;  // exact, like -x
    else
      v.value = -v.value;
    return v;
  }
  if (is_punct('!') || is_punct('~')) {
    const bool logical = next().text[0] == '!';
    NumberValue v = parse_unary();
    if (v.kind == NumberValue::kF32Bits)
      fail_at(line, "a 0f single-precision literal cannot be used in a constant expression");
    if (logical) return truth(!nonzero(v));
    if (v.kind != NumberValue::kInt) fail_at(line, "operator '~' needs an integer operand");
    return int_value(~v.bits, true);
  }
  if (is_punct('(') && (is_dot(".s64", 1) || is_dot(".u64", 1))) {  // (.s64) / (.u64) casts
    next();
    const bool to_unsigned = next().text == ".u64";
    expect_punct(')', "after a cast");
    NumberValue v = parse_unary();
    if (v.kind != NumberValue::kInt) not_supported_at(line, "casts of floating-point constants");
    v.is_unsigned = to_unsigned;
    return v;
  }
  if (accept_punct('(')) {
    const bool saved = no_greater_;
    no_greater_ = false;  // `%r<(a > b)>`: the parentheses delimit the comparison
    NumberValue v = parse_const_expr();
    no_greater_ = saved;
    expect_punct(')', "to close a constant expression");
    return v;
  }
  if (peek().kind == Tok::kIdent && peek().text == "WARP_SZ") {
    next();
    return int_value(kWarpSize, false);
  }
  if (peek().kind == Tok::kNumber) return number_token();
  fail("expected a constant, found " + describe(peek()));
}

uint64_t Parser::expect_uint(const char* context) {
  const uint32_t line = peek().line;
  if (!at_const_expr())
    fail(std::string("expected an integer ") + context + ", found " + describe(peek()));
  NumberValue v = parse_const_expr();
  if (v.kind != NumberValue::kInt) fail_at(line, std::string("expected an integer ") + context);
  if (!v.is_unsigned && static_cast<int64_t>(v.bits) < 0)
    fail_at(line, std::string("expected a non-negative integer ") + context);
  return v.bits;
}

uint32_t Parser::expect_u32(const char* context) {
  const uint32_t line = peek().line;
  const uint64_t v = expect_uint(context);
  if (v > std::numeric_limits<uint32_t>::max())
    fail_at(line, std::string("integer ") + context + " does not fit in 32 bits");
  return static_cast<uint32_t>(v);
}

}  // namespace cusnap::emu::ptx

// Tokenizer for PTX text. Comments (// and /* */) are skipped; every token carries its line.
// Dotted words (`.reg`, `.f32`, `.L1::no_allocate`) are single tokens of kind kDot whose text
// includes the dot; `glued` tells whether a token immediately follows the previous one with no
// white space (the parser uses it to attach modifiers to opcodes and `.x` to `%tid`).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cusnap::emu::ptx {

enum class Tok : uint8_t {
  kEnd,
  kIdent,   // identifiers incl. %r1, $L__BB0_2, __local_depot0
  kDot,     // .reg .f32 .v4 ...
  kNumber,  // 12, 0x1f, 0f3F800000, 0d..., 1.5e3 (sign is a separate token)
  kString,  // "..." (text without quotes)
  kPunct,   // one of , ; : [ ] { } ( ) + - | ! @ < > = _ * / % & ^ ~ ? (as text)
};

struct Token {
  Tok kind = Tok::kEnd;
  bool glued = false;
  uint32_t line = 0;
  std::string_view text;
};

// Tokenizes the whole text. On a malformed token returns false and sets `error`.
bool tokenize(std::string_view text, std::vector<Token>& out, std::string& error);

// A numeric literal (PTX ISA "Constants"). Integers are 64-bit: hexadecimal `0x..`, octal `0..`,
// binary `0b..` or decimal, with an optional `U` suffix; a literal is .s64 unless the suffix is
// given or its value does not fit in .s64. Decimal floating-point literals (`1.5`, `1e3`, `.5`)
// and `0d` + 16 hex digits are doubles; `0f` + 8 hex digits keeps the exact single-precision bits.
struct NumberValue {
  enum Kind : uint8_t { kInt, kF32Bits, kDouble } kind = kInt;
  uint64_t bits = 0;         // kInt: the value (two's complement); kF32Bits: the IEEE bits
  double value = 0;          // kDouble
  bool is_unsigned = false;  // kInt: .u64 rather than .s64
};

// The one conversion of a numeric literal's text (every number the parser reads goes through
// it). Locale-independent and checked: on malformed text or a value out of range it returns
// false and says why in `why`; it never throws.
bool parse_number(std::string_view text, NumberValue& out, std::string& why);

}  // namespace cusnap::emu::ptx

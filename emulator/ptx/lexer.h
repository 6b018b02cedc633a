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
  kPunct,   // one of , ; : [ ] { } ( ) + - | ! @ < > = _ (as text)
};

struct Token {
  Tok kind = Tok::kEnd;
  bool glued = false;
  uint32_t line = 0;
  std::string_view text;
};

// Tokenizes the whole text. On a malformed token returns false and sets `error`.
bool tokenize(std::string_view text, std::vector<Token>& out, std::string& error);

// Numeric literal classification.
struct NumberValue {
  enum Kind : uint8_t { kInt, kF32Bits, kF64Bits, kDouble } kind = kInt;
  uint64_t bits = 0;  // kInt: two's complement value; kF32Bits/kF64Bits: IEEE bits
  double value = 0;   // kDouble
  bool is_unsigned = false;
};
bool parse_number(std::string_view text, NumberValue& out);

}  // namespace cusnap::emu::ptx

// Internal to the parser: the recursive-descent parser state shared by parser.cpp (module
// structure, declarations, operands) and lower_instr.cpp (opcode decoding into Instr).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir.h"
#include "lexer.h"

namespace cusnap::emu::ptx {

// An operand as written, before its instruction decides what type it has.
struct ParsedOperand {
  enum Kind : uint8_t { kReg, kImm, kVector, kAddr, kSymbol, kSink, kName, kList };
  Kind kind = kReg;
  bool negate = false;       // `!%p`
  bool minus = false;        // unary minus on an immediate
  uint32_t slot = 0;         // kReg
  NumberValue number;        // kImm
  std::vector<ParsedOperand> elems;  // kVector / kList
  // kAddr: [base + offset]; base a register (base_reg), a symbol (has_symbol) or neither
  bool base_reg = false;
  bool has_symbol = false;
  uint32_t symbol = 0;       // kAddr / kSymbol
  int64_t offset = 0;
  std::string_view name;     // kName: unresolved identifier (label / function)
  uint32_t line = 0;
};

// `not_supported` separates valid PTX the emulator does not implement (CUDA_ERROR_NOT_SUPPORTED
// at module load) from text that is not valid PTX (CUDA_ERROR_INVALID_PTX).
class ParseError {
 public:
  uint32_t line;
  std::string what;
  bool not_supported = false;
};

// Limits that keep malformed input from exhausting host memory.
inline constexpr uint32_t kMaxSlots = 1u << 16;          // registers per module (x256 bytes per warp)
inline constexpr uint64_t kMaxFrameBytes = 1u << 24;     // one .local/.param/.shared declaration

class Parser {
 public:
  Parser(std::vector<Token> tokens, Module& module) : toks_(std::move(tokens)), m_(module) {}
  void parse_module();  // throws ParseError (caught in parse_module())

  // --- token helpers
  const Token& peek(size_t k = 0) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  const Token& next() { const Token& t = toks_[pos_]; if (pos_ + 1 < toks_.size()) ++pos_; return t; }
  bool is_punct(char c, size_t k = 0) const {
    const Token& t = peek(k);
    return t.kind == Tok::kPunct && t.text.size() == 1 && t.text[0] == c;
  }
  bool is_dot(std::string_view d, size_t k = 0) const {
    return peek(k).kind == Tok::kDot && peek(k).text == d;
  }
  bool accept_punct(char c) { if (is_punct(c)) { next(); return true; } return false; }
  bool accept_dot(std::string_view d) { if (is_dot(d)) { next(); return true; } return false; }
  void expect_punct(char c, const char* context);
  std::string_view expect_ident(const char* context);
  uint64_t expect_uint(const char* context);
  [[noreturn]] void fail(const std::string& what) const;
  [[noreturn]] void fail_at(uint32_t line, const std::string& what) const;
  // Valid PTX the emulator does not implement: the module fails to load, naming it.
  [[noreturn]] void not_supported_at(uint32_t line, const std::string& what) const;

  // --- declarations
  struct DeclType {
    Type type = Type::kNone;
    uint32_t align = 0;
    uint32_t vec = 1;
  };
  bool parse_type_and_align(DeclType& dt);  // consumes .align N, .vN, .type in any order
  uint64_t parse_array_dims(bool& unsized);  // `[N][M]...` -> element count; `[]` sets unsized
  void parse_module_variable(Space space, bool is_extern, bool is_visible);
  void parse_function(bool is_entry, bool is_extern);
  void parse_param_list(Function& f, bool is_entry, bool returns);
  void parse_body(Function& f);
  void parse_reg_decl();
  void parse_local_decl(Function& f, Space space);
  void skip_to_semicolon();
  void parse_performance_directives(KernelDesc* kd);

  // --- instruction level (lower_instr.cpp)
  void parse_instruction(Function& f);
  ParsedOperand parse_operand();
  ParsedOperand parse_address();
  void lower(Function& f, Instr& in, std::string_view opcode, std::vector<std::string_view>& mods,
             std::vector<ParsedOperand>& ops, uint32_t line);
  Operand src(const ParsedOperand& p, Type t);   // a source of type t (immediates converted)
  Operand dst(const ParsedOperand& p);           // a destination (register, sink or vector)
  Operand addr(const ParsedOperand& p);
  uint32_t const_index(uint64_t bits);
  uint64_t immediate_bits(const ParsedOperand& p, Type t);

  // --- scopes
  struct Name { bool is_reg; uint32_t id; };
  std::optional<Name> lookup(std::string_view name) const;
  void declare(std::string_view name, Name n, uint32_t line);
  uint32_t add_symbol(Symbol s);
  uint32_t new_slot(Type t);
  std::optional<uint32_t> special_slot(std::string_view name, std::string_view component);

  std::vector<Token> toks_;
  size_t pos_ = 0;
  Module& m_;
  std::vector<std::unordered_map<std::string, Name>> scopes_;  // [0] = module scope
  Function* current_ = nullptr;
  uint32_t current_index_ = 0;
  struct LabelFixup { uint32_t instr; int operand; std::string name; uint32_t line; };
  std::vector<LabelFixup> fixups_;
  std::unordered_map<std::string, uint32_t> labels_;
  std::vector<std::string> owned_names_;  // storage for generated register names
};

Type type_from_suffix(std::string_view s);  // ".u32" -> kU32, kNone if not a type

}  // namespace cusnap::emu::ptx

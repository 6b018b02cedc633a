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
#include "modifiers.h"

namespace cusnap::emu::ptx {

// An operand as written, before its instruction decides what type it has.
struct ParsedOperand {
  enum Kind : uint8_t { kReg, kImm, kVector, kAddr, kSymbol, kSink, kName, kList };
  Kind kind = kReg;
  bool negate = false;               // `!%p`
  bool dual = false;                 // kVector: the two destinations of `p|q`, not a brace vector
  bool dynamic = false;              // kReg: %clock/%globaltimer, refreshed before the instruction
  uint32_t slot = 0;                 // kReg
  NumberValue number;                // kImm: the value of the constant expression
  std::vector<ParsedOperand> elems;  // kVector / kList
  // kAddr: [base + offset]; base a register (base_reg), a symbol (has_symbol) or neither
  bool base_reg = false;
  bool has_symbol = false;
  uint32_t symbol = 0;  // kAddr / kSymbol
  int64_t offset = 0;
  std::string_view name;  // kName: unresolved identifier (label / function); kSymbol: its name
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
inline constexpr uint32_t kMaxSlots = 1u << 16;       // registers per module (x256 bytes per warp)
inline constexpr uint64_t kMaxFrameBytes = 1u << 24;  // one .local/.param/.shared declaration

class Parser {
 public:
  Parser(std::vector<Token> tokens, Module& module) : toks_(std::move(tokens)), m_(module) {}
  void parse_module();  // throws ParseError (caught in parse_module())

  // --- token helpers
  const Token& peek(size_t k = 0) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  const Token& next() {
    const Token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  bool is_punct(char c, size_t k = 0) const {
    const Token& t = peek(k);
    return t.kind == Tok::kPunct && t.text.size() == 1 && t.text[0] == c;
  }
  bool is_dot(std::string_view d, size_t k = 0) const {
    return peek(k).kind == Tok::kDot && peek(k).text == d;
  }
  bool accept_punct(char c) {
    if (is_punct(c)) {
      next();
      return true;
    }
    return false;
  }
  bool accept_dot(std::string_view d) {
    if (is_dot(d)) {
      next();
      return true;
    }
    return false;
  }
  void expect_punct(char c, const char* context);
  std::string_view expect_ident(const char* context);
  [[noreturn]] void fail(const std::string& what) const;
  [[noreturn]] void fail_at(uint32_t line, const std::string& what) const;
  // Valid PTX the emulator does not implement: the module fails to load, naming it.
  [[noreturn]] void not_supported_at(uint32_t line, const std::string& what) const;

  // --- numbers and constant expressions (const_expr.cpp)
  NumberValue number_token();  // the current kNumber token through parse_number(), or fail
  bool at_const_expr() const;  // whether an operand here is a constant expression
  bool at_op(const char* op) const;
  bool accept_op(const char* op);
  NumberValue parse_const_expr();
  NumberValue parse_binary(int level);
  NumberValue apply_binary(const std::string& op, const NumberValue& a, const NumberValue& b,
                           uint32_t line);
  NumberValue parse_unary();
  uint64_t expect_uint(const char* context);  // a non-negative integer constant expression
  uint32_t expect_u32(const char* context);   // ... that fits in 32 bits

  // --- declarations
  struct DeclType {
    Type type = Type::kNone;
    uint32_t align = 0;
    uint32_t vec = 1;
  };
  bool parse_type_and_align(DeclType& dt);  // consumes .align N, .vN, .type in any order
  std::vector<uint64_t> parse_array_dims(bool& unsized);  // `[N][M]...`; `[]` sets unsized
  uint64_t element_count(const std::vector<uint64_t>& dims, uint32_t line) const;
  void parse_init_element(Type t, uint32_t eb, uint64_t at, std::vector<uint8_t>& init,
                          std::vector<Module::Relocation>& relocs);
  uint64_t parse_init_list(const std::vector<uint64_t>& dims, size_t level, Type t, uint32_t eb,
                           uint64_t at, std::vector<uint8_t>& init,
                           std::vector<Module::Relocation>& relocs, bool& nested);
  void parse_pragma_strings();
  void parse_module_variable(Space space, bool is_extern, bool is_visible);
  // `.global .texref a[, b];` / `.global .surfref ...;` after the `.global` (engine.h OpaqueKind).
  void parse_reference_variable(OpaqueKind kind);
  // Refuses (not supported) a .texref/.surfref symbol used as a value or an address.
  void refuse_reference_use(uint32_t symbol, uint32_t line);
  void parse_function(bool is_entry, bool is_extern);
  void parse_function_attributes();  // `.attribute(.unified(a, b))` after `.func`
  void parse_param_list(Function& f, bool is_entry, bool returns);
  void parse_body(Function& f);
  void parse_reg_decl();
  void parse_local_decl(Function& f, Space space);
  void skip_to_semicolon();
  void parse_performance_directives(KernelDesc* kd);

  // --- instruction level (lower_instr.cpp)
  void parse_instruction(Function& f);
  uint32_t vector_atomic(std::vector<std::string_view>& mods, const std::string& text,
                         const Function& f, uint32_t line) const;
  void lower_cvt_pack(const Function& f, Instr& in, const std::vector<std::string_view>& mods,
                      const std::vector<ParsedOperand>& ops, uint32_t line);
  ParsedOperand parse_operand(bool lists = false);  // lists: `(a, b)` is a call list
  ParsedOperand parse_address();
  // `[a, b, ...]` of texture and surface instructions (handle, coordinate vector): a kList.
  ParsedOperand parse_image_tuple();
  // tex, tld4, txq, suld, sust, suq, istypep (lower_texture.cpp); false for other opcodes.
  bool lower_image(Function& f, Instr& in, std::string_view opcode,
                   const std::vector<std::string_view>& mods, std::vector<ParsedOperand>& ops,
                   uint32_t line);
  void lower(Function& f, Instr& in, std::string_view opcode, std::vector<std::string_view>& mods,
             std::vector<ParsedOperand>& ops, uint32_t line);
  // Scalar operands. A one-element brace `{a}` is the scalar a; any other vector, a sink read as
  // a source, `!` on anything but a predicate, an address or a `p|q` pair is refused.
  Operand src(const ParsedOperand& p, Type t);  // a source of type t (immediates converted)
  Operand dst(const ParsedOperand& p);          // a destination: a register or the sink `_`
  // Brace vectors of exactly `count` elements (ld/st .vN, mov pack/unpack).
  Operand src_vector(const ParsedOperand& p, Type elem, size_t count);
  Operand dst_vector(const ParsedOperand& p, size_t count);
  Operand addr(const ParsedOperand& p);
  // mma.sync.aligned (lower_matrix.cpp): `types` are the suffixes in order (d, a, b, c).
  void lower_mma(Instr& in, const std::vector<std::string_view>& mods,
                 const std::vector<Type>& types, std::vector<ParsedOperand>& ops, uint32_t line);
  // wmma.load / wmma.store / wmma.mma (lower_matrix.cpp).
  void lower_wmma(Instr& in, const std::vector<std::string_view>& mods,
                  const std::vector<Type>& types, std::vector<ParsedOperand>& ops, uint32_t line);
  // wgmma.fence / commit_group / wait_group / mma_async (lower_matrix.cpp).
  void lower_wgmma(Instr& in, const std::vector<std::string_view>& mods,
                   const std::vector<Type>& types, std::vector<ParsedOperand>& ops, uint32_t line);
  // ldmatrix / stmatrix / movmatrix (lower_matrix.cpp).
  void lower_ldmatrix(Instr& in, std::string_view op, const std::vector<std::string_view>& mods,
                      std::vector<ParsedOperand>& ops, uint32_t line);
  // mbarrier.* and cp.async.mbarrier.arrive (lower_async.cpp); op is "mbarrier" or "cp".
  void lower_mbarrier(Instr& in, std::string_view op, const std::vector<std::string_view>& mods,
                      std::vector<ParsedOperand>& ops, uint32_t line);
  // cp.async.bulk (non-tensor) and its groups (lower_async.cpp).
  void lower_bulk_copy(Instr& in, const std::vector<std::string_view>& mods,
                       std::vector<ParsedOperand>& ops, uint32_t line);
  uint32_t const_index(uint64_t bits);
  // A constant converted to an operand of type t (integers cast to its size, floating-point
  // ones rounded to it), or refused (naming `line`) when PTX gives it no exact meaning there: a
  // floating-point constant for an integer operand, an immediate of a half-precision type.
  uint64_t immediate_bits(const NumberValue& v, Type t, uint32_t line);

  // --- scopes
  struct Name {
    bool is_reg;
    uint32_t id;
  };
  std::optional<Name> lookup(std::string_view name) const;
  void declare(std::string_view name, Name n, uint32_t line);
  uint32_t add_symbol(Symbol s);
  uint32_t new_slot(Type t);
  // The slot of a predefined special register (`%tid` + `.x`, `%laneid`, ...), or nullopt.
  std::optional<uint32_t> special_slot(std::string_view name, std::string_view component,
                                       uint32_t line);

  std::vector<Token> toks_;
  size_t pos_ = 0;
  Module& m_;
  std::vector<std::unordered_map<std::string, Name>> scopes_;  // [0] = module scope
  Function* current_ = nullptr;
  uint32_t current_index_ = 0;
  struct LabelFixup {
    uint32_t instr;
    int operand;
    std::string name;
    uint32_t line;
  };
  std::vector<LabelFixup> fixups_;
  // The function's `name: .branchtargets L1, L2, ...;` lists, and the brx.idx instructions that
  // name them (Module::branch_tables entry, list name, line), resolved at the function's end.
  struct BranchTargets {
    std::vector<std::string> labels;
    uint32_t line;
  };
  std::unordered_map<std::string, BranchTargets> branch_targets_;
  struct TableFixup {
    uint32_t table;
    std::string name;
    uint32_t line;
  };
  std::vector<TableFixup> table_fixups_;
  std::unordered_map<std::string, uint32_t> labels_;
  std::vector<std::string> owned_names_;  // storage for generated register names
  std::unordered_map<std::string, ModifierVerdict> modifier_verdicts_;  // by opcode + modifiers
  bool no_greater_ = false;  // parsing `%name<N>`: '>' ends the expression
  // Instructions refused as not supported so far: parsing goes on past them so that the load
  // error lists every one of the module (an instruction declares nothing later text depends on).
  std::vector<ParseError> unsupported_;
};

inline std::string describe(const Token& t) {
  if (t.kind == Tok::kEnd) return "end of input";
  std::string s(1, '\'');  // appended, not "'" + ...: GCC 12 warns falsely (-Wrestrict) on that
  s += t.text;
  s += '\'';
  return s;
}

Type type_from_suffix(std::string_view s);  // ".u32" -> kU32, kNone if not a type

}  // namespace cusnap::emu::ptx

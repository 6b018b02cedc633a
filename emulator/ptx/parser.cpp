// Module structure: directives, variables, functions, scopes, registers and finalisation
// (label fixups, call graph, per-kernel shared-memory layout, kernel descriptors).
#include <algorithm>
#include <cstring>
#include <functional>

#include "parser_internal.h"

namespace cusnap::emu::ptx {

Type type_from_suffix(std::string_view s) {
  struct Entry {
    const char* name;
    Type type;
  };
  static const Entry kTypes[] = {
      {".pred", Type::kPred},     {".b8", Type::kB8},         {".b16", Type::kB16},
      {".b32", Type::kB32},       {".b64", Type::kB64},       {".b128", Type::kB128},
      {".u8", Type::kU8},         {".u16", Type::kU16},       {".u32", Type::kU32},
      {".u64", Type::kU64},       {".s8", Type::kS8},         {".s16", Type::kS16},
      {".s32", Type::kS32},       {".s64", Type::kS64},       {".f16", Type::kF16},
      {".f16x2", Type::kF16x2},   {".bf16", Type::kBF16},     {".bf16x2", Type::kBF16x2},
      {".tf32", Type::kTF32},     {".f32", Type::kF32},       {".f64", Type::kF64},
      {".e4m3x2", Type::kE4M3x2}, {".e5m2x2", Type::kE5M2x2}, {".u16x2", Type::kU16x2},
      {".s16x2", Type::kS16x2},
  };
  for (const Entry& e : kTypes)
    if (s == e.name) return e.type;
  return Type::kNone;
}

static uint32_t type_bytes(Type t) {
  switch (t) {
    case Type::kPred:
      return 1;
    case Type::kB8:
    case Type::kU8:
    case Type::kS8:
      return 1;
    case Type::kB16:
    case Type::kU16:
    case Type::kS16:
    case Type::kF16:
    case Type::kBF16:
      return 2;
    case Type::kB32:
    case Type::kU32:
    case Type::kS32:
    case Type::kF32:
    case Type::kF16x2:
    case Type::kBF16x2:
    case Type::kTF32:
    case Type::kU16x2:
    case Type::kS16x2:
      return 4;
    case Type::kE4M3x2:
    case Type::kE5M2x2:
      return 2;
    case Type::kB64:
    case Type::kU64:
    case Type::kS64:
    case Type::kF64:
      return 8;
    case Type::kB128:
      return 16;
    default:
      return 0;
  }
}

void Parser::fail(const std::string& what) const { fail_at(peek().line, what); }
void Parser::fail_at(uint32_t line, const std::string& what) const { throw ParseError{line, what}; }
void Parser::not_supported_at(uint32_t line, const std::string& what) const {
  throw ParseError{line, what, true};
}

void Parser::expect_punct(char c, const char* context) {
  if (!accept_punct(c))
    fail(std::string("expected '") + c + "' " + context + ", found " + describe(peek()));
}

std::string_view Parser::expect_ident(const char* context) {
  if (peek().kind != Tok::kIdent)
    fail(std::string("expected a name ") + context + ", found " + describe(peek()));
  return next().text;
}

void Parser::skip_to_semicolon() {
  while (peek().kind != Tok::kEnd && !is_punct(';')) next();
  accept_punct(';');
}

std::optional<Parser::Name> Parser::lookup(std::string_view name) const {
  std::string key(name);
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto f = it->find(key);
    if (f != it->end()) return f->second;
  }
  return std::nullopt;
}

void Parser::declare(std::string_view name, Name n, uint32_t line) {
  auto& scope = scopes_.back();
  auto [it, inserted] = scope.emplace(std::string(name), n);
  if (!inserted) {
    // PTX allows a declaration followed by a definition of the same function or variable.
    if (!n.is_reg && !it->second.is_reg) {
      it->second = n;
      return;
    }
    fail_at(line, "'" + std::string(name) + "' is declared twice in the same scope");
  }
}

uint32_t Parser::add_symbol(Symbol s) {
  m_.symbols.push_back(std::move(s));
  return static_cast<uint32_t>(m_.symbols.size() - 1);
}

uint32_t Parser::new_slot(Type t) {
  if (m_.slot_count >= kMaxSlots) fail("too many registers declared");
  m_.slot_bits.resize(m_.slot_count, 64);
  m_.slot_bits.push_back(static_cast<uint8_t>(t == Type::kPred ? 1 : std::min(64, type_bits(t))));
  return m_.slot_count++;
}

// `[N][M]...`: the extents, outermost first; a first `[]` (size from the initializer or, for
// `.extern .shared`, dynamic) sets `unsized` and has extent 0.
std::vector<uint64_t> Parser::parse_array_dims(bool& unsized) {
  std::vector<uint64_t> dims;
  while (is_punct('[')) {
    const uint32_t line = next().line;
    if (accept_punct(']')) {
      if (!dims.empty()) fail_at(line, "only the first array dimension can be left open");
      unsized = true;
      dims.push_back(0);
      continue;
    }
    const uint64_t n = expect_uint("as array size");
    if (n > (uint64_t{1} << 40)) fail_at(line, "array size " + std::to_string(n) + " is too large");
    dims.push_back(n);
    expect_punct(']', "after array size");
  }
  return dims;
}

uint64_t Parser::element_count(const std::vector<uint64_t>& dims, uint32_t line) const {
  uint64_t count = 1;
  for (uint64_t d : dims) {
    if (d != 0 && count > (uint64_t{1} << 40) / d) fail_at(line, "array is too large");
    count *= d;
  }
  return count;
}

// Parses `.align N`, `.vN`, `.ptr...` and the element type in any order.
bool Parser::parse_type_and_align(DeclType& dt) {
  bool any = false;
  for (;;) {
    const uint32_t line = peek().line;
    if (accept_dot(".align")) {
      dt.align = expect_u32("after .align");
      if (dt.align == 0 || (dt.align & (dt.align - 1)) != 0)
        fail_at(line, ".align " + std::to_string(dt.align) + " is not a power of two");
      any = true;
      continue;
    }
    if (is_dot(".v2") || is_dot(".v4") || is_dot(".v8")) {
      if (dt.vec != 1) fail_at(line, "two vector sizes in one declaration");
      dt.vec = static_cast<uint32_t>(next().text[2] - '0');
      any = true;
      continue;
    }
    if (accept_dot(".ptr")) {  // .ptr .global .align 4 (kernel pointer parameter attributes)
      while (peek().kind == Tok::kDot &&
             (is_dot(".global") || is_dot(".shared") || is_dot(".const") || is_dot(".local")))
        next();
      continue;
    }
    if (peek().kind == Tok::kDot) {
      Type t = type_from_suffix(peek().text);
      if (t != Type::kNone) {
        if (dt.type != Type::kNone) fail_at(line, "two types in one declaration");
        next();
        dt.type = t;
        any = true;
        continue;
      }
    }
    break;
  }
  return any && dt.type != Type::kNone;
}

// One initializer element at byte `at`: a constant expression converted to the element type,
// or an address (`sym`, `generic(sym)`, either `+ offset`), patched in once `sym` is bound.
void Parser::parse_init_element(Type t, uint32_t eb, uint64_t at, std::vector<uint8_t>& init,
                                std::vector<Module::Relocation>& relocs) {
  const uint32_t line = peek().line;
  if (init.size() < at + eb) init.resize(at + eb, 0);
  if (peek().kind == Tok::kIdent && !at_const_expr()) {
    std::string_view id = next().text;
    const bool generic = id == "generic" && accept_punct('(');
    if (generic) id = expect_ident("in generic()");
    auto n = lookup(id);
    if (!n || n->is_reg) fail_at(line, "unknown symbol '" + std::string(id) + "' in initializer");
    const Space target = m_.symbols[n->id].space;
    if (target != Space::kGlobal && target != Space::kConst && target != Space::kFunction)
      not_supported_at(line, "the address of '" + std::string(id) +
                                 "' (not a .global, .const or function) in an initializer");
    int64_t addend = 0;
    auto offset = [&] {
      const uint32_t l = peek().line;
      NumberValue v = parse_const_expr();
      if (v.kind != NumberValue::kInt) fail_at(l, "an address offset must be an integer constant");
      addend += static_cast<int64_t>(v.bits);
    };
    if (generic) {
      if (accept_punct('+')) offset();
      expect_punct(')', "after generic(");
    }
    if (accept_punct('+')) offset();
    // Addresses are 64-bit here; a narrower element would silently truncate one.
    const bool integer = t == Type::kB64 || t == Type::kU64 || t == Type::kS64;
    if (!integer)
      fail_at(line, "the address of '" + std::string(id) + "' needs a .u64/.s64/.b64 element");
    Module::Relocation r;
    r.offset = at;
    r.target_symbol = n->id;
    r.addend = addend;
    r.size = eb;
    relocs.push_back(r);
    return;
  }
  if (!at_const_expr()) fail("expected a value in initializer, found " + describe(peek()));
  NumberValue v = parse_const_expr();
  const uint64_t bits = immediate_bits(v, t, line);
  std::memcpy(init.data() + at, &bits, eb);
}

// `{ ... }` for dimension `level` of `dims` (the vector length is the innermost dimension),
// elements of `eb` bytes starting at byte `at`. Braces inside address the next dimension (a short
// list leaves the rest of its row zero, as in C); a list of plain values fills the elements of
// this level's sub-array in order. Returns the number of items; `nested` says which form it was.
uint64_t Parser::parse_init_list(const std::vector<uint64_t>& dims, size_t level, Type t,
                                 uint32_t eb, uint64_t at, std::vector<uint8_t>& init,
                                 std::vector<Module::Relocation>& relocs, bool& nested) {
  expect_punct('{', "to open an initializer list");
  nested = level + 1 < dims.size() && is_punct('{');
  uint64_t stride = eb;  // bytes per item
  uint64_t capacity = 1;
  if (nested) {
    for (size_t d = level + 1; d < dims.size(); ++d) stride *= dims[d];
    capacity = dims[level];
  } else {
    for (size_t d = level; d < dims.size(); ++d) capacity *= dims[d];
  }
  const bool open = dims[level] == 0;  // `[]`: as many as given
  uint64_t items = 0;
  while (!is_punct('}')) {
    if (!open && items >= capacity)
      fail("too many initializers (room for " + std::to_string(capacity) + " at this level)");
    bool inner = false;
    if (nested)
      parse_init_list(dims, level + 1, t, eb, at + items * stride, init, relocs, inner);
    else if (is_punct('{'))
      fail("unexpected '{' in initializer");
    else
      parse_init_element(t, eb, at + items * stride, init, relocs);
    ++items;
    if (!accept_punct(',')) break;
  }
  expect_punct('}', "to close an initializer list");
  return items;
}

void Parser::parse_module() {
  scopes_.emplace_back();
  m_.slot_bits.assign(kFirstRegSlot, 64);
  bool have_version = false;
  while (peek().kind != Tok::kEnd) {
    const Token& t = peek();
    if (t.kind != Tok::kDot) fail("expected a directive at module scope, found " + describe(t));
    std::string_view d = t.text;
    if (d == ".version") {
      next();
      // major.minor, each a decimal integer through the checked conversion.
      const Token& vt = peek();
      const size_t dot = vt.kind == Tok::kNumber ? vt.text.find('.') : std::string_view::npos;
      NumberValue major, minor;
      std::string why;
      if (dot == std::string_view::npos || dot == 0 || dot + 1 == vt.text.size() ||
          vt.text.find_first_not_of("0123456789.") != std::string_view::npos ||
          vt.text.find('.', dot + 1) != std::string_view::npos ||
          !parse_number(vt.text.substr(0, dot), major, why) ||
          !parse_number(vt.text.substr(dot + 1), minor, why) || major.kind != NumberValue::kInt ||
          minor.kind != NumberValue::kInt || major.bits > 99 || minor.bits > 9)
        fail("expected a version like 9.0 after .version, found " + describe(vt));
      next();
      m_.ptx_version = static_cast<uint32_t>(major.bits * 10 + minor.bits);
      have_version = true;
      continue;
    }
    if (!have_version) fail("expected .version before " + describe(t));
    if (d == ".target") {
      next();
      for (;;) {
        const uint32_t line = peek().line;
        std::string_view name = expect_ident("after .target");
        if (name.substr(0, 3) == "sm_") {  // sm_NN with an optional feature suffix (sm_90a)
          std::string_view digits = name.substr(3);
          digits = digits.substr(0, digits.find_first_not_of("0123456789"));
          NumberValue v;
          std::string why;
          if (digits.empty() || !parse_number(digits, v, why) || v.bits > 10000)
            fail_at(line, "malformed target '" + std::string(name) + "'");
          m_.target_sm = static_cast<uint32_t>(v.bits);
        } else if (name == "map_f64_to_f32") {
          // Changes what every .f64 instruction computes; the emulator runs .f64 as written.
          not_supported_at(line, ".target map_f64_to_f32 is not supported by the emulator");
        } else if (name == "texmode_independent") {
          m_.texmode_independent = true;
        } else if (name != "texmode_unified" && name != "debug") {
          fail_at(line, "unknown target '" + std::string(name) + "'");
        }
        if (!accept_punct(',')) break;
      }
      continue;
    }
    if (d == ".address_size") {
      next();
      m_.address_size = static_cast<uint32_t>(expect_uint("after .address_size"));
      if (m_.address_size != 64 && m_.address_size != 32) fail("address size must be 32 or 64");
      // Device addresses are host addresses here, which do not fit in 32 bits.
      if (m_.address_size == 32)
        not_supported_at(t.line, ".address_size 32 is not supported by the emulator");
      continue;
    }
    if (d == ".file") {  // .file N "name" [, timestamp, size]
      next();
      expect_uint("after .file");
      if (peek().kind != Tok::kString)
        fail_at(t.line, "expected a file name after .file N, found " + describe(peek()));
      next();
      if (peek().kind == Tok::kString)
        fail_at(t.line,
                ".file takes one file name, found a second string (LLVM 14 writes a directory "
                "and a name unless given -fno-dwarf-directory-asm; ptxas refuses that too)");
      while (accept_punct(',')) expect_uint("in .file");
      continue;
    }
    if (d == ".section") {  // debug sections: skip the braced body
      next();
      while (peek().kind != Tok::kEnd && !is_punct('{')) next();
      int depth = 0;
      do {
        if (is_punct('{')) ++depth;
        if (is_punct('}')) --depth;
        next();
      } while (depth > 0 && peek().kind != Tok::kEnd);
      continue;
    }
    if (d == ".pragma") {
      next();
      parse_pragma_strings();
      continue;
    }
    if (d == ".alias") not_supported_at(t.line, ".alias is not supported by the emulator");
    // `.global .texref name;` and `.global .surfref name;` (unified texture mode references) are
    // variables holding the driver's reference handle; every other form names a construct the
    // emulator does not implement.
    bool declared_reference = false;
    for (const char* opaque : {".texref", ".samplerref", ".surfref"})
      for (size_t k = 0; k < 4 && !declared_reference && peek(k).kind == Tok::kDot; ++k) {
        if (peek(k).text != opaque) continue;
        const std::string what(opaque);
        if (what == ".samplerref")
          not_supported_at(t.line,
                           ".samplerref variables (the separate samplers of independent texture "
                           "mode) are not supported by the emulator");
        if (k != 1 || !is_dot(".global"))
          not_supported_at(t.line, what + " variables are supported only as '.global " + what +
                                       " name;' by the emulator (no .extern, .visible, .weak)");
        if (m_.texmode_independent)
          not_supported_at(t.line, what +
                                       " variables of a .texmode_independent module are not "
                                       "supported by the emulator (only unified texture mode)");
        next();
        parse_reference_variable(what == ".texref" ? OpaqueKind::kTexref : OpaqueKind::kSurfref);
        declared_reference = true;
      }
    if (declared_reference) continue;
    bool is_extern = false, is_visible = false;
    while (is_dot(".extern") || is_dot(".visible") || is_dot(".weak") || is_dot(".common")) {
      if (is_dot(".extern")) is_extern = true;
      if (is_dot(".visible")) is_visible = true;
      next();
    }
    if (accept_dot(".entry")) {
      parse_function(true, is_extern);
      continue;
    }
    if (accept_dot(".func")) {
      parse_function(false, is_extern);
      continue;
    }
    if (accept_dot(".global")) {
      parse_module_variable(Space::kGlobal, is_extern, is_visible);
      continue;
    }
    if (accept_dot(".const")) {
      parse_module_variable(Space::kConst, is_extern, is_visible);
      continue;
    }
    if (accept_dot(".shared")) {
      parse_module_variable(Space::kShared, is_extern, is_visible);
      continue;
    }
    if (is_dot(".local"))
      not_supported_at(peek().line,
                       "module-scope .local variables are not supported by the emulator");
    fail("unknown directive " + describe(peek()));
  }
  if (!have_version) fail("missing .version directive");

  // Direct calls must reach code the emulator can run: a body, or a builtin it implements.
  // (Indirect calls are checked when they execute; their targets are only known then.)
  for (const Instr& in : m_.code) {
    if (in.op != Op::kCall || in.callee == kIndirectCallee) continue;
    const Function& callee = m_.functions[in.callee];
    const std::string& caller = m_.functions[in.function].name;
    if (!callee.has_body && callee.builtin == Builtin::kNone)
      fail_at(in.line, "function '" + caller + "' calls '" + callee.name +
                           "', which is declared but never defined (unresolved extern function)");
    // A missing argument would read as zero and a missing return slot would drop the value.
    if (in.ops[1].count != callee.params.size() || in.ops[0].count != callee.returns.size())
      fail_at(in.line, "call of '" + callee.name + "' passes " + std::to_string(in.ops[1].count) +
                           " arguments and " + std::to_string(in.ops[0].count) +
                           " return values; it takes " + std::to_string(callee.params.size()) +
                           " and " + std::to_string(callee.returns.size()));
  }

  // Finalisation: call graph facts, shared layouts, kernel descriptors.
  const size_t nf = m_.functions.size();
  // Recursion: a function is recursive when it can reach itself.
  for (size_t i = 0; i < nf; ++i) {
    std::vector<char> seen(nf, 0);
    std::vector<uint32_t> stack(m_.functions[i].callees.begin(), m_.functions[i].callees.end());
    while (!stack.empty()) {
      uint32_t f = stack.back();
      stack.pop_back();
      if (f == i) {
        m_.functions[i].recursive = true;
        break;
      }
      if (seen[f]) continue;
      seen[f] = 1;
      for (uint32_t c : m_.functions[f].callees) stack.push_back(c);
    }
  }
  if (m_.has_indirect_calls) {
    // Any function may be reached through a pointer, possibly re-entrantly: save registers.
    for (Function& f : m_.functions) f.recursive = true;
  }
  for (size_t k = 0; k < m_.kernels.size(); ++k) {
    KernelInfo& ki = m_.kernel_info[k];
    KernelDesc& kd = m_.kernels[k];
    std::vector<char> reach(nf, 0);
    std::vector<uint32_t> stack{ki.function};
    uint32_t regs = 0;
    while (!stack.empty()) {
      uint32_t f = stack.back();
      stack.pop_back();
      if (reach[f]) continue;
      reach[f] = 1;
      regs += m_.functions[f].end_slot - m_.functions[f].first_slot;
      for (uint32_t c : m_.functions[f].callees) stack.push_back(c);
    }
    // Calls through function pointers can reach any function (and its shared variables).
    if (m_.has_indirect_calls) std::fill(reach.begin(), reach.end(), 1);
    for (size_t f = 0; f < nf; ++f)
      if (reach[f])
        ki.slot_ranges.emplace_back(m_.functions[f].first_slot, m_.functions[f].end_slot);
    ki.shared_offset.assign(m_.shared_symbol_count, -1);
    uint64_t off = 0;
    uint32_t ext_align = 16;
    bool uses_dynamic = false;
    for (size_t f = 0; f < nf; ++f) {
      if (!reach[f]) continue;
      for (uint32_t s : m_.functions[f].shared_symbols) {
        const Symbol& sym = m_.symbols[s];
        if (ki.shared_offset[sym.shared_id] >= 0) continue;
        if (sym.extern_shared) {
          uses_dynamic = true;
          ext_align = std::max(ext_align, sym.align);
          ki.shared_offset[sym.shared_id] = -2;  // patched below
          continue;
        }
        off = (off + sym.align - 1) / sym.align * sym.align;
        ki.shared_offset[sym.shared_id] = static_cast<int64_t>(off);
        off += sym.size;
      }
    }
    ki.static_shared = static_cast<uint32_t>(off);
    ki.dynamic_shared_offset = static_cast<uint32_t>((off + ext_align - 1) / ext_align * ext_align);
    for (int64_t& o : ki.shared_offset)
      if (o == -2) o = ki.dynamic_shared_offset;
    kd.static_shared_bytes = ki.static_shared;
    kd.uses_dynamic_shared = uses_dynamic;
    kd.num_regs = std::min<uint32_t>(255, regs);
    // Deepest non-recursive call chain's frames.
    std::function<uint32_t(uint32_t, int)> depth = [&](uint32_t f, int guard) -> uint32_t {
      if (guard > 64) return 0;
      uint32_t best = 0;
      for (uint32_t c : m_.functions[f].callees)
        if (!m_.functions[c].recursive) best = std::max(best, depth(c, guard + 1));
      return ((m_.functions[f].frame_bytes + 15) & ~15u) + best;
    };
    ki.max_frame = depth(ki.function, 0);
    kd.local_bytes_per_thread = ki.max_frame;
  }
}

void Parser::parse_module_variable(Space space, bool is_extern, bool /*is_visible*/) {
  DeclType dt;
  uint32_t line = peek().line;
  // `.global .attribute(.managed)` (nvcc's `__managed__`): the driver places the variable in
  // managed memory, where host and device see the same bytes. `.attribute(.unified(..))` on a
  // variable would need one address shared with the host's symbol, which the emulator lacks.
  bool managed = false;
  if (is_dot(".attribute")) {
    next();
    expect_punct('(', "after .attribute");
    for (;;) {
      if (is_dot(".unified"))
        not_supported_at(line,
                         "variable attribute .unified is not supported by the emulator (only "
                         ".managed)");
      if (!accept_dot(".managed"))
        fail_at(line, "expected .managed or .unified in a variable's .attribute, found " +
                          describe(peek()));
      if (space != Space::kGlobal)
        fail_at(line, ".attribute(.managed) applies only to .global variables");
      managed = true;
      if (!accept_punct(',')) break;
    }
    expect_punct(')', "after the variable attributes");
  }
  if (!parse_type_and_align(dt))
    fail("expected a type in variable declaration, found " + describe(peek()));
  if (dt.type == Type::kPred) fail_at(line, "variables cannot have type .pred");
  for (;;) {
    std::string_view name = expect_ident("in variable declaration");
    const uint32_t eb = type_bytes(dt.type);
    const uint64_t elem = uint64_t{eb} * dt.vec;
    bool unsized = false;
    std::vector<uint64_t> dims = parse_array_dims(unsized);
    Symbol s;
    s.name = std::string(name);
    s.space = space;
    s.align = dt.align ? dt.align : static_cast<uint32_t>(elem);
    if (s.align == 0) s.align = 1;
    std::vector<uint8_t> init;
    std::vector<Module::Relocation> relocs;
    uint64_t count = element_count(dims, line);
    if (is_punct('=')) {
      const uint32_t at_line = next().line;
      if (space != Space::kGlobal && space != Space::kConst)
        fail_at(at_line, "only .global and .const variables can have initializers");
      if (is_extern) fail_at(at_line, "an .extern variable cannot have an initializer");
      // The vector length is the innermost dimension of the initializer.
      std::vector<uint64_t> shape = dims;
      if (dt.vec > 1) shape.push_back(dt.vec);
      if (shape.empty()) {
        parse_init_element(dt.type, eb, 0, init, relocs);
      } else {
        bool nested = false;
        const uint64_t items = parse_init_list(shape, 0, dt.type, eb, 0, init, relocs, nested);
        if (unsized) {
          // Nested lists give the outer extent; a flat one fills whole rows.
          uint64_t row = 1;
          for (size_t d = 1; d < shape.size(); ++d) row *= shape[d];
          dims[0] = nested ? items : (items + row - 1) / row;
          count = element_count(dims, line);
        }
      }
    }
    if (count > (uint64_t{1} << 40) || elem * count > (uint64_t{1} << 40) ||
        (space == Space::kShared && elem * count > kMaxFrameBytes))
      fail_at(line, "'" + std::string(name) + "' is too large");
    s.size = elem * count;
    if (unsized && space != Space::kShared && init.empty()) s.size = 0;
    if (init.size() > s.size)
      fail_at(line, "initializer of '" + std::string(name) + "' is longer than the variable");
    if (space == Space::kShared) {
      s.shared_id = static_cast<int32_t>(m_.shared_symbol_count++);
      s.extern_shared = is_extern || unsized;
    }
    uint32_t sym = add_symbol(s);
    if (space == Space::kGlobal || space == Space::kConst) {
      VariableDesc v;
      v.name = s.name;
      v.space = space == Space::kGlobal ? VariableSpace::kGlobal : VariableSpace::kConst;
      v.size = s.size;
      v.align = s.align;
      v.initializer = std::move(init);
      v.is_extern = is_extern;
      v.managed = managed;
      // A later definition of an earlier declaration replaces it; a later declaration of an
      // earlier definition repeats it (the definition stands); two definitions are invalid.
      auto prior = lookup(name);
      if (prior && !prior->is_reg && m_.symbols[prior->id].variable >= 0 && scopes_.size() == 1) {
        int32_t vi = m_.symbols[prior->id].variable;
        const bool prior_defined = !m_.variables[vi].is_extern;
        if (prior_defined && !is_extern)
          fail_at(line, "variable '" + std::string(name) + "' is defined twice");
        if (!prior_defined) {
          m_.variables[vi] = std::move(v);
          m_.symbols[prior->id] = m_.symbols[sym];
          m_.symbols[prior->id].variable = vi;
        }
        m_.symbols.pop_back();
        sym = prior->id;
      } else {
        m_.symbols[sym].variable = static_cast<int32_t>(m_.variables.size());
        m_.variables.push_back(std::move(v));
        m_.variable_symbol.push_back(sym);
      }
      for (auto& r : relocs) {
        r.variable = static_cast<uint32_t>(m_.symbols[sym].variable);
        m_.relocations.push_back(r);
      }
    }
    declare(name, Name{false, sym}, line);
    if (scopes_.size() == 1) m_.global_symbols[std::string(name)] = sym;
    if (!accept_punct(',')) break;
  }
  expect_punct(';', "after variable declaration");
}

void Parser::parse_reference_variable(OpaqueKind kind) {
  const uint32_t line = peek().line;
  const char* what = kind == OpaqueKind::kTexref ? ".texref" : ".surfref";
  next();  // .texref / .surfref
  for (;;) {
    std::string_view name = expect_ident(kind == OpaqueKind::kTexref ? "in a .texref declaration"
                                                                     : "in a .surfref declaration");
    if (is_punct('['))
      not_supported_at(
          line, std::string("arrays of ") + what + " variables are not supported by the emulator");
    if (is_punct('='))
      not_supported_at(line, std::string("initializers of ") + what +
                                 " variables are not supported by the emulator");
    if (auto prior = lookup(name); prior && scopes_.size() == 1)
      fail_at(line, "'" + std::string(name) + "' is declared twice in the same scope");
    Symbol s;
    s.name = std::string(name);
    s.space = Space::kGlobal;
    s.size = 8;
    s.align = 8;
    s.opaque = kind;
    const uint32_t sym = add_symbol(s);
    VariableDesc v;
    v.name = s.name;
    v.space = VariableSpace::kGlobal;
    v.size = 8;
    v.align = 8;
    v.opaque = kind;
    m_.symbols[sym].variable = static_cast<int32_t>(m_.variables.size());
    m_.variables.push_back(std::move(v));
    m_.variable_symbol.push_back(sym);
    declare(name, Name{false, sym}, line);
    m_.global_symbols[std::string(name)] = sym;
    if (!accept_punct(',')) break;
  }
  expect_punct(';', "after a .texref or .surfref declaration");
}

void Parser::parse_performance_directives(KernelDesc* kd) {
  // nx[, ny[, nz]], each at least 1.
  auto dims = [&](const char* directive) {
    uint32_t v[3] = {1, 1, 1};
    for (int i = 0; i < 3; ++i) {
      const uint32_t line = peek().line;
      v[i] = expect_u32(directive);
      if (v[i] == 0) fail_at(line, std::string(directive) + " needs extents of at least 1");
      if (!accept_punct(',')) break;
    }
    return Dim3{v[0], v[1], v[2]};
  };
  for (;;) {
    const Token& t = peek();
    if (is_dot(".maxntid") || is_dot(".reqntid")) {
      const bool req = is_dot(".reqntid");
      next();
      const Dim3 d = dims(req ? "in .reqntid" : "in .maxntid");
      if (kd) {
        if (req) kd->reqntid = d;
        const uint64_t n = std::min<uint64_t>(d.count(), 0xffffffffu);
        const uint32_t limit = static_cast<uint32_t>(n);
        kd->max_threads_per_block =
            kd->max_threads_per_block ? std::min(kd->max_threads_per_block, limit) : limit;
      }
      continue;
    }
    if (is_dot(".reqnctapercluster")) {
      next();
      const Dim3 d = dims("in .reqnctapercluster");
      if (kd) kd->reqnctapercluster = d;
      continue;
    }
    if (is_dot(".maxclusterrank")) {
      next();
      const uint32_t n = expect_u32("after .maxclusterrank");
      if (kd) kd->max_cluster_rank = n;
      continue;
    }
    if (is_dot(".explicitcluster")) {
      next();
      if (kd) kd->explicit_cluster = true;
      continue;
    }
    // Occupancy and register-allocation hints, and `.noreturn` on functions: no effect on what a
    // kernel computes.
    if (is_dot(".minnctapersm") || is_dot(".maxnctapersm") || is_dot(".maxnreg") ||
        is_dot(".abi_preserve") || is_dot(".abi_preserve_control")) {
      const std::string what(next().text);
      expect_u32(("after " + what).c_str());
      continue;
    }
    if (accept_dot(".noreturn")) continue;
    if (is_dot(".blocksareclusters"))
      not_supported_at(t.line, ".blocksareclusters is not supported by the emulator");
    if (is_dot(".pragma")) {
      next();
      parse_pragma_strings();
      continue;
    }
    break;
  }
}

// `.pragma "a", "b";`: performance hints (nounroll, used_bytes_mask ...) that do not change
// results.
void Parser::parse_pragma_strings() {
  for (;;) {
    if (peek().kind != Tok::kString)
      fail("expected a string after .pragma, found " + describe(peek()));
    next();
    if (!accept_punct(',')) break;
  }
  expect_punct(';', "after .pragma");
}

void Parser::parse_param_list(Function& f, bool is_entry, bool returns) {
  expect_punct('(', "to open the parameter list");
  uint32_t offset = 0;
  if (accept_punct(')')) return;
  for (;;) {
    uint32_t line = peek().line;
    bool is_reg = false;
    if (accept_dot(".reg"))
      is_reg = true;
    else if (!accept_dot(".param"))
      fail("expected .param in parameter list, found " + describe(peek()));
    DeclType dt;
    if (!parse_type_and_align(dt)) fail("expected a parameter type, found " + describe(peek()));
    std::string_view name = expect_ident("as parameter name");
    bool unsized = false;  // `p[]` counts as one element
    std::vector<uint64_t> dims = parse_array_dims(unsized);
    if (unsized) dims[0] = 1;
    const uint64_t count = element_count(dims, line);
    uint32_t elem = type_bytes(dt.type) * dt.vec;
    if (count > 65536 || elem * count > 65536)
      fail_at(line, "parameter '" + std::string(name) + "' is too large");
    uint32_t size = static_cast<uint32_t>(elem * count);
    uint32_t align = dt.align ? dt.align : std::max<uint32_t>(1, elem);
    FormalParam fp;
    fp.size = size;
    if (is_reg) {
      fp.is_reg = true;
      fp.slot = new_slot(dt.type);
      declare(name, Name{true, fp.slot}, line);
    } else {
      Symbol s;
      s.name = std::string(name);
      s.size = size;
      s.align = align;
      s.function = static_cast<int32_t>(current_index_);
      if (is_entry) {
        offset = (offset + align - 1) / align * align;
        s.space = Space::kParamKernel;
        s.offset = offset;
        offset += size;
        KernelDesc& kd = m_.kernels.back();
        kd.params.push_back(ParamDesc{static_cast<uint32_t>(s.offset), size, align});
        kd.param_bytes = offset;
      } else {
        s.space = Space::kParamFrame;
        f.frame_bytes = (f.frame_bytes + align - 1) / align * align;
        s.offset = f.frame_bytes;
        f.frame_bytes += size;
      }
      fp.symbol = add_symbol(s);
      declare(name, Name{false, fp.symbol}, line);
    }
    (returns ? f.returns : f.params).push_back(fp);
    if (accept_punct(')')) break;
    expect_punct(',', "between parameters");
  }
}

void Parser::parse_function(bool is_entry, bool is_extern) {
  uint32_t line = peek().line;
  Function f;
  f.is_entry = is_entry;
  f.line = line;
  // Parameters live in a scope of their own so that a later definition can redeclare them.
  scopes_.emplace_back();
  current_index_ = static_cast<uint32_t>(m_.functions.size());
  if (is_entry) {
    m_.kernels.emplace_back();
    m_.kernel_info.emplace_back();
  }
  f.first_slot = m_.slot_count;
  if (!is_entry && is_dot(".attribute")) parse_function_attributes();
  std::string_view name;
  if (!is_entry && is_punct('(')) {
    parse_param_list(f, false, true);
  }
  name = expect_ident("as function name");
  f.name = std::string(name);
  if (is_entry) m_.kernels.back().name = f.name;
  // Declare the function in module scope before its body so it can call itself.
  auto prior = scopes_.front().find(f.name);
  uint32_t fsym;
  if (prior != scopes_.front().end() && !prior->second.is_reg &&
      m_.symbols[prior->second.id].space == Space::kFunction) {
    fsym = prior->second.id;
    // A prototype repeated, or a definition of a prototype: reuse its index (a second
    // definition is refused where its body begins).
    current_index_ = static_cast<uint32_t>(m_.symbols[fsym].function);
  } else {
    Symbol s;
    s.name = f.name;
    s.space = Space::kFunction;
    s.function = static_cast<int32_t>(current_index_);
    fsym = add_symbol(s);
    scopes_.front().emplace(f.name, Name{false, fsym});
    m_.functions.emplace_back();
  }
  if (is_punct('(')) parse_param_list(f, is_entry, false);
  parse_performance_directives(is_entry ? &m_.kernels.back() : nullptr);
  if (f.name == "vprintf") f.builtin = Builtin::kVprintf;
  if (f.name == "__assertfail") f.builtin = Builtin::kAssertfail;
  if (f.name == "malloc") f.builtin = Builtin::kMalloc;
  if (f.name == "free") f.builtin = Builtin::kFree;
  if (accept_punct(';')) {
    f.end_slot = m_.slot_count;
    if (is_entry) {
      m_.kernels.pop_back();
      m_.kernel_info.pop_back();
    }
    if (!m_.functions[current_index_].has_body) m_.functions[current_index_] = std::move(f);
    scopes_.pop_back();
    return;
  }
  if (is_extern) fail("an .extern function cannot have a body");
  if (m_.functions[current_index_].has_body)
    fail_at(line, "function '" + f.name + "' is defined twice");
  if (is_entry) {
    f.kernel = static_cast<int32_t>(m_.kernels.size() - 1);
    m_.kernel_info.back().function = current_index_;
  }
  f.has_body = true;
  f.builtin = Builtin::kNone;
  Function& slot = m_.functions[current_index_];
  slot = std::move(f);
  current_ = &slot;
  parse_body(slot);
  current_ = nullptr;
  scopes_.pop_back();
}

// `.func .attribute(.unified(uuid1, uuid2)) f(...)`: the function has one identity in the host
// and every device, so host code can hand its address to kernels. No effect on what the function
// computes; function addresses stay the emulator's own (an address taken on the host and called
// through on the device fails the indirect call with an error, as any non-function address does).
void Parser::parse_function_attributes() {
  const uint32_t line = next().line;  // .attribute
  expect_punct('(', "after .attribute");
  for (;;) {
    if (!accept_dot(".unified"))
      not_supported_at(line, "function attribute " + describe(peek()) +
                                 " is not supported by the emulator (only .unified(uuid1, uuid2))");
    expect_punct('(', "after .unified");
    expect_uint("as the first half of the .unified UUID");
    expect_punct(',', "between the halves of the .unified UUID");
    expect_uint("as the second half of the .unified UUID");
    expect_punct(')', "after the .unified UUID");
    if (!accept_punct(',')) break;
  }
  expect_punct(')', "after the function attributes");
}

void Parser::parse_reg_decl() {
  DeclType dt;
  uint32_t line = peek().line;
  if (!parse_type_and_align(dt))
    fail("expected a register type after .reg, found " + describe(peek()));
  // A register slot holds one scalar of up to 64 bits.
  if (dt.vec > 1)
    not_supported_at(line, "vector registers (.reg .v" + std::to_string(dt.vec) +
                               ") are not supported by the emulator");
  if (type_bits(dt.type) > 64)
    not_supported_at(line, "128-bit registers are not supported by the emulator");
  for (;;) {
    std::string_view name = expect_ident("in .reg declaration");
    if (accept_punct('<')) {  // %r<N> declares %r0 .. %r(N-1)
      no_greater_ = true;
      uint64_t n = expect_uint("in %name<N>");
      no_greater_ = false;
      if (n > kMaxSlots || m_.slot_count + n > kMaxSlots)
        fail_at(line, "too many registers declared");
      expect_punct('>', "after register count");
      for (uint64_t i = 0; i < n; ++i) {
        owned_names_.push_back(std::string(name) + std::to_string(i));
        uint32_t slot = new_slot(dt.type);
        declare(owned_names_.back(), Name{true, slot}, line);
      }
    } else {
      uint32_t slot = new_slot(dt.type);
      declare(name, Name{true, slot}, line);
    }
    if (!accept_punct(',')) break;
  }
  expect_punct(';', "after .reg declaration");
}

void Parser::parse_local_decl(Function& f, Space space) {
  DeclType dt;
  uint32_t line = peek().line;
  if (!parse_type_and_align(dt)) fail("expected a type in declaration, found " + describe(peek()));
  for (;;) {
    std::string_view name = expect_ident("in declaration");
    bool unsized = false;  // `.shared .b8 s[]`: dynamic shared memory
    std::vector<uint64_t> dims = parse_array_dims(unsized);
    if (unsized) dims[0] = 1;
    const uint64_t count = element_count(dims, line);
    uint32_t elem = type_bytes(dt.type) * dt.vec;
    if (count > kMaxFrameBytes || elem * count > kMaxFrameBytes)
      fail_at(line, "'" + std::string(name) + "' is too large for a function-scope variable");
    Symbol s;
    s.name = std::string(name);
    s.size = elem * count;
    s.align = dt.align ? dt.align : std::max<uint32_t>(1, elem);
    s.function = static_cast<int32_t>(current_index_);
    if (space == Space::kShared) {
      s.space = Space::kShared;
      s.shared_id = static_cast<int32_t>(m_.shared_symbol_count++);
      s.extern_shared = unsized;
    } else {
      s.space = space == Space::kLocal ? Space::kLocal : Space::kParamFrame;
      f.frame_bytes = (f.frame_bytes + s.align - 1) / s.align * s.align;
      s.offset = f.frame_bytes;
      f.frame_bytes += static_cast<uint32_t>(s.size);
    }
    if (accept_punct('='))
      fail_at(line, "initializers on function-scope variables are not supported");
    declare(name, Name{false, add_symbol(s)}, line);
    if (!accept_punct(',')) break;
  }
  expect_punct(';', "after declaration");
}

void Parser::parse_body(Function& f) {
  expect_punct('{', "to open the function body");
  f.first_instr = static_cast<uint32_t>(m_.code.size());
  scopes_.emplace_back();
  labels_.clear();
  fixups_.clear();
  branch_targets_.clear();
  table_fixups_.clear();
  int depth = 1;
  while (depth > 0) {
    const Token& t = peek();
    if (t.kind == Tok::kEnd) fail("unexpected end of input inside function '" + f.name + "'");
    if (accept_punct('{')) {
      ++depth;
      scopes_.emplace_back();
      continue;
    }
    if (accept_punct('}')) {
      --depth;
      scopes_.pop_back();
      continue;
    }
    if (t.kind == Tok::kDot) {
      if (accept_dot(".reg")) {
        parse_reg_decl();
        continue;
      }
      if (accept_dot(".local")) {
        parse_local_decl(f, Space::kLocal);
        continue;
      }
      if (accept_dot(".param")) {
        parse_local_decl(f, Space::kParamFrame);
        continue;
      }
      if (accept_dot(".shared")) {
        size_t before = m_.symbols.size();
        parse_local_decl(f, Space::kShared);
        for (size_t s = before; s < m_.symbols.size(); ++s)
          f.shared_symbols.push_back(static_cast<uint32_t>(s));
        continue;
      }
      if (is_dot(".pragma")) {
        next();
        parse_pragma_strings();
        continue;
      }
      if (is_dot(".loc") || is_dot(".file")) {
        uint32_t l = next().line;
        // Debug line info runs to the end of its line.
        while (peek().kind != Tok::kEnd && peek().line == l && !is_punct(';') && !is_punct('}'))
          next();
        continue;
      }
      fail("unexpected directive " + describe(t) + " inside function '" + f.name + "'");
    }
    if (t.kind == Tok::kIdent && is_punct(':', 1)) {
      std::string label(t.text);
      uint32_t line = t.line;
      next();
      next();
      if (is_dot(".callprototype")) {
        skip_to_semicolon();
        continue;
      }                                // indirect-call prototype
      if (is_dot(".branchtargets")) {  // name: .branchtargets L1, L2, ...;  (for brx.idx)
        next();
        BranchTargets list{{}, line};
        do {
          if (peek().kind != Tok::kIdent)
            fail_at(line, "expected a label in .branchtargets, found " + describe(peek()));
          list.labels.emplace_back(next().text);
        } while (accept_punct(','));
        expect_punct(';', "after the .branchtargets list");
        if (!branch_targets_.emplace(label, std::move(list)).second)
          fail_at(line, "branch-target list '" + label + "' defined twice");
        continue;
      }
      if (!labels_.emplace(label, static_cast<uint32_t>(m_.code.size())).second)
        fail_at(line, "label '" + label + "' defined twice");
      continue;
    }
    const size_t start = pos_;
    const size_t fixups = fixups_.size();
    const size_t table_fixups = table_fixups_.size();
    try {
      parse_instruction(f);
    } catch (ParseError& e) {
      if (!e.not_supported) throw;
      unsupported_.push_back(std::move(e));
      fixups_.resize(fixups);  // a refused branch's target must not patch the next instruction
      table_fixups_.resize(table_fixups);
      pos_ = start;
      skip_to_semicolon();
    }
  }
  f.end_instr = static_cast<uint32_t>(m_.code.size());
  f.end_slot = m_.slot_count;
  // An implicit `ret`/`exit` at the end keeps the interpreter from running off a function.
  {
    Instr r;
    r.op = Op::kRet;
    r.line = peek().line;
    r.function = current_index_;
    r.in_kernel = f.is_entry;
    m_.code.push_back(r);
    f.end_instr = static_cast<uint32_t>(m_.code.size());
  }
  for (const LabelFixup& fx : fixups_) {
    auto it = labels_.find(fx.name);
    if (it == labels_.end()) fail_at(fx.line, "unknown label '" + fx.name + "'");
    Operand& o = m_.code[fx.instr].ops[fx.operand];
    o.kind = Operand::kLabel;
    o.index = it->second;
  }
  for (const TableFixup& fx : table_fixups_) {
    auto list = branch_targets_.find(fx.name);
    if (list == branch_targets_.end())
      fail_at(fx.line, "brx.idx names '" + fx.name + "', which is not a .branchtargets list");
    std::vector<uint32_t>& table = m_.branch_tables[fx.table];
    for (const std::string& name : list->second.labels) {
      auto it = labels_.find(name);
      if (it == labels_.end())
        fail_at(list->second.line, "unknown label '" + name + "' in .branchtargets");
      table.push_back(it->second);
    }
  }
}

bool parse_module(std::string_view text, Module& module, std::string& error, bool* not_supported) {
  if (not_supported) *not_supported = false;
  std::vector<Token> tokens;
  if (!tokenize(text, tokens, error)) return false;
  Parser p(std::move(tokens), module);
  // Not-supported instructions are collected (Parser::unsupported_) and reported together, one
  // "line L: ..." per line, once the whole module has been read: whoever ports a kernel sees
  // everything the emulator lacks at once. Text that is not PTX still ends the parse and wins.
  std::vector<ParseError>& refused = p.unsupported_;
  try {
    p.parse_module();
  } catch (const ParseError& e) {
    if (!e.not_supported) {
      error = "line " + std::to_string(e.line) + ": " + e.what;
      return false;
    }
    refused.push_back(e);
  }
  if (refused.empty()) return true;
  error.clear();
  for (const ParseError& e : refused) {
    if (!error.empty()) error += '\n';
    error += "line " + std::to_string(e.line) + ": " + e.what;
  }
  if (not_supported) *not_supported = true;
  return false;
}

}  // namespace cusnap::emu::ptx

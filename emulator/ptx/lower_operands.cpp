// Operand syntax (registers, special registers, immediates, vectors, addresses, symbols) and
// their lowering into Operand slots, with immediates converted to the type the instruction reads.
#include <bit>
#include <cstdio>
#include <cstring>

#include "parser_internal.h"

namespace cusnap::emu::ptx {

std::optional<uint32_t> Parser::special_slot(std::string_view name, std::string_view comp,
                                             uint32_t line) {
  auto xyz = [&](uint32_t base) -> std::optional<uint32_t> {
    if (comp == ".x") return base;
    if (comp == ".y") return base + 1;
    if (comp == ".z") return base + 2;
    return std::nullopt;
  };
  if (name == "%tid") return xyz(kSpTidX);
  if (name == "%ntid") return xyz(kSpNtidX);
  if (name == "%ctaid") return xyz(kSpCtaidX);
  if (name == "%nctaid") return xyz(kSpNctaidX);
  if (name == "%cluster_ctaid") return xyz(kSpClusterCtaidX);
  if (name == "%cluster_nctaid") return xyz(kSpClusterNctaidX);
  if (name == "%clusterid") return xyz(kSpClusteridX);
  if (name == "%nclusterid") return xyz(kSpNclusteridX);
  if (!comp.empty()) return std::nullopt;
  struct E {
    const char* n;
    uint32_t s;
  };
  static const E kTable[] = {
      {"%laneid", kSpLaneid},
      {"%warpid", kSpWarpid},
      {"%nwarpid", kSpNwarpid},
      {"%smid", kSpSmid},
      {"%nsmid", kSpNsmid},
      {"%gridid", kSpGridid},
      {"%lanemask_eq", kSpLanemaskEq},
      {"%lanemask_lt", kSpLanemaskLt},
      {"%lanemask_le", kSpLanemaskLe},
      {"%lanemask_gt", kSpLanemaskGt},
      {"%lanemask_ge", kSpLanemaskGe},
      {"%clock", kSpClock},
      {"%clock_hi", kSpClockHi},
      {"%clock64", kSpClock64},
      {"%globaltimer", kSpGlobaltimer},
      {"%globaltimer_lo", kSpGlobaltimerLo},
      {"%globaltimer_hi", kSpGlobaltimerHi},
      {"%dynamic_smem_size", kSpDynSmem},
      {"%total_smem_size", kSpTotalSmem},
      {"%cluster_ctarank", kSpClusterCtarank},
      {"%cluster_nctarank", kSpClusterNctarank},
      // No shared memory is reserved for the system here, so the aggregate is the total.
      {"%is_explicit_cluster", kSpIsExplicitCluster},
      {"%aggr_smem_size", kSpTotalSmem},
  };
  for (const E& e : kTable)
    if (name == e.n) return e.s;
  // %envreg0..31 and the performance counters %pm0..7 / %pm0_64..%pm7_64 (never counting
  // here: they read 0). Exact spellings only: `%envreg01` or `%pm8` are not predefined.
  for (uint32_t i = 0; i < 32; ++i)
    if (name == "%envreg" + std::to_string(i)) return kSpEnvreg0 + i;
  for (uint32_t i = 0; i < 8; ++i)
    if (name == "%pm" + std::to_string(i) || name == "%pm" + std::to_string(i) + "_64")
      return kSpZero;
  // Predefined, but describing machinery the emulator does not have.
  static const char* const kUnsupported[] = {
      "%reserved_smem_offset_begin", "%reserved_smem_offset_end", "%reserved_smem_offset_cap",
      "%reserved_smem_offset_0",     "%reserved_smem_offset_1",   "%current_graph_exec"};
  for (const char* n : kUnsupported)
    if (name == n)
      not_supported_at(
          line, "special register '" + std::string(name) + "' is not supported by the emulator");
  return std::nullopt;
}

ParsedOperand Parser::parse_address() {
  ParsedOperand p;
  p.kind = ParsedOperand::kAddr;
  p.line = peek().line;
  expect_punct('[', "to open an address");
  // [reg], [reg+imm], [sym], [sym+imm] or [imm]; imm is a constant expression (`[%rd1+-8]`).
  auto offset = [&](const char* context) {
    const uint32_t line = peek().line;
    if (!at_const_expr())
      fail("expected a constant " + std::string(context) + ", found " + describe(peek()));
    NumberValue v = parse_const_expr();
    if (v.kind != NumberValue::kInt) fail_at(line, "an address offset must be an integer constant");
    p.offset = static_cast<int64_t>(v.bits);
  };
  const Token& t = peek();
  if (t.kind == Tok::kIdent && t.text != "WARP_SZ") {
    std::string_view name = next().text;
    auto n = lookup(name);
    if (!n) {
      auto sp = special_slot(name, "", t.line);
      if (!sp) fail_at(t.line, "unknown name '" + std::string(name) + "' in address");
      n = Name{true, *sp};
    }
    if (n->is_reg) {
      p.base_reg = true;
      p.slot = n->id;
    } else {
      p.has_symbol = true;
      p.symbol = n->id;
      if (m_.symbols[n->id].space == Space::kShared && current_)
        current_->shared_symbols.push_back(n->id);
    }
    if (accept_punct('+'))
      offset("offset after '+'");
    else if (is_punct('-'))
      fail("PTX addresses are [base+offset]: a negative offset is written [" + std::string(name) +
           "+-N]");
  } else {
    offset("address");
  }
  if (!accept_punct(']')) fail("expected '+' or ']' in address, found " + describe(peek()));
  return p;
}

ParsedOperand Parser::parse_operand(bool lists) {
  ParsedOperand p;
  p.line = peek().line;
  if (is_punct('[')) return parse_address();
  if (accept_punct('{')) {
    p.kind = ParsedOperand::kVector;
    if (is_punct('}')) fail("an empty vector {}");
    for (;;) {
      p.elems.push_back(parse_operand());
      if (accept_punct('}')) break;
      expect_punct(',', "between vector elements");
    }
    return p;
  }
  if (lists && accept_punct('(')) {
    p.kind = ParsedOperand::kList;
    if (accept_punct(')')) return p;
    for (;;) {
      p.elems.push_back(parse_operand());
      if (accept_punct(')')) break;
      expect_punct(',', "between call arguments");
    }
    return p;
  }
  if (accept_punct('_')) {
    p.kind = ParsedOperand::kSink;
    return p;
  }
  if (at_const_expr()) {
    p.kind = ParsedOperand::kImm;
    p.number = parse_const_expr();
    return p;
  }
  if (accept_punct('!')) {
    p = parse_operand();
    p.negate = !p.negate;
    return p;
  }
  if (is_punct('-') || is_punct('+') || is_punct('~'))
    fail("'" + std::string(peek().text) + "' applies only to constants, found it before " +
         describe(peek(1)));
  const Token& t = peek();
  if (t.kind == Tok::kIdent) {
    std::string_view name = next().text;
    std::string_view comp;
    if (peek().kind == Tok::kDot && peek().glued && name[0] == '%') comp = next().text;
    if (name[0] == '%' && (!comp.empty() || !lookup(name))) {
      auto sp = special_slot(name, comp, t.line);
      if (sp) {
        p.kind = ParsedOperand::kReg;
        p.slot = *sp;
        p.dynamic = *sp == kSpClock || *sp == kSpClockHi || *sp == kSpClock64 ||
                    *sp == kSpGlobaltimer || *sp == kSpGlobaltimerLo || *sp == kSpGlobaltimerHi;
        return p;
      }
      if (!comp.empty())
        fail_at(t.line, "unknown special register '" + std::string(name) + std::string(comp) + "'");
    }
    auto n = lookup(name);
    if (!n) {
      p.kind = ParsedOperand::kName;
      p.name = name;
      return p;
    }
    if (n->is_reg) {
      p.kind = ParsedOperand::kReg;
      p.slot = n->id;
      return p;
    }
    p.kind = ParsedOperand::kSymbol;
    p.symbol = n->id;
    p.name = name;
    if (m_.symbols[n->id].space == Space::kShared && current_)
      current_->shared_symbols.push_back(n->id);
    if (accept_punct('+')) {  // the address of sym+offset
      const uint32_t line = peek().line;
      if (!at_const_expr()) fail("expected a constant offset after '+', found " + describe(peek()));
      NumberValue v = parse_const_expr();
      if (v.kind != NumberValue::kInt)
        fail_at(line, "an address offset must be an integer constant");
      p.offset = static_cast<int64_t>(v.bits);
    }
    return p;
  }
  fail("expected an operand, found " + describe(t));
}

uint32_t Parser::const_index(uint64_t bits) {
  // Deduplicate against the most recent entries only: that catches the common repeats
  // (0, 1, -1, loop strides) without a map, and keeps lowering linear in module size.
  const size_t n = m_.const_pool.size() / kWarpSize;
  const size_t from = n > 64 ? n - 64 : 0;
  for (size_t i = from; i < n; ++i)
    if (m_.const_pool[i * kWarpSize] == bits) return static_cast<uint32_t>(i);
  m_.const_pool.insert(m_.const_pool.end(), kWarpSize, bits);
  return static_cast<uint32_t>(n);
}

static uint64_t width_mask(Type t) {
  int b = t == Type::kPred ? 1 : type_bits(t);
  return b >= 64 ? ~uint64_t{0} : ((uint64_t{1} << b) - 1);
}

static std::string number_text(const NumberValue& v) {
  char buf[64];
  if (v.kind == NumberValue::kInt) {
    if (v.is_unsigned)
      std::snprintf(buf, sizeof buf, "%lluU", static_cast<unsigned long long>(v.bits));
    else
      std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v.bits));
  } else if (v.kind == NumberValue::kF32Bits) {
    std::snprintf(buf, sizeof buf, "0f%08llX", static_cast<unsigned long long>(v.bits));
  } else {
    std::snprintf(buf, sizeof buf, "%.17g", v.value);
  }
  return buf;
}

uint64_t Parser::immediate_bits(const NumberValue& v, Type t, uint32_t line) {
  auto refuse = [&](const std::string& why) -> uint64_t {
    fail_at(line, "constant " + number_text(v) + " " + why);
  };
  switch (t) {
    case Type::kPred:  // integers as in C: zero is false
      if (v.kind != NumberValue::kInt) return refuse("cannot be a predicate");
      return v.bits != 0;
    case Type::kF32:
    case Type::kTF32:
      if (v.kind == NumberValue::kF32Bits) return v.bits;
      if (v.kind == NumberValue::kDouble)
        return std::bit_cast<uint32_t>(static_cast<float>(v.value));
      return std::bit_cast<uint32_t>(v.is_unsigned
                                         ? static_cast<float>(v.bits)
                                         : static_cast<float>(static_cast<int64_t>(v.bits)));
    case Type::kF64:
      if (v.kind == NumberValue::kF32Bits)
        return std::bit_cast<uint64_t>(
            static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(v.bits))));
      if (v.kind == NumberValue::kDouble) return std::bit_cast<uint64_t>(v.value);
      return std::bit_cast<uint64_t>(v.is_unsigned
                                         ? static_cast<double>(v.bits)
                                         : static_cast<double>(static_cast<int64_t>(v.bits)));
    case Type::kF16:
    case Type::kF16x2:
    case Type::kBF16:
    case Type::kBF16x2:
    case Type::kE4M3x2:
    case Type::kE5M2x2:
      // PTX has no half-precision literals; what an integer or a double means as an .f16 operand
      // (bits or value) is not settled, so neither is guessed. mov.b16/.b32 takes the bits.
      not_supported_at(line, "immediate operands of type " + ("." + std::string(type_name(t))) +
                                 " (use mov.b16 or mov.b32 with the bits)");
    case Type::kB8:
    case Type::kB16:
    case Type::kB32:
    case Type::kB64:
    case Type::kU8:
    case Type::kU16:
    case Type::kU32:
    case Type::kU64:
    case Type::kS8:
    case Type::kS16:
    case Type::kS32:
    case Type::kS64: {
      // Floating-point constants in bit-typed operands of their own width are their IEEE bits.
      if (v.kind == NumberValue::kF32Bits) {
        if (t == Type::kB32) return v.bits;
        return refuse("(a 0f single-precision literal) cannot be a " +
                      ("." + std::string(type_name(t))) + " operand");
      }
      if (v.kind == NumberValue::kDouble) {
        if (t == Type::kB64) return std::bit_cast<uint64_t>(v.value);
        return refuse("(floating-point) cannot be a " + ("." + std::string(type_name(t))) +
                      " operand");
      }
      // "Each integer constant is casted to the appropriate size based on the data or
      // instruction type at its use" (PTX ISA, Integer Constants): the low bits.
      return v.bits & width_mask(t);
    }
    default:
      not_supported_at(line, "immediate operands of type " + ("." + std::string(type_name(t))));
  }
}

Operand Parser::src(const ParsedOperand& p, Type t) {
  Operand o;
  o.negate = p.negate;
  if (p.negate) {
    // `!` negates predicates only (`!%p` in setp, selp, vote, bar.red and predicate logic).
    const bool pred_reg =
        p.kind == ParsedOperand::kReg && p.slot >= kFirstRegSlot && m_.slot_bits[p.slot] == 1;
    if (t != Type::kPred || !pred_reg)
      fail_at(p.line, "'!' applies only to predicate registers in predicate operands");
  }
  switch (p.kind) {
    case ParsedOperand::kReg:
      o.kind = Operand::kReg;
      o.index = p.slot;
      return o;
    case ParsedOperand::kImm:
      o.kind = Operand::kConst;
      o.index = const_index(immediate_bits(p.number, t, p.line));
      return o;
    case ParsedOperand::kSymbol:
      refuse_reference_use(p.symbol, p.line);
      o.kind = Operand::kSymbol;
      o.has_symbol = true;
      o.symbol = p.symbol;
      o.offset = p.offset;
      return o;
    case ParsedOperand::kVector:
      if (p.dual) fail_at(p.line, "a 'p|q' pair is only a destination (setp, shfl, match, elect)");
      if (p.elems.size() == 1) return src(p.elems[0], t);  // `{a}` is a
      fail_at(p.line, "a vector operand of " + std::to_string(p.elems.size()) +
                          " elements is not allowed here");
    case ParsedOperand::kAddr:
      fail_at(p.line, "an address [..] is not allowed here");
    case ParsedOperand::kSink:
      fail_at(p.line, "the sink '_' can only be a destination");
    case ParsedOperand::kName:
      fail_at(p.line, "unknown name '" + std::string(p.name) + "'");
    case ParsedOperand::kList:
      fail_at(p.line, "unexpected parenthesised list");
  }
  return o;
}

Operand Parser::dst(const ParsedOperand& p) {
  if (p.negate) fail_at(p.line, "a destination cannot be negated");
  if (p.kind == ParsedOperand::kReg) {
    if (p.slot < kFirstRegSlot) fail_at(p.line, "a special register cannot be written");
    Operand o;
    o.kind = Operand::kReg;
    o.index = p.slot;
    return o;
  }
  if (p.kind == ParsedOperand::kSink) return Operand{Operand::kSink};
  if (p.kind == ParsedOperand::kName)
    fail_at(p.line, "unknown register '" + std::string(p.name) + "'");
  if (p.kind == ParsedOperand::kVector) {
    if (p.dual) fail_at(p.line, "this instruction has no 'p|q' destination pair");
    if (p.elems.size() == 1) return dst(p.elems[0]);
    fail_at(p.line, "a vector destination of " + std::to_string(p.elems.size()) +
                        " elements is not allowed here");
  }
  fail_at(p.line, "expected a destination register");
}

Operand Parser::src_vector(const ParsedOperand& p, Type elem, size_t count) {
  if (p.kind != ParsedOperand::kVector || p.dual || p.elems.size() != count)
    fail_at(p.line, "expected a vector operand {..} of " + std::to_string(count) + " elements");
  std::vector<Operand> elems;
  for (const ParsedOperand& e : p.elems) elems.push_back(src(e, elem));
  Operand o;
  o.kind = Operand::kVector;
  o.index = static_cast<uint32_t>(m_.vec_pool.size());
  o.count = static_cast<uint8_t>(count);
  m_.vec_pool.insert(m_.vec_pool.end(), elems.begin(), elems.end());
  return o;
}

Operand Parser::dst_vector(const ParsedOperand& p, size_t count) {
  if (p.kind != ParsedOperand::kVector || p.dual || p.elems.size() != count)
    fail_at(p.line, "expected a vector destination {..} of " + std::to_string(count) + " elements");
  std::vector<Operand> elems;
  for (const ParsedOperand& e : p.elems) {
    Operand d = dst(e);
    // The PTX ISA leaves a vector destination naming a register twice undefined.
    for (const Operand& prior : elems)
      if (d.kind == Operand::kReg && prior.kind == Operand::kReg && prior.index == d.index)
        fail_at(p.line, "a vector destination names the same register twice");
    elems.push_back(d);
  }
  Operand o;
  o.kind = Operand::kVector;
  o.index = static_cast<uint32_t>(m_.vec_pool.size());
  o.count = static_cast<uint8_t>(count);
  m_.vec_pool.insert(m_.vec_pool.end(), elems.begin(), elems.end());
  return o;
}

void Parser::refuse_reference_use(uint32_t symbol, uint32_t line) {
  const Symbol& s = m_.symbols[symbol];
  if (s.opaque == OpaqueKind::kNone) return;
  not_supported_at(line, "'" + s.name + "' is a " +
                             (s.opaque == OpaqueKind::kTexref ? ".texref" : ".surfref") +
                             ": the emulator supports naming it only as the texture or surface "
                             "of tex, tld4, txq, suld, sust and suq");
}

Operand Parser::addr(const ParsedOperand& p) {
  if (p.negate) fail_at(p.line, "an address cannot be negated");
  if (p.kind != ParsedOperand::kAddr) {
    if (p.kind == ParsedOperand::kSymbol) {  // some instructions accept a bare symbol as address
      refuse_reference_use(p.symbol, p.line);
      Operand o;
      o.kind = Operand::kAddr;
      o.has_symbol = true;
      o.symbol = p.symbol;
      o.offset = p.offset;
      return o;
    }
    fail_at(p.line, "expected an address operand [..]");
  }
  if (p.has_symbol) refuse_reference_use(p.symbol, p.line);
  Operand o;
  o.kind = Operand::kAddr;
  o.base_is_reg = p.base_reg;
  o.index = p.slot;
  o.has_symbol = p.has_symbol;
  o.symbol = p.symbol;
  o.offset = p.offset;
  return o;
}

}  // namespace cusnap::emu::ptx

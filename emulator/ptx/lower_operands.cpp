// Operand syntax (registers, special registers, immediates, vectors, addresses, symbols) and
// their lowering into Operand slots, with immediates converted to the type the instruction reads.
#include <bit>
#include <cstring>

#include "parser_internal.h"

namespace cusnap::emu::ptx {

std::optional<uint32_t> Parser::special_slot(std::string_view name, std::string_view comp) {
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
  struct E { const char* n; uint32_t s; };
  static const E kTable[] = {
      {"%laneid", kSpLaneid}, {"%warpid", kSpWarpid}, {"%nwarpid", kSpNwarpid},
      {"%smid", kSpSmid}, {"%nsmid", kSpNsmid}, {"%gridid", kSpGridid},
      {"%lanemask_eq", kSpLanemaskEq}, {"%lanemask_lt", kSpLanemaskLt},
      {"%lanemask_le", kSpLanemaskLe}, {"%lanemask_gt", kSpLanemaskGt},
      {"%lanemask_ge", kSpLanemaskGe}, {"%clock", kSpClock}, {"%clock_hi", kSpClockHi},
      {"%clock64", kSpClock64}, {"%globaltimer", kSpGlobaltimer},
      {"%globaltimer_lo", kSpGlobaltimerLo}, {"%globaltimer_hi", kSpGlobaltimerHi},
      {"%dynamic_smem_size", kSpDynSmem}, {"%total_smem_size", kSpTotalSmem},
      {"%cluster_ctarank", kSpClusterCtarank}, {"%cluster_nctarank", kSpClusterNctarank},
      {"%is_explicit_cluster", kSpIsExplicitCluster}, {"%aggr_smem_size", kSpTotalSmem},
  };
  for (const E& e : kTable)
    if (name == e.n) return e.s;
  if (name.substr(0, 7) == "%envreg") {
    int n = std::atoi(std::string(name.substr(7)).c_str());
    if (n >= 0 && n < 32) return kSpEnvreg0 + n;
  }
  if (name.substr(0, 3) == "%pm") return kSpZero;
  return std::nullopt;
}

ParsedOperand Parser::parse_address() {
  ParsedOperand p;
  p.kind = ParsedOperand::kAddr;
  p.line = peek().line;
  expect_punct('[', "to open an address");
  bool have_base = false;
  for (;;) {
    bool minus = false;
    while (is_punct('+') || is_punct('-')) {
      if (next().text[0] == '-') minus = !minus;
    }
    const Token& t = peek();
    if (t.kind == Tok::kIdent && !have_base) {
      std::string_view name = next().text;
      auto n = lookup(name);
      if (!n) {
        auto sp = special_slot(name, "");
        if (!sp) fail_at(t.line, "unknown name '" + std::string(name) + "' in address");
        n = Name{true, *sp};
      }
      if (minus) fail_at(t.line, "a base cannot be negated");
      have_base = true;
      if (n->is_reg) { p.base_reg = true; p.slot = n->id; }
      else {
        p.has_symbol = true;
        p.symbol = n->id;
        if (m_.symbols[n->id].space == Space::kShared && current_)
          current_->shared_symbols.push_back(n->id);
      }
    } else if (t.kind == Tok::kNumber) {
      NumberValue v;
      if (!parse_number(t.text, v) || v.kind != NumberValue::kInt) fail_at(t.line, "bad address offset '" + std::string(t.text) + "'");
      next();
      int64_t val = static_cast<int64_t>(v.bits);
      p.offset += minus ? -val : val;
    } else {
      fail("expected a register, symbol or offset in address, found '" + std::string(t.text) + "'");
    }
    if (is_punct(']')) { next(); break; }
    if (!is_punct('+') && !is_punct('-')) fail("expected '+', '-' or ']' in address, found '" + std::string(peek().text) + "'");
  }
  return p;
}

ParsedOperand Parser::parse_operand() {
  ParsedOperand p;
  p.line = peek().line;
  if (is_punct('[')) return parse_address();
  if (accept_punct('{')) {
    p.kind = ParsedOperand::kVector;
    for (;;) {
      p.elems.push_back(parse_operand());
      if (accept_punct('}')) break;
      expect_punct(',', "between vector elements");
    }
    return p;
  }
  if (accept_punct('(')) {
    p.kind = ParsedOperand::kList;
    if (accept_punct(')')) return p;
    for (;;) {
      p.elems.push_back(parse_operand());
      if (accept_punct(')')) break;
      expect_punct(',', "between call arguments");
    }
    return p;
  }
  if (accept_punct('_')) { p.kind = ParsedOperand::kSink; return p; }
  if (accept_punct('!')) {
    p = parse_operand();
    p.negate = !p.negate;
    return p;
  }
  bool minus = false;
  while (is_punct('-') || is_punct('+')) {
    if (next().text[0] == '-') minus = !minus;
  }
  const Token& t = peek();
  if (t.kind == Tok::kNumber) {
    p.kind = ParsedOperand::kImm;
    if (!parse_number(t.text, p.number)) fail("malformed number '" + std::string(t.text) + "'");
    p.minus = minus;
    next();
    return p;
  }
  if (t.kind == Tok::kIdent) {
    std::string_view name = next().text;
    std::string_view comp;
    if (peek().kind == Tok::kDot && peek().glued && name[0] == '%') comp = next().text;
    if (name[0] == '%' && (!comp.empty() || !lookup(name))) {
      auto sp = special_slot(name, comp);
      if (sp) {
        p.kind = ParsedOperand::kReg;
        p.slot = *sp;
        if (*sp == kSpClock || *sp == kSpClockHi || *sp == kSpClock64 || *sp == kSpGlobaltimer ||
            *sp == kSpGlobaltimerLo || *sp == kSpGlobaltimerHi)
          p.name = "dynamic";
        return p;
      }
      if (!comp.empty()) fail_at(t.line, "unknown special register '" + std::string(name) + std::string(comp) + "'");
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
    if (m_.symbols[n->id].space == Space::kShared && current_) current_->shared_symbols.push_back(n->id);
    if (accept_punct('+')) {
      NumberValue v;
      if (peek().kind != Tok::kNumber || !parse_number(peek().text, v)) fail("expected an offset after '+'");
      next();
      p.offset = static_cast<int64_t>(v.bits);
    }
    return p;
  }
  fail("expected an operand, found '" + std::string(t.text) + "'");
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

uint64_t Parser::immediate_bits(const ParsedOperand& p, Type t) {
  const NumberValue& v = p.number;
  const bool is_f32 = t == Type::kF32 || t == Type::kTF32;
  const bool is_f64 = t == Type::kF64;
  if (is_f32 || is_f64) {
    double d = 0;
    switch (v.kind) {
      case NumberValue::kF32Bits: {
        if (is_f32) return (v.bits ^ (p.minus ? 0x80000000u : 0)) & 0xffffffffu;
        float f = std::bit_cast<float>(static_cast<uint32_t>(v.bits));
        d = f;
        break;
      }
      case NumberValue::kF64Bits: d = std::bit_cast<double>(v.bits); break;
      case NumberValue::kDouble: d = v.value; break;
      case NumberValue::kInt: d = static_cast<double>(static_cast<int64_t>(v.bits)); break;
    }
    if (p.minus) d = -d;
    if (is_f64) return std::bit_cast<uint64_t>(d);
    return std::bit_cast<uint32_t>(static_cast<float>(d));
  }
  uint64_t bits = v.bits;
  if (v.kind == NumberValue::kDouble) {
    bits = static_cast<uint64_t>(static_cast<int64_t>(v.value));
  } else if (v.kind == NumberValue::kF32Bits && p.minus) {
    bits ^= 0x80000000u;
    return bits & width_mask(t);
  } else if (v.kind == NumberValue::kF64Bits && p.minus) {
    return bits ^ 0x8000000000000000ull;
  }
  if (p.minus) bits = ~bits + 1;
  if (t == Type::kPred) return bits != 0;
  return bits & width_mask(t);
}

Operand Parser::src(const ParsedOperand& p, Type t) {
  Operand o;
  o.negate = p.negate;
  switch (p.kind) {
    case ParsedOperand::kReg:
      o.kind = Operand::kReg;
      o.index = p.slot;
      return o;
    case ParsedOperand::kImm:
      o.kind = Operand::kConst;
      o.index = const_index(immediate_bits(p, t));
      return o;
    case ParsedOperand::kSymbol:
      o.kind = Operand::kSymbol;
      o.has_symbol = true;
      o.symbol = p.symbol;
      o.offset = p.offset;
      return o;
    case ParsedOperand::kVector: {
      o.kind = Operand::kVector;
      o.index = static_cast<uint32_t>(m_.vec_pool.size());
      o.count = static_cast<uint8_t>(p.elems.size());
      std::vector<Operand> elems;
      for (const ParsedOperand& e : p.elems) elems.push_back(e.kind == ParsedOperand::kSink ? Operand{Operand::kSink} : src(e, t));
      o.index = static_cast<uint32_t>(m_.vec_pool.size());
      m_.vec_pool.insert(m_.vec_pool.end(), elems.begin(), elems.end());
      return o;
    }
    case ParsedOperand::kAddr:
      return addr(p);
    case ParsedOperand::kSink:
      o.kind = Operand::kSink;
      return o;
    case ParsedOperand::kName:
      fail_at(p.line, "unknown name '" + std::string(p.name) + "'");
    case ParsedOperand::kList:
      fail_at(p.line, "unexpected parenthesised list");
  }
  return o;
}

Operand Parser::dst(const ParsedOperand& p) {
  if (p.kind == ParsedOperand::kReg) {
    if (p.slot < kFirstRegSlot) fail_at(p.line, "a special register cannot be written");
    Operand o;
    o.kind = Operand::kReg;
    o.index = p.slot;
    return o;
  }
  if (p.kind == ParsedOperand::kSink) return Operand{Operand::kSink};
  if (p.kind == ParsedOperand::kVector) {
    for (const ParsedOperand& e : p.elems)
      if (e.kind != ParsedOperand::kReg && e.kind != ParsedOperand::kSink) fail_at(p.line, "vector destinations must be registers");
    return src(p, Type::kB64);
  }
  fail_at(p.line, "expected a destination register");
}

Operand Parser::addr(const ParsedOperand& p) {
  if (p.kind != ParsedOperand::kAddr) {
    if (p.kind == ParsedOperand::kSymbol) {  // some instructions accept a bare symbol as address
      Operand o;
      o.kind = Operand::kAddr;
      o.has_symbol = true;
      o.symbol = p.symbol;
      o.offset = p.offset;
      return o;
    }
    fail_at(p.line, "expected an address operand [..]");
  }
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

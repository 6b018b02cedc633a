// Conformance of integer and bit instructions through the whole engine (conformance.h): edge
// values (0, ±1, INT_MIN, INT_MAX, all ones, shift counts at and beyond the width) crossed with
// each other, each lane against an explicit integer formula from the PTX ISA.
#include "conformance.h"

using namespace cusnap::emu::ptx::conformance;

namespace {

using s128 = __int128;
using u128 = unsigned __int128;

struct IntType {
  const char* name;  // "s32"
  int bits;
  bool is_signed;
};
constexpr IntType kIntTypes[] = {{"s16", 16, true},  {"u16", 16, false}, {"s32", 32, true},
                                 {"u32", 32, false}, {"s64", 64, true},  {"u64", 64, false}};

std::vector<uint64_t> edges_for(int bits) {
  return bits == 16 ? int16_edges() : bits == 32 ? int32_edges() : int64_edges();
}

// Value of the low `bits` of v as an integer of the type.
s128 value(const IntType& t, uint64_t v) {
  v &= width_mask(t.bits);
  if (t.is_signed && t.bits < 64 && (v >> (t.bits - 1)) & 1)
    return static_cast<s128>(v) - (s128{1} << t.bits);
  if (t.is_signed && t.bits == 64) return static_cast<int64_t>(v);
  return v;
}
s128 min_of(const IntType& t) { return t.is_signed ? -(s128{1} << (t.bits - 1)) : 0; }
s128 max_of(const IntType& t) {
  return t.is_signed ? (s128{1} << (t.bits - 1)) - 1 : (s128{1} << t.bits) - 1;
}
uint64_t wrap(s128 v) { return static_cast<uint64_t>(static_cast<u128>(v)); }
uint64_t saturate(const IntType& t, s128 v) {
  return wrap(std::min(std::max(v, min_of(t)), max_of(t)));
}

std::string instr(const char* op, const IntType& t, const char* operands) {
  return std::string(op) + "." + t.name + " " + operands;
}

}  // namespace

TEST_CASE("conformance: integer add/sub/mul/mad/div/rem/min/max/abs/neg on every width",
          "[ptx][conformance][int]") {
  for (const IntType& t : kIntTypes) {
    INFO(t.name);
    const auto e = edges_for(t.bits);
    Inputs two = cross(e, e);
    add_random(two, 64, t.bits * 7 + t.is_signed, e, t.bits);
    const Shape s2{t.bits, t.bits, t.bits};
    auto v = [&](uint64_t x) { return value(t, x); };
    check_exact(instr("add", t, "%d, %a, %b"), s2, two,
                [&](auto a, auto b, auto) { return wrap(v(a) + v(b)); });
    check_exact(instr("sub", t, "%d, %a, %b"), s2, two,
                [&](auto a, auto b, auto) { return wrap(v(a) - v(b)); });
    check_exact(instr("mul.lo", t, "%d, %a, %b"), s2, two,
                [&](auto a, auto b, auto) { return wrap(v(a) * v(b)); });
    check_exact(instr("mul.hi", t, "%d, %a, %b"), s2, two, [&](auto a, auto b, auto) {
      // The high half of the exact 2N-bit product.
      if (t.bits < 64) return wrap((v(a) * v(b)) >> t.bits);
      const u128 ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
      u128 p = ua * ub;
      uint64_t hi = static_cast<uint64_t>(p >> 64);
      if (t.is_signed) {  // signed correction of the unsigned product's high half
        if (static_cast<int64_t>(a) < 0) hi -= b;
        if (static_cast<int64_t>(b) < 0) hi -= a;
      }
      return hi;
    });
    if (t.bits < 64) {
      const Shape wide{t.bits * 2, t.bits, t.bits};
      check_exact(instr("mul.wide", t, "%d, %a, %b"), wide, two,
                  [&](auto a, auto b, auto) { return wrap(v(a) * v(b)); });
    }
    Inputs three = cross3(e, {0, 1, 2, 0xffffffffffffffff, 0x8000000000000000 >> (64 - t.bits)}, e);
    const Shape s3{t.bits, t.bits, t.bits, t.bits};
    check_exact(instr("mad.lo", t, "%d, %a, %b, %c"), s3, three,
                [&](auto a, auto b, auto c) { return wrap(v(a) * v(b) + v(c)); });
    if (t.bits == 32) {
      check_exact(instr("mad.hi", t, "%d, %a, %b, %c"), s3, three,
                  [&](auto a, auto b, auto c) { return wrap(((v(a) * v(b)) >> 32) + v(c)); });
      check_exact(instr("mad.wide", t, "%d, %a, %b, %c"), Shape{64, 32, 32, 64},
                  cross3(e, {0, 1, 0xffffffff, 0x80000000}, int64_edges()),
                  [&](auto a, auto b, auto c) {
                    const IntType w{"", 64, t.is_signed};
                    return wrap(v(a) * v(b) + value(w, c));
                  });
    }
    // Division by zero gives all ones (documented choice, ALU.md); MIN / -1 wraps to MIN and
    // MIN % -1 is 0 (the quotient's overflow is the only undefined case; no trap).
    check_exact(instr("div", t, "%d, %a, %b"), s2, two, [&](auto a, auto b, auto) -> uint64_t {
      if (v(b) == 0) return ~0ull;
      if (t.is_signed && v(a) == min_of(t) && v(b) == -1) return wrap(min_of(t));
      s128 q = v(a) / v(b);  // C++ truncates toward zero, as PTX div
      return wrap(q);
    });
    check_exact(instr("rem", t, "%d, %a, %b"), s2, two, [&](auto a, auto b, auto) -> uint64_t {
      if (v(b) == 0) return ~0ull;
      if (t.is_signed && v(a) == min_of(t) && v(b) == -1) return 0;
      return wrap(v(a) % v(b));  // sign of the dividend, as PTX rem
    });
    check_exact(instr("min", t, "%d, %a, %b"), s2, two,
                [&](auto a, auto b, auto) { return wrap(std::min(v(a), v(b))); });
    check_exact(instr("max", t, "%d, %a, %b"), s2, two,
                [&](auto a, auto b, auto) { return wrap(std::max(v(a), v(b))); });
    if (t.is_signed) {
      const Shape s1{t.bits, t.bits};
      // abs(MIN) and neg(MIN) wrap to MIN.
      check_exact(instr("abs", t, "%d, %a"), s1, each(e),
                  [&](auto a, auto, auto) { return wrap(v(a) < 0 ? -v(a) : v(a)); });
      check_exact(instr("neg", t, "%d, %a"), s1, each(e),
                  [&](auto a, auto, auto) { return wrap(-v(a)); });
    }
  }
}

TEST_CASE("conformance: packed u16x2/s16x2 add, min, max and min/max.relu (sm_90)",
          "[ptx][conformance][int]") {
  // Halves from the 16-bit edges, combined so that the two halves of a register differ.
  std::vector<uint64_t> e;
  for (uint64_t lo : int16_edges())
    for (uint64_t hi : {uint64_t{0}, uint64_t{0x7fff}, uint64_t{0x8000}, uint64_t{0xffff}})
      e.push_back((hi << 16) | (lo & 0xffff));
  Inputs two = cross(e, e);
  add_random(two, 64, 1616, e, 32);
  const Shape s2{32, 32, 32};
  for (const IntType& t : {IntType{"s16", 16, true}, IntType{"u16", 16, false}}) {
    INFO(t.name);
    // Each half as an integer of the 16-bit type, the result's halves wrapped to 16 bits.
    auto per_half = [&](uint64_t a, uint64_t b, auto op) {
      uint64_t d = 0;
      for (int h = 0; h < 2; ++h) {
        const s128 r = op(value(t, a >> (16 * h)), value(t, b >> (16 * h)));
        d |= (wrap(r) & 0xffff) << (16 * h);
      }
      return d;
    };
    const std::string x2 = std::string(t.name) + "x2 %d, %a, %b";
    check_exact("add." + x2, s2, two, [&](auto a, auto b, auto) {
      return per_half(a, b, [](s128 x, s128 y) { return x + y; });
    });
    check_exact("min." + x2, s2, two, [&](auto a, auto b, auto) {
      return per_half(a, b, [](s128 x, s128 y) { return std::min(x, y); });
    });
    check_exact("max." + x2, s2, two, [&](auto a, auto b, auto) {
      return per_half(a, b, [](s128 x, s128 y) { return std::max(x, y); });
    });
    if (!t.is_signed) continue;
    check_exact("min.relu." + x2, s2, two, [&](auto a, auto b, auto) {
      return per_half(a, b, [](s128 x, s128 y) { return std::max<s128>(std::min(x, y), 0); });
    });
    check_exact("max.relu." + x2, s2, two, [&](auto a, auto b, auto) {
      return per_half(a, b, [](s128 x, s128 y) { return std::max<s128>(std::max(x, y), 0); });
    });
  }
}

TEST_CASE("conformance: saturating s32 add/sub/mad.hi", "[ptx][conformance][int]") {
  const IntType t{"s32", 32, true};
  const auto e = int32_edges();
  auto v = [&](uint64_t x) { return value(t, x); };
  check_exact("add.sat.s32 %d, %a, %b", Shape{32, 32, 32}, cross(e, e),
              [&](auto a, auto b, auto) { return saturate(t, v(a) + v(b)); });
  check_exact("sub.sat.s32 %d, %a, %b", Shape{32, 32, 32}, cross(e, e),
              [&](auto a, auto b, auto) { return saturate(t, v(a) - v(b)); });
  check_exact("mad.hi.sat.s32 %d, %a, %b, %c", Shape{32, 32, 32, 32},
              cross3(e, e, {0, 1, 0x7fffffff, 0x80000000}),
              [&](auto a, auto b, auto c) { return saturate(t, ((v(a) * v(b)) >> 32) + v(c)); });
}

TEST_CASE("conformance: shifts by 0..width and beyond", "[ptx][conformance][int]") {
  // PTX: shift amounts greater than the width are clamped to the width, so shl/shr.u give 0
  // and shr.s gives the sign fill. The amount is an unsigned 32-bit value.
  std::vector<uint64_t> amounts;
  for (uint64_t k = 0; k <= 70; ++k) amounts.push_back(k);
  for (uint64_t k : {127ull, 128ull, 255ull, 256ull, 0x7fffffffull, 0x80000000ull, 0xffffffffull})
    amounts.push_back(k);
  for (int bits : {16, 32, 64}) {
    const auto e = edges_for(bits);
    const Inputs in = cross(e, amounts);
    const Shape s{bits, bits, 32};
    const std::string w = std::to_string(bits);
    auto clamp = [&](uint64_t n) { return std::min<uint64_t>(n & 0xffffffff, bits); };
    check_exact("shl.b" + w + " %d, %a, %b", s, in, [&](auto a, auto n, auto) {
      return clamp(n) >= static_cast<uint64_t>(bits) ? 0 : (a << clamp(n)) & width_mask(bits);
    });
    check_exact("shr.u" + w + " %d, %a, %b", s, in, [&](auto a, auto n, auto) {
      return clamp(n) >= static_cast<uint64_t>(bits) ? 0 : (a & width_mask(bits)) >> clamp(n);
    });
    check_exact(
        "shr.b" + w + " %d, %a, %b", s, in, [&](auto a, auto n, auto) {  // .b is a logical shift
          return clamp(n) >= static_cast<uint64_t>(bits) ? 0 : (a & width_mask(bits)) >> clamp(n);
        });
    check_exact("shr.s" + w + " %d, %a, %b", s, in, [&](auto a, auto n, auto) {
      const IntType t{"", bits, true};
      s128 x = value(t, a);
      return wrap(x >> std::min<uint64_t>(clamp(n), bits - 1));  // floor division by 2^n
    });
  }
}

TEST_CASE("conformance: bfe/bfi/brev/clz/popc/bfind", "[ptx][conformance][int]") {
  std::vector<uint64_t> fields = {0,   1,   3,   7,     8,     15,     16,        24,
                                  31,  32,  33,  48,    63,    64,     65,        200,
                                  255, 256, 257, 0x1ff, 0x200, 0x1000, 0xffffffff};
  for (int bits : {32, 64}) {
    const std::string w = std::to_string(bits);
    const auto e = edges_for(bits);
    const Inputs in = cross3(e, fields, fields);
    const uint64_t field_mask = bits == 64 ? 0xffffffff : 0xff;
    for (bool is_signed : {false, true}) {
      // The ISA's definition: pos and len are the low 8 bits of b and c; bits beyond the source
      // (and all bits when len = 0, for .u) are the sign bit (.s) or 0. Silicon (an H200,
      // silicon/h200-sm90.lanes) masks so for the 32-bit forms only: the 64-bit forms use b and c
      // whole.
      check_exact(std::string("bfe.") + (is_signed ? "s" : "u") + w + " %d, %a, %b, %c",
                  Shape{bits, bits, 32, 32}, in, [&](auto a, auto b, auto c) {
                    const int64_t msb = bits - 1, pos = static_cast<int64_t>(b & field_mask),
                                  len = static_cast<int64_t>(c & field_mask);
                    const uint64_t sbit =
                        (!is_signed || len == 0) ? 0 : (a >> std::min(pos + len - 1, msb)) & 1;
                    uint64_t d = 0;
                    for (int64_t i = 0; i <= msb; ++i) {
                      uint64_t bit = (i < len && pos + i <= msb) ? (a >> (pos + i)) & 1 : sbit;
                      d |= bit << i;
                    }
                    return d;
                  });
    }
    Inputs bfi_in;
    for (uint64_t a : {0ull, ~0ull, 0x5555555555555555ull, 0x123456789abcdef0ull})
      for (uint64_t b : {0ull, ~0ull, 0xa5a5a5a5a5a5a5a5ull})
        for (uint64_t pos : fields)
          for (uint64_t len : fields)
            bfi_in.push_back({a & width_mask(bits), b & width_mask(bits), pos | (len << 32)});
    // bfi takes four operands: the triple's third slot carries pos (low word) and len (high word).
    check_lanes("{ .reg .b32 p, l; mov.b64 {p, l}, %c; bfi.b" + w + " %d, %a, %b, p, l; }",
                Shape{bits, bits, bits, 64}, bfi_in,
                [&](const Triple& t, uint64_t d, uint64_t) -> std::string {
                  const int64_t msb = bits - 1, pos = static_cast<int64_t>(t[2] & field_mask),
                                len = static_cast<int64_t>((t[2] >> 32) & field_mask);
                  uint64_t f = t[1];
                  for (int64_t i = 0; i < len && pos + i <= msb; ++i)
                    f = (f & ~(1ull << (pos + i))) | (((t[0] >> i) & 1) << (pos + i));
                  return d == (f & width_mask(bits)) ? "" : "expected " + hex(f & width_mask(bits));
                });
    Inputs one = each(e);
    add_random(one, 200, 99 + bits, e, bits);
    check_exact("brev.b" + w + " %d, %a", Shape{bits, bits}, one, [&](auto a, auto, auto) {
      uint64_t r = 0;
      for (int i = 0; i < bits; ++i) r |= ((a >> i) & 1) << (bits - 1 - i);
      return r;
    });
    check_exact("clz.b" + w + " %d, %a", Shape{32, bits}, one, [&](auto a, auto, auto) {
      uint64_t n = 0;
      for (int i = bits - 1; i >= 0 && !((a >> i) & 1); --i) ++n;
      return n;
    });
    check_exact("popc.b" + w + " %d, %a", Shape{32, bits}, one, [&](auto a, auto, auto) {
      uint64_t n = 0;
      for (int i = 0; i < bits; ++i) n += (a >> i) & 1;
      return n;
    });
    for (bool is_signed : {false, true}) {
      // bfind: position of the most significant non-sign bit; 0xffffffff when there is none.
      check_exact(std::string("bfind.") + (is_signed ? "s" : "u") + w + " %d, %a", Shape{32, bits},
                  one, [&](auto a, auto, auto) -> uint64_t {
                    uint64_t x = a & width_mask(bits);
                    if (is_signed && ((x >> (bits - 1)) & 1)) x = ~x & width_mask(bits);
                    for (int i = bits - 1; i >= 0; --i)
                      if ((x >> i) & 1) return static_cast<uint64_t>(i);
                    return 0xffffffff;
                  });
    }
  }
}

TEST_CASE("conformance: prmt in the default and every named mode", "[ptx][conformance][int]") {
  const std::vector<uint64_t> words = {0x03020100, 0x87654321, 0xfedcba98, 0x80808080, 0x7f7f7f7f};
  std::vector<uint64_t> selectors = {0x3210, 0x7654, 0x0000, 0x4444, 0x8888,     0xffff,
                                     0x1357, 0x9bdf, 0xba98, 0x0123, 0xfffff000, 0x1,
                                     0x2,    0x3,    0x5,    0x6,    0x7};
  Inputs in = cross3(words, words, selectors);
  // Default mode: each nibble of c picks a byte of {b, a} (a = bytes 0-3, b = bytes 4-7); a set
  // bit 3 replicates that byte's sign bit.
  check_exact("prmt.b32 %d, %a, %b, %c", Shape{32, 32, 32, 32}, in, [](auto a, auto b, auto c) {
    const uint64_t bytes = (b << 32) | a;
    uint64_t d = 0;
    for (int i = 0; i < 4; ++i) {
      const uint64_t sel = (c >> (4 * i)) & 0xf;
      uint64_t byte = (bytes >> (8 * (sel & 7))) & 0xff;
      if (sel & 8) byte = (byte & 0x80) ? 0xff : 0;
      d |= byte << (8 * i);
    }
    return d;
  });
  // Named modes: c[1:0] selects a row of the ISA's table, which lists source bytes for
  // d.b3 d.b2 d.b1 d.b0.
  struct Mode {
    const char* name;
    int table[4][4];
  };
  const Mode modes[] = {
      {"f4e", {{3, 2, 1, 0}, {4, 3, 2, 1}, {5, 4, 3, 2}, {6, 5, 4, 3}}},
      {"b4e", {{5, 6, 7, 0}, {6, 7, 0, 1}, {7, 0, 1, 2}, {0, 1, 2, 3}}},
      {"rc8", {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}}},
      {"ecl", {{3, 2, 1, 0}, {3, 2, 1, 1}, {3, 2, 2, 2}, {3, 3, 3, 3}}},
      {"ecr", {{0, 0, 0, 0}, {1, 1, 1, 0}, {2, 2, 1, 0}, {3, 2, 1, 0}}},
      {"rc16", {{1, 0, 1, 0}, {3, 2, 3, 2}, {1, 0, 1, 0}, {3, 2, 3, 2}}},
  };
  for (const Mode& m : modes) {
    check_exact(std::string("prmt.b32.") + m.name + " %d, %a, %b, %c", Shape{32, 32, 32, 32}, in,
                [&](auto a, auto b, auto c) {
                  const uint64_t bytes = (b << 32) | a;
                  const auto& row = m.table[c & 3];
                  uint64_t d = 0;
                  for (int i = 0; i < 4; ++i) d |= ((bytes >> (8 * row[3 - i])) & 0xff) << (8 * i);
                  return d;
                });
  }
}

TEST_CASE("conformance: setp signed vs unsigned on the same bit patterns",
          "[ptx][conformance][int]") {
  struct Cmp {
    const char* name;
    std::function<bool(s128, s128)> f;
  };
  const Cmp cmps[] = {
      {"eq", [](s128 x, s128 y) { return x == y; }}, {"ne", [](s128 x, s128 y) { return x != y; }},
      {"lt", [](s128 x, s128 y) { return x < y; }},  {"le", [](s128 x, s128 y) { return x <= y; }},
      {"gt", [](s128 x, s128 y) { return x > y; }},  {"ge", [](s128 x, s128 y) { return x >= y; }}};
  // lo/ls/hi/hs are the unsigned spellings of lt/le/gt/ge.
  const std::pair<const char*, const char*> unsigned_names[] = {
      {"lo", "lt"}, {"ls", "le"}, {"hi", "gt"}, {"hs", "ge"}};
  for (const IntType& t : kIntTypes) {
    const auto e = edges_for(t.bits);
    const Inputs in = cross(e, e);
    const Shape s{1, t.bits, t.bits, 0, 1};
    for (const Cmp& c : cmps) {
      // The dual destination p|q writes the comparison and its complement.
      check_exact(
          std::string("setp.") + c.name + "." + t.name + " %d|%q, %a, %b", s, in,
          [&](auto a, auto b, auto) -> uint64_t { return c.f(value(t, a), value(t, b)); },
          [&](auto a, auto b, auto) -> uint64_t { return !c.f(value(t, a), value(t, b)); });
    }
    if (!t.is_signed) {
      for (const auto& [name, like] : unsigned_names) {
        const Cmp* c = nullptr;
        for (const Cmp& k : cmps)
          if (std::string(k.name) == like) c = &k;
        check_exact(
            std::string("setp.") + name + "." + t.name + " %d, %a, %b", Shape{1, t.bits, t.bits},
            in, [&](auto a, auto b, auto) -> uint64_t { return c->f(value(t, a), value(t, b)); });
      }
    }
  }
  // b32/b64 only compare for equality; combining with a predicate (.and/.or/.xor).
  const auto e = int32_edges();
  Inputs in;
  for (uint64_t a : e)
    for (uint64_t b : e) in.push_back({a, b, (a ^ b) & 1});
  check_exact("setp.ne.and.b32 %d, %a, %b, %c", Shape{1, 32, 32, 1}, in,
              [](auto a, auto b, auto c) -> uint64_t {
                return ((a & 0xffffffff) != (b & 0xffffffff)) && c;
              });
  check_exact("setp.eq.or.b32 %d, %a, %b, !%c", Shape{1, 32, 32, 1}, in,
              [](auto a, auto b, auto c) -> uint64_t {
                return ((a & 0xffffffff) == (b & 0xffffffff)) || !c;
              });
  check_exact("setp.lt.xor.s32 %d, %a, %b, %c", Shape{1, 32, 32, 1}, in,
              [](auto a, auto b, auto c) -> uint64_t {
                return (static_cast<int32_t>(a) < static_cast<int32_t>(b)) != (c != 0);
              });
}

// Integer/bitwise ALU tests against straightforward host references.
#include <catch2/catch.hpp>

#include "alu_test_util.h"

using namespace cusnap::emu::ptx;
using namespace cusnap::emu::ptx::test;

namespace {

__extension__ typedef __int128 I128;
__extension__ typedef unsigned __int128 U128;

struct IntType {
  Type type;
  int bits;
  bool is_signed;
};
const IntType kArithTypes[] = {{Type::kU16, 16, false}, {Type::kS16, 16, true},
                               {Type::kU32, 32, false}, {Type::kS32, 32, true},
                               {Type::kU64, 64, false}, {Type::kS64, 64, true}};

uint64_t mask_of(int bits) { return bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }
// The mathematical value of a register under the type's signedness.
I128 value(uint64_t v, int bits, bool is_signed) {
  v &= mask_of(bits);
  if (is_signed && ((v >> (bits - 1)) & 1))
    return static_cast<I128>(v) - (static_cast<I128>(1) << bits);
  return static_cast<I128>(v);
}
uint64_t wrap(I128 v, int bits) {
  return static_cast<uint64_t>(static_cast<U128>(v)) & mask_of(bits);
}
I128 clamp(I128 v, int bits, bool is_signed) {
  const I128 lo = is_signed ? -(static_cast<I128>(1) << (bits - 1)) : 0;
  const I128 hi = (static_cast<I128>(1) << (bits - (is_signed ? 1 : 0))) - 1;
  return v < lo ? lo : v > hi ? hi : v;
}

}  // namespace

// 64-bit high products at the extremes, against a 32-bit-limb schoolbook multiplication (no
// 128-bit arithmetic in the reference). These operands overflowed a signed __int128 product in
// the ALU (undefined behaviour that UBSan reports).
namespace {
uint64_t umulhi64(uint64_t a, uint64_t b) {
  const uint64_t a0 = a & 0xffffffffu, a1 = a >> 32, b0 = b & 0xffffffffu, b1 = b >> 32;
  const uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  const uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
  return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}
// Signed high half from the unsigned one: a_s = a_u - 2^64 [a<0], likewise b.
uint64_t smulhi64(uint64_t a, uint64_t b) {
  uint64_t h = umulhi64(a, b);
  if (a >> 63) h -= b;
  if (b >> 63) h -= a;
  return h;
}
}  // namespace

TEST_CASE("64-bit mul.hi/mad.hi/mul.lo at INT64_MIN, INT64_MAX, UINT64_MAX", "[alu][int]") {
  const uint64_t kMin = 0x8000000000000000ull, kMax = 0x7fffffffffffffffull, kOnes = ~0ull;
  const uint64_t vals[] = {
      kMin, kMax, kOnes, kMin + 1, 1, 2, 0x00000001ffffffffull, 0xfffffffe00000001ull};
  Mods m;
  for (uint64_t a : vals) {
    for (uint64_t b : vals) {
      INFO("a=" << std::hex << a << " b=" << b);
      const uint64_t c = 0x0123456789abcdefull;
      CHECK(run1(AluOp::kMulHi, Type::kU64, m, a, b) == umulhi64(a, b));
      CHECK(run1(AluOp::kMulHi, Type::kS64, m, a, b) == smulhi64(a, b));
      CHECK(run1(AluOp::kMadHi, Type::kU64, m, a, b, c) == umulhi64(a, b) + c);
      CHECK(run1(AluOp::kMadHi, Type::kS64, m, a, b, c) == smulhi64(a, b) + c);
      CHECK(run1(AluOp::kMulLo, Type::kU64, m, a, b) == a * b);
      CHECK(run1(AluOp::kMulLo, Type::kS64, m, a, b) == a * b);
      CHECK(run1(AluOp::kMadLo, Type::kS64, m, a, b, c) == a * b + c);
    }
  }
  // Spot values that pin the reference itself.
  CHECK(smulhi64(kMin, kMin) == 0x4000000000000000ull);
  CHECK(umulhi64(kOnes, kOnes) == kOnes - 1);
}

TEST_CASE("integer add/sub/mul/mad/div/rem/min/max/abs/neg/sad", "[alu][int]") {
  Mods m;
  for (const IntType& t : kArithTypes) {
    const auto vals = int_values(t.bits, 24, t.bits);
    for (uint64_t a : vals) {
      for (uint64_t b : vals) {
        const uint64_t c = a * 0x9e3779b97f4a7c15ull + b;
        const I128 va = value(a, t.bits, t.is_signed), vb = value(b, t.bits, t.is_signed);
        const I128 vc = value(c, t.bits, t.is_signed);
        INFO("type " << type_name(t.type) << " a=" << a << " b=" << b);
        CHECK(run1(AluOp::kAdd, t.type, m, a, b) == wrap(va + vb, t.bits));
        CHECK(run1(AluOp::kSub, t.type, m, a, b) == wrap(va - vb, t.bits));
        // The 2N-bit product, multiplied unsigned: u64 x u64 products reach 2^128, beyond I128
        // (the bits of the signed product are the same modulo 2^128).
        const U128 uprod = static_cast<U128>(va) * static_cast<U128>(vb);
        const I128 prod = static_cast<I128>(uprod);
        const uint64_t lo_mask = mask_of(t.bits);
        CHECK(run1(AluOp::kMulLo, t.type, m, a, b) == wrap(prod, t.bits));
        CHECK(run1(AluOp::kMulHi, t.type, m, a, b) ==
              (static_cast<uint64_t>(uprod >> t.bits) & mask_of(t.bits)));
        CHECK(run1(AluOp::kMadLo, t.type, m, a, b, c) ==
              (static_cast<uint64_t>(uprod + static_cast<U128>(vc)) & lo_mask));
        CHECK(
            run1(AluOp::kMadHi, t.type, m, a, b, c) ==
            wrap(value(static_cast<uint64_t>(uprod >> t.bits), t.bits, t.is_signed) + vc, t.bits));
        if (t.bits <= 32) {
          CHECK(run1(AluOp::kMulWide, t.type, m, a, b) == wrap(prod, 2 * t.bits));
          const I128 wide_c = value(c, 2 * t.bits, t.is_signed);
          CHECK(run1(AluOp::kMadWide, t.type, m, a, b, c) == wrap(prod + wide_c, 2 * t.bits));
        }
        // Division: all ones for division by zero (documented GPU behaviour).
        const uint64_t ones = mask_of(t.bits);
        uint64_t q = ones, r = ones;
        if (vb != 0) {
          q = wrap(va / vb, t.bits);  // C++ truncates toward zero like PTX; INT_MIN/-1 wraps
          r = wrap(va % vb, t.bits);
        }
        CHECK(run1(AluOp::kDiv, t.type, m, a, b) == q);
        CHECK(run1(AluOp::kRem, t.type, m, a, b) == r);
        CHECK(run1(AluOp::kMin, t.type, m, a, b) == wrap(va < vb ? va : vb, t.bits));
        CHECK(run1(AluOp::kMax, t.type, m, a, b) == wrap(va > vb ? va : vb, t.bits));
        const I128 diff = va - vb;
        CHECK(run1(AluOp::kSad, t.type, m, a, b, c) ==
              wrap((diff < 0 ? -diff : diff) + vc, t.bits));
      }
      if (t.is_signed) {
        const I128 v = value(a, t.bits, true);
        CHECK(run1(AluOp::kAbs, t.type, m, a) == wrap(v < 0 ? -v : v, t.bits));
        CHECK(run1(AluOp::kNeg, t.type, m, a) == wrap(-value(a, t.bits, true), t.bits));
      }
    }
  }
}

TEST_CASE("saturating add/sub and mad.hi.sat on s32", "[alu][int]") {
  Mods m;
  m.sat = true;
  const auto vals = int_values(32, 40, 7);
  for (uint64_t a : vals) {
    for (uint64_t b : vals) {
      const I128 va = value(a, 32, true), vb = value(b, 32, true);
      CHECK(run1(AluOp::kAdd, Type::kS32, m, a, b) == wrap(clamp(va + vb, 32, true), 32));
      CHECK(run1(AluOp::kSub, Type::kS32, m, a, b) == wrap(clamp(va - vb, 32, true), 32));
      const I128 hi = (va * vb) >> 32;  // arithmetic shift of the exact product
      CHECK(run1(AluOp::kMadHi, Type::kS32, m, a, b, a) == wrap(clamp(hi + va, 32, true), 32));
    }
  }
  CHECK_FALSE(alu_supported(AluOp::kAdd, Type::kU32, m));
  CHECK_FALSE(alu_supported(AluOp::kAdd, Type::kS64, m));
}

TEST_CASE("128-bit add and sub through carry chains", "[alu][int][carry]") {
  std::mt19937_64 rng(11);
  for (int iter = 0; iter < 2000; ++iter) {
    U128 x = (static_cast<U128>(rng()) << 64) | rng();
    U128 y = (static_cast<U128>(rng()) << 64) | rng();
    if (iter % 5 == 0) y = ~x + (iter % 2);  // forces long carry propagation
    for (int width : {32, 64}) {
      const Type t = width == 32 ? Type::kU32 : Type::kU64;
      const int words = 128 / width;
      const uint64_t wm = mask_of(width);
      // add.cc, addc.cc..., addc
      CarryFlags cf;
      U128 sum = 0, diff = 0;
      for (int w = 0; w < words; ++w) {
        Mods m;
        m.cc = w + 1 < words;
        m.use_carry = w > 0;
        const uint64_t xa = static_cast<uint64_t>(x >> (w * width)) & wm;
        const uint64_t ya = static_cast<uint64_t>(y >> (w * width)) & wm;
        sum |= static_cast<U128>(run1(AluOp::kAdd, t, m, xa, ya, 0, 0, &cf)) << (w * width);
      }
      CHECK(sum == x + y);
      cf.bits = 0;
      for (int w = 0; w < words; ++w) {
        Mods m;
        m.cc = w + 1 < words;
        m.use_carry = w > 0;
        const uint64_t xa = static_cast<uint64_t>(x >> (w * width)) & wm;
        const uint64_t ya = static_cast<uint64_t>(y >> (w * width)) & wm;
        diff |= static_cast<U128>(run1(AluOp::kSub, t, m, xa, ya, 0, 0, &cf)) << (w * width);
      }
      CHECK(diff == x - y);
    }
  }
}

TEST_CASE("mad.lo.cc / madc.hi build a 64x64->128 product from 32-bit pieces",
          "[alu][int][carry]") {
  std::mt19937_64 rng(12);
  for (int iter = 0; iter < 2000; ++iter) {
    const uint64_t x = rng(), y = iter % 7 == 0 ? ~uint64_t{0} : rng();
    const uint64_t x0 = x & 0xffffffff, x1 = x >> 32, y0 = y & 0xffffffff, y1 = y >> 32;
    // Schoolbook: r = x0*y0 + (x0*y1 + x1*y0) << 32 + x1*y1 << 64, using lo/hi halves and carries.
    Mods lo_cc;
    lo_cc.cc = true;
    Mods hi_c;
    hi_c.use_carry = true;
    hi_c.cc = true;
    Mods plain;
    CarryFlags cf;
    uint64_t r[4] = {0, 0, 0, 0};
    r[0] = run1(AluOp::kMulLo, Type::kU32, plain, x0, y0);
    r[1] = run1(AluOp::kMulHi, Type::kU32, plain, x0, y0);
    // r[1..3] += x0*y1 << 32
    r[1] = run1(AluOp::kMadLo, Type::kU32, lo_cc, x0, y1, r[1], 0, &cf);
    r[2] = run1(AluOp::kMadHi, Type::kU32, hi_c, x0, y1, 0, 0, &cf);
    r[3] = run1(AluOp::kAdd, Type::kU32, hi_c, 0, 0, 0, 0, &cf);
    // r[1..3] += x1*y0 << 32
    r[1] = run1(AluOp::kMadLo, Type::kU32, lo_cc, x1, y0, r[1], 0, &cf);
    r[2] = run1(AluOp::kMadHi, Type::kU32, hi_c, x1, y0, r[2], 0, &cf);
    r[3] = run1(AluOp::kAdd, Type::kU32, hi_c, r[3], 0, 0, 0, &cf);
    // r[2..3] += x1*y1 << 64
    r[2] = run1(AluOp::kMadLo, Type::kU32, lo_cc, x1, y1, r[2], 0, &cf);
    r[3] = run1(AluOp::kMadHi, Type::kU32, hi_c, x1, y1, r[3], 0, &cf);
    const U128 expect = static_cast<U128>(x) * y;
    const U128 got = static_cast<U128>(r[0]) | static_cast<U128>(r[1]) << 32 |
                     static_cast<U128>(r[2]) << 64 | static_cast<U128>(r[3]) << 96;
    CHECK(got == expect);
  }
}

TEST_CASE("mul24 and mad24", "[alu][int]") {
  const auto vals = int_values(32, 30, 13);
  Mods m;
  for (uint64_t a : vals) {
    for (uint64_t b : vals) {
      const int64_t sa = static_cast<int64_t>(static_cast<int32_t>(a << 8)) >> 8;
      const int64_t sb = static_cast<int64_t>(static_cast<int32_t>(b << 8)) >> 8;
      const uint64_t ua = a & 0xffffff, ub = b & 0xffffff;
      CHECK(run1(AluOp::kMul24Lo, Type::kU32, m, a, b) == ((ua * ub) & 0xffffffff));
      CHECK(run1(AluOp::kMul24Hi, Type::kU32, m, a, b) == (((ua * ub) >> 16) & 0xffffffff));
      CHECK(run1(AluOp::kMul24Lo, Type::kS32, m, a, b) ==
            (static_cast<uint64_t>(sa * sb) & 0xffffffff));
      CHECK(run1(AluOp::kMul24Hi, Type::kS32, m, a, b) ==
            (static_cast<uint64_t>((sa * sb) >> 16) & 0xffffffff));
      CHECK(run1(AluOp::kMad24Lo, Type::kS32, m, a, b, a) ==
            (static_cast<uint64_t>(sa * sb + static_cast<int32_t>(a)) & 0xffffffff));
    }
  }
}

TEST_CASE("logic, shifts and funnel shifts", "[alu][int]") {
  Mods m;
  for (int bits : {16, 32, 64}) {
    const Type bt = bits == 16 ? Type::kB16 : bits == 32 ? Type::kB32 : Type::kB64;
    const Type st = bits == 16 ? Type::kS16 : bits == 32 ? Type::kS32 : Type::kS64;
    const Type ut = bits == 16 ? Type::kU16 : bits == 32 ? Type::kU32 : Type::kU64;
    const uint64_t mk = mask_of(bits);
    for (uint64_t a : int_values(bits, 10, 21)) {
      for (uint64_t b : int_values(bits, 10, 22)) {
        CHECK(run1(AluOp::kAnd, bt, m, a, b) == (a & b));
        CHECK(run1(AluOp::kOr, bt, m, a, b) == (a | b));
        CHECK(run1(AluOp::kXor, bt, m, a, b) == (a ^ b));
      }
      CHECK(run1(AluOp::kNot, bt, m, a) == (~a & mk));
      CHECK(run1(AluOp::kCnot, bt, m, a) == (a == 0 ? 1u : 0u));
      for (uint64_t s : {0ull, 1ull, 5ull, 15ull, 16ull, 31ull, 32ull, 63ull, 64ull, 65ull, 1000ull,
                         0xffffffffull}) {
        uint64_t shl = 0, shr = 0;
        I128 sar = value(a, bits, true);
        for (uint64_t k = 0; k < s && k < 200; ++k) {  // shift one bit at a time
          shl = k == 0 ? (a << 1) & mk : (shl << 1) & mk;
          shr = k == 0 ? a >> 1 : shr >> 1;
          sar = sar >> 1;
        }
        if (s == 0) shl = shr = a;
        CHECK(run1(AluOp::kShl, bt, m, a, s) == shl);
        CHECK(run1(AluOp::kShr, ut, m, a, s) == shr);
        CHECK(run1(AluOp::kShr, bt, m, a, s) == shr);
        CHECK(run1(AluOp::kShr, st, m, a, s) == wrap(sar, bits));
      }
    }
  }
  for (uint64_t lo : int_values(32, 8, 23)) {
    for (uint64_t hi : int_values(32, 8, 24)) {
      for (uint32_t n : {0u, 1u, 8u, 31u, 32u, 33u, 40u, 63u, 64u}) {
        const U128 both = (static_cast<U128>(hi) << 32) | lo;
        const uint32_t wrapn = n % 32, clampn = n > 32 ? 32 : n;
        CHECK(run1(AluOp::kShfL, Type::kB32, m, lo, hi, n) ==
              static_cast<uint32_t>((both << wrapn) >> 32));
        CHECK(run1(AluOp::kShfR, Type::kB32, m, lo, hi, n) == static_cast<uint32_t>(both >> wrapn));
        CHECK(run1(AluOp::kShfLClamp, Type::kB32, m, lo, hi, n) ==
              static_cast<uint32_t>((both << clampn) >> 32));
        CHECK(run1(AluOp::kShfRClamp, Type::kB32, m, lo, hi, n) ==
              static_cast<uint32_t>(both >> clampn));
      }
    }
  }
}

TEST_CASE("predicate logic", "[alu][int]") {
  Mods m;
  for (uint64_t a : {0u, 1u}) {
    for (uint64_t b : {0u, 1u}) {
      CHECK(run1(AluOp::kAnd, Type::kPred, m, a, b) == (a & b));
      CHECK(run1(AluOp::kOr, Type::kPred, m, a, b) == (a | b));
      CHECK(run1(AluOp::kXor, Type::kPred, m, a, b) == (a ^ b));
    }
    CHECK(run1(AluOp::kNot, Type::kPred, m, a) == (a ^ 1));
  }
}

namespace {
uint64_t ref_bfe(uint64_t a, uint32_t pos, uint32_t len, int bits, bool is_signed) {
  if (len == 0) return 0;
  const I128 v = value(a, bits, is_signed);  // infinitely sign/zero-extended
  I128 field = v >> std::min<uint32_t>(pos, 127);
  if (len < 128) {
    const U128 m = (static_cast<U128>(1) << len) - 1;
    U128 f = static_cast<U128>(field) & m;
    if (is_signed && ((f >> (len - 1)) & 1)) f |= ~m;
    field = static_cast<I128>(f);
  }
  return wrap(field, bits);
}
uint64_t ref_bfi(uint64_t ins, uint64_t base, uint32_t pos, uint32_t len, int bits) {
  if (pos >= static_cast<uint32_t>(bits) || len == 0) return base & mask_of(bits);
  const U128 m = ((len >= 128 ? ~static_cast<U128>(0) : (static_cast<U128>(1) << len) - 1) << pos);
  const U128 r = (static_cast<U128>(base) & ~m) | ((static_cast<U128>(ins) << pos) & m);
  return static_cast<uint64_t>(r) & mask_of(bits);
}
uint64_t ref_brev(uint64_t v, int bits) {
  v = ((v >> 1) & 0x5555555555555555ull) | ((v & 0x5555555555555555ull) << 1);
  v = ((v >> 2) & 0x3333333333333333ull) | ((v & 0x3333333333333333ull) << 2);
  v = ((v >> 4) & 0x0f0f0f0f0f0f0f0full) | ((v & 0x0f0f0f0f0f0f0f0full) << 4);
  v = __builtin_bswap64(v);
  return bits == 64 ? v : v >> 32;
}
}  // namespace

TEST_CASE("bfe/bfi/brev/clz/popc/bfind", "[alu][int][bits]") {
  Mods m;
  for (int bits : {32, 64}) {
    const Type ut = bits == 32 ? Type::kU32 : Type::kU64;
    const Type st = bits == 32 ? Type::kS32 : Type::kS64;
    const Type bt = bits == 32 ? Type::kB32 : Type::kB64;
    for (uint64_t a : int_values(bits, 20, 31)) {
      for (uint32_t pos : {0u, 1u, 7u, 16u, 31u, 32u, 33u, 63u, 64u, 100u, 255u, 256u + 3u}) {
        for (uint32_t len : {0u, 1u, 5u, 8u, 31u, 32u, 33u, 64u, 65u, 200u, 255u, 256u + 4u}) {
          INFO("a=" << a << " pos=" << pos << " len=" << len << " bits=" << bits);
          // pos and len: the low 8 bits for the 32-bit forms, whole for the 64-bit ones (as an
          // H200 computes them: tests/emulator/ptx/silicon).
          const uint32_t fm = bits == 64 ? 0xffffffffu : 0xffu;
          CHECK(run1(AluOp::kBfe, ut, m, a, pos, len) ==
                ref_bfe(a, pos & fm, len & fm, bits, false));
          CHECK(run1(AluOp::kBfe, st, m, a, pos, len) ==
                ref_bfe(a, pos & fm, len & fm, bits, true));
          const uint64_t base = ~a * 3 & mask_of(bits);
          CHECK(run1(AluOp::kBfi, bt, m, a, base, pos, len) ==
                ref_bfi(a, base, pos & fm, len & fm, bits));
        }
      }
      CHECK(run1(AluOp::kBrev, bt, m, a) == ref_brev(a, bits));
      int clz = 0, pop = 0;
      for (int k = bits - 1; k >= 0 && !((a >> k) & 1); --k) ++clz;
      for (int k = 0; k < bits; ++k) pop += (a >> k) & 1;
      CHECK(run1(AluOp::kClz, bt, m, a) == static_cast<uint64_t>(clz));
      CHECK(run1(AluOp::kPopc, bt, m, a) == static_cast<uint64_t>(pop));
      // bfind: position of the most significant 1 (unsigned) or of the most significant bit
      // that differs from the sign (signed); 0xffffffff when there is none.
      int msb_u = -1, msb_s = -1;
      for (int k = 0; k < bits; ++k) {
        if ((a >> k) & 1) msb_u = k;
        if (k < bits - 1 && (((a >> k) & 1) != ((a >> (bits - 1)) & 1))) msb_s = k;
      }
      CHECK(run1(AluOp::kBfind, ut, m, a) ==
            (msb_u < 0 ? 0xffffffffu : static_cast<uint64_t>(msb_u)));
      CHECK(run1(AluOp::kBfind, st, m, a) ==
            (msb_s < 0 ? 0xffffffffu : static_cast<uint64_t>(msb_s)));
      CHECK(run1(AluOp::kBfindShiftAmt, ut, m, a) ==
            (msb_u < 0 ? 0xffffffffu : static_cast<uint64_t>(bits - 1 - msb_u)));
    }
  }
}

TEST_CASE("fns finds the n-th set bit", "[alu][int][bits]") {
  Mods m;
  for (uint64_t mask : int_values(32, 30, 41)) {
    std::vector<int> set;
    for (int k = 0; k < 32; ++k)
      if ((mask >> k) & 1) set.push_back(k);
    for (uint32_t base : {0u, 1u, 5u, 16u, 31u}) {
      for (int offset : {0, 1, 2, 3, 7, 31, 32, 33, -1, -2, -5, -32}) {
        uint64_t want = 0xffffffffu;
        if (offset == 0) {
          if ((mask >> base) & 1) want = base;
        } else if (offset > 0) {
          std::vector<int> up;
          for (int k : set)
            if (k >= static_cast<int>(base)) up.push_back(k);
          if (static_cast<int>(up.size()) >= offset) want = up[offset - 1];
        } else {
          std::vector<int> down;
          for (auto it = set.rbegin(); it != set.rend(); ++it)
            if (*it <= static_cast<int>(base)) down.push_back(*it);
          if (static_cast<int>(down.size()) >= -offset) want = down[-offset - 1];
        }
        CHECK(run1(AluOp::kFns, Type::kB32, m, mask, base, static_cast<uint32_t>(offset)) == want);
      }
    }
  }
}

TEST_CASE("lop3 evaluates its truth table for every LUT", "[alu][int][bits]") {
  Mods m;
  const uint32_t a = 0xF0F0A5C3u, b = 0xCCCC3C96u, c = 0xAAAA0FF1u;
  for (uint32_t lut = 0; lut < 256; ++lut) {
    uint32_t want = 0;
    for (int bit = 0; bit < 32; ++bit) {
      const int idx = (((a >> bit) & 1) << 2) | (((b >> bit) & 1) << 1) | ((c >> bit) & 1);
      want |= ((lut >> idx) & 1u) << bit;
    }
    CHECK(run1(AluOp::kLop3, Type::kB32, m, a, b, c, lut) == want);
  }
  // The canonical operand constants reproduce the LUT itself.
  CHECK(run1(AluOp::kLop3, Type::kB32, m, 0xF0, 0xCC, 0xAA, 0x96) == (0xF0u ^ 0xCCu ^ 0xAAu));
}

TEST_CASE("prmt in every mode", "[alu][int][bits]") {
  Mods m;
  const uint32_t a = 0x809122B3u, b = 0xC455E6FFu;
  const uint8_t bytes[8] = {0xB3, 0x22, 0x91, 0x80, 0xFF, 0xE6, 0x55, 0xC4};
  std::mt19937 rng(3);
  for (int iter = 0; iter < 500; ++iter) {
    const uint32_t sel = rng();
    uint32_t want = 0;
    for (int i = 0; i < 4; ++i) {
      const uint32_t s = (sel >> (4 * i)) & 0xf;
      uint8_t byte = bytes[s & 7];
      if (s & 8) byte = static_cast<int8_t>(byte) < 0 ? 0xff : 0x00;
      want |= uint32_t{byte} << (8 * i);
    }
    CHECK(run1(AluOp::kPrmt, Type::kB32, m, a, b, sel) == want);
  }
  // Mode forms with selector 0 (values seen on hardware in a public GPU test suite for
  // f4e/b4e/ecl/ecr/rc16) and the PTX ISA's table for the other selectors.
  CHECK(run1(AluOp::kPrmtF4e, Type::kB32, m, a, b, 0x8F94) == 0x809122B3u);
  CHECK(run1(AluOp::kPrmtB4e, Type::kB32, m, a, b, 0x8F94) == 0xE655C4B3u);
  CHECK(run1(AluOp::kPrmtEcl, Type::kB32, m, a, b, 0x8F94) == 0x809122B3u);
  CHECK(run1(AluOp::kPrmtEcr, Type::kB32, m, a, b, 0x8F94) == 0xB3B3B3B3u);
  CHECK(run1(AluOp::kPrmtRc16, Type::kB32, m, a, b, 0x8F94) == 0x22B322B3u);
  CHECK(run1(AluOp::kPrmtRc8, Type::kB32, m, a, b, 2) == 0x91919191u);
  CHECK(run1(AluOp::kPrmtF4e, Type::kB32, m, a, b, 1) == 0xFF809122u);
  CHECK(run1(AluOp::kPrmtF4e, Type::kB32, m, a, b, 3) == 0x55E6FF80u);
  CHECK(run1(AluOp::kPrmtB4e, Type::kB32, m, a, b, 3) == 0xB3229180u);
  CHECK(run1(AluOp::kPrmtEcl, Type::kB32, m, a, b, 2) == 0x80919191u);
  CHECK(run1(AluOp::kPrmtEcr, Type::kB32, m, a, b, 2) == 0x919122B3u);
  CHECK(run1(AluOp::kPrmtRc16, Type::kB32, m, a, b, 1) == 0x80918091u);
}

TEST_CASE("dp4a and dp2a", "[alu][int]") {
  std::mt19937 rng(9);
  for (int iter = 0; iter < 3000; ++iter) {
    const uint32_t a = rng(), b = rng(), c = rng();
    for (int signs = 0; signs < 4; ++signs) {
      const bool as = signs & 1, bs = signs & 2;
      Mods m;
      m.b_signed = bs;
      const Type t = as ? Type::kS32 : Type::kU32;
      int64_t acc4 = static_cast<int32_t>(c), acc_lo = acc4, acc_hi = acc4;
      for (int k = 0; k < 4; ++k) {
        const int64_t x = as ? int64_t{static_cast<int8_t>(a >> (8 * k))}
                             : int64_t{static_cast<uint8_t>(a >> (8 * k))};
        const int64_t y = bs ? int64_t{static_cast<int8_t>(b >> (8 * k))}
                             : int64_t{static_cast<uint8_t>(b >> (8 * k))};
        acc4 += x * y;
      }
      for (int k = 0; k < 2; ++k) {
        const int64_t x = as ? int64_t{static_cast<int16_t>(a >> (16 * k))}
                             : int64_t{static_cast<uint16_t>(a >> (16 * k))};
        const int64_t ylo = bs ? int64_t{static_cast<int8_t>(b >> (8 * k))}
                               : int64_t{static_cast<uint8_t>(b >> (8 * k))};
        const int64_t yhi = bs ? int64_t{static_cast<int8_t>(b >> (8 * (k + 2)))}
                               : int64_t{static_cast<uint8_t>(b >> (8 * (k + 2)))};
        acc_lo += x * ylo;
        acc_hi += x * yhi;
      }
      CHECK(run1(AluOp::kDp4a, t, m, a, b, c) == (static_cast<uint64_t>(acc4) & 0xffffffffu));
      CHECK(run1(AluOp::kDp2aLo, t, m, a, b, c) == (static_cast<uint64_t>(acc_lo) & 0xffffffffu));
      CHECK(run1(AluOp::kDp2aHi, t, m, a, b, c) == (static_cast<uint64_t>(acc_hi) & 0xffffffffu));
    }
  }
}

TEST_CASE("whole-warp operation honours the mask and aliasing", "[alu][int]") {
  uint64_t a[kWarpSize], b[kWarpSize];
  for (int i = 0; i < kWarpSize; ++i) {
    a[i] = static_cast<uint64_t>(i) * 1000 + 7;
    b[i] = static_cast<uint64_t>(i) + 1;
  }
  const uint32_t mask = 0xA5A5F00Fu;
  alu(AluOp::kMulLo, Type::kU32, Mods{}, mask, a, b, nullptr, a);  // d aliases a
  for (int i = 0; i < kWarpSize; ++i) {
    const uint64_t orig = static_cast<uint64_t>(i) * 1000 + 7;
    CHECK(a[i] == (((mask >> i) & 1) ? orig * (i + 1) : orig));
  }
}

TEST_CASE("integer capability queries", "[alu][int]") {
  Mods m;
  CHECK(alu_supported(AluOp::kAdd, Type::kS32, m));
  CHECK_FALSE(alu_supported(AluOp::kAdd, Type::kU8, m));
  CHECK_FALSE(alu_supported(AluOp::kMulWide, Type::kU64, m));
  CHECK_FALSE(alu_supported(AluOp::kShfL, Type::kB64, m));
  CHECK_FALSE(alu_supported(AluOp::kAbs, Type::kU32, m));
  Mods cc;
  cc.cc = true;
  CHECK_FALSE(alu_supported(AluOp::kAdd, Type::kU16, cc));
  CHECK_FALSE(alu_supported(AluOp::kMulLo, Type::kU32, cc));
  Mods rn;
  rn.round = Round::kRn;
  CHECK_FALSE(alu_supported(AluOp::kAdd, Type::kS32, rn));
  CHECK(run1(AluOp::kAdd, Type::kU8, m, 1, 2) == ~uint64_t{0});
}

TEST_CASE("min/max .relu on signed types", "[alu][int]") {
  Mods relu;
  relu.relu = true;
  CHECK(run1(AluOp::kMax, Type::kS32, relu, static_cast<uint32_t>(-5), static_cast<uint32_t>(-2)) ==
        0u);
  CHECK(run1(AluOp::kMax, Type::kS32, relu, static_cast<uint32_t>(-5), 3) == 3u);
  CHECK(run1(AluOp::kMin, Type::kS16, relu, 0xfff0, 7) == 0u);
  CHECK_FALSE(alu_supported(AluOp::kMax, Type::kU32, relu));
}

TEST_CASE("add/min/max of u16x2 and s16x2: each half on its own, relu for s16x2 min/max",
          "[alu][int]") {
  // Every pair of a set of edge halves in both positions, against a per-half host reference.
  const uint16_t kHalves[] = {0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xffff, 0x1234, 0xedcb};
  for (bool is_signed : {false, true})
    for (AluOp op : {AluOp::kAdd, AluOp::kMin, AluOp::kMax})
      for (bool relu : {false, true}) {
        const Type t = is_signed ? Type::kS16x2 : Type::kU16x2;
        Mods m;
        m.relu = relu;
        const bool legal = !relu || (is_signed && op != AluOp::kAdd);
        INFO(type_name(t) << " " << alu_op_name(op) << (relu ? " relu" : ""));
        REQUIRE(alu_supported(op, t, m) == legal);
        if (!legal) continue;
        for (uint16_t a0 : kHalves)
          for (uint16_t a1 : kHalves)
            for (uint16_t b0 : kHalves)
              for (uint16_t b1 : kHalves) {
                auto ref = [&](uint16_t x, uint16_t y) -> uint16_t {
                  const I128 vx = value(x, 16, is_signed), vy = value(y, 16, is_signed);
                  I128 r = op == AluOp::kAdd   ? vx + vy
                           : op == AluOp::kMin ? std::min(vx, vy)
                                               : std::max(vx, vy);
                  if (relu && r < 0) r = 0;
                  return static_cast<uint16_t>(wrap(r, 16));
                };
                const uint64_t a = a0 | uint64_t{a1} << 16, b = b0 | uint64_t{b1} << 16;
                const uint64_t want = ref(a0, b0) | uint64_t{ref(a1, b1)} << 16;
                INFO(std::hex << a << " " << b);
                CHECK(run1(op, t, m, a, b) == want);
              }
      }
  // Nothing else takes the packed integer types.
  for (AluOp op : {AluOp::kSub, AluOp::kMulLo, AluOp::kAbs, AluOp::kNeg})
    CHECK_FALSE(alu_supported(op, Type::kS16x2, Mods{}));
  Mods sat;
  sat.sat = true;
  CHECK_FALSE(alu_supported(AluOp::kAdd, Type::kS16x2, sat));
}

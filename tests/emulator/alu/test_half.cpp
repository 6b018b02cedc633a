// f16/bf16 (and x2) arithmetic against independent references: GCC's _Float16 (correctly
// rounded: float has more than 2*11+2 bits), exact 128-bit integer arithmetic for fma, and a
// scaling/nearbyint rounder for bf16.
#include <catch2/catch.hpp>
#include <cfenv>
#include <cmath>
#include <cstring>

#include "alu_test_util.h"

using namespace cusnap::emu::ptx;
using namespace cusnap::emu::ptx::test;

namespace {

__extension__ typedef __int128 I128;

uint16_t h2u(_Float16 h) {
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}
_Float16 u2h(uint16_t u) {
  _Float16 h;
  std::memcpy(&h, &u, 2);
  return h;
}
bool h_is_nan(uint16_t u) { return (u & 0x7c00) == 0x7c00 && (u & 0x3ff) != 0; }

// PTX result register for an f16 arithmetic result (NaN canonical).
uint16_t canon16(uint16_t u) { return h_is_nan(u) ? 0x7fff : u; }

// Exact value of a finite f16 times 2^24 (an integer).
I128 h_scaled(uint16_t u) {
  const int e = (u >> 10) & 0x1f, man = u & 0x3ff;
  const I128 mag = e == 0 ? I128{man} : (I128{man | 0x400} << (e - 1));
  return (u & 0x8000) ? -mag : mag;
}

// f16 nearest (ties to even) to the exact value N * 2^-48.
uint16_t f16_nearest_exact(I128 n) {
  if (n == 0) return 0;
  const bool neg = n < 0;
  const I128 mag = neg ? -n : n;
  // Largest f16 is 65504 = 2047 * 2^5; halfway to the next binade step is 65520.
  if (mag >= I128{65520} << 48) return neg ? 0xfc00 : 0x7c00;
  // Scan candidates around a double estimate.
  const double est = std::ldexp(static_cast<double>(mag), -48);
  const uint16_t guess = h2u(static_cast<_Float16>(est)) & 0x7fff;
  uint16_t best = 0;
  I128 best_dist = -1;
  for (int delta = -2; delta <= 2; ++delta) {
    const int c = guess + delta;
    if (c < 0 || c > 0x7bff) continue;
    const I128 v = h_scaled(static_cast<uint16_t>(c)) << 24;
    const I128 dist = v > mag ? v - mag : mag - v;
    if (best_dist < 0 || dist < best_dist || (dist == best_dist && (c & 1) == 0)) {
      best = static_cast<uint16_t>(c);
      best_dist = dist;
    }
  }
  return neg ? (best | 0x8000) : best;
}

// x rounded to nearest-even with `man_bits` fraction bits and minimum exponent `emin`
// (nearbyint on a power-of-two-scaled value; exact for doubles).
double ref_round(double x, int man_bits, int emin, double max_finite) {
  if (x == 0 || std::isnan(x) || std::isinf(x)) return x;
  const int e = std::max(std::ilogb(x), emin);
  const int saved = std::fegetround();
  std::fesetround(FE_TONEAREST);
  const double r = std::ldexp(std::nearbyint(std::ldexp(x, man_bits - e)), e - man_bits);
  std::fesetround(saved);
  if (std::fabs(r) > max_finite) return std::copysign(INFINITY, x);
  return r;
}
uint16_t bf16_bits(double exact_value) {  // exact_value must be representable in bf16
  if (std::isnan(exact_value)) return 0x7fff;
  return static_cast<uint16_t>(f2u(static_cast<float>(exact_value)) >> 16);
}
double bf16_value(uint16_t u) { return u2f(static_cast<uint32_t>(u) << 16); }
bool bf_is_nan(uint16_t u) { return (u & 0x7f80) == 0x7f80 && (u & 0x7f) != 0; }

std::vector<uint16_t> half_values(int count, uint64_t seed) {
  std::vector<uint16_t> v = {0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x3c00, 0xbc00,
                             0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0x3555, 0x4248};
  std::mt19937 rng(static_cast<uint32_t>(seed));
  for (int i = 0; i < count; ++i) v.push_back(static_cast<uint16_t>(rng()));
  return v;
}

}  // namespace

TEST_CASE("f16 add/sub/mul are correctly rounded, NaN is canonical", "[alu][half]") {
  Mods m;
  const auto vals = half_values(150, 1);
  for (uint16_t a : vals) {
    for (uint16_t b : vals) {
      const _Float16 ha = u2h(a), hb = u2h(b);
      INFO("a=" << a << " b=" << b);
      CHECK(run1(AluOp::kAdd, Type::kF16, m, a, b) == canon16(h2u(static_cast<_Float16>(ha + hb))));
      CHECK(run1(AluOp::kSub, Type::kF16, m, a, b) == canon16(h2u(static_cast<_Float16>(ha - hb))));
      CHECK(run1(AluOp::kMul, Type::kF16, m, a, b) == canon16(h2u(static_cast<_Float16>(ha * hb))));
      // x2: the halves are independent.
      const uint64_t pa = (uint64_t{b} << 16) | a, pb = (uint64_t{a} << 16) | b;
      const uint64_t want = (uint64_t{canon16(h2u(static_cast<_Float16>(hb * ha)))} << 16) |
                            canon16(h2u(static_cast<_Float16>(ha * hb)));
      CHECK(run1(AluOp::kMul, Type::kF16x2, m, pa, pb) == want);
    }
  }
}

TEST_CASE("f16 fma is fused and correctly rounded (exact integer reference)", "[alu][half]") {
  Mods m;
  m.round = Round::kRn;
  std::mt19937 rng(77);
  const auto vals = half_values(40, 2);
  auto finite = [](uint16_t u) { return (u & 0x7c00) != 0x7c00; };
  int checked = 0;
  for (int iter = 0; iter < 60000; ++iter) {
    uint16_t a = static_cast<uint16_t>(rng()), b = static_cast<uint16_t>(rng()),
             c = static_cast<uint16_t>(rng());
    if (iter < static_cast<int>(vals.size() * vals.size())) {
      a = vals[iter % vals.size()];
      b = vals[iter / vals.size()];
    }
    if (iter % 3 == 0)
      c = static_cast<uint16_t>((c & 0x83ff) | ((a & 0x7c00) + (b & 0x7c00) - 0x3c00));
    if (!finite(a) || !finite(b) || !finite(c)) continue;
    const I128 exact = h_scaled(a) * h_scaled(b) + (h_scaled(c) << 24);
    uint16_t want = f16_nearest_exact(exact);
    if (exact == 0) {  // exact zero: sign by IEEE rules (rn: -0 only if both terms are -0)
      const bool prod_neg = ((a ^ b) & 0x8000) != 0;
      const bool prod_zero = h_scaled(a) == 0 || h_scaled(b) == 0;
      want = (prod_zero && prod_neg && (c & 0x8000) && h_scaled(c) == 0) ? 0x8000 : 0x0000;
      if (!prod_zero || h_scaled(c) != 0) want = 0x0000;
    }
    INFO("a=" << a << " b=" << b << " c=" << c);
    CHECK(run1(AluOp::kFma, Type::kF16, m, a, b, c) == want);
    ++checked;
  }
  CHECK(checked > 30000);
}

TEST_CASE("f16 ftz, sat, relu, min/max, neg/abs", "[alu][half]") {
  Mods ftz;
  ftz.ftz = true;
  CHECK(run1(AluOp::kAdd, Type::kF16, ftz, 0x0001, 0x0000) == 0x0000);  // subnormal input flushed
  CHECK(run1(AluOp::kMul, Type::kF16, ftz, 0x0400, 0x3800) == 0x0000);  // subnormal result flushed
  CHECK(run1(AluOp::kMul, Type::kF16, Mods{}, 0x0400, 0x3800) == 0x0200);
  Mods sat;
  sat.sat = true;
  CHECK(run1(AluOp::kAdd, Type::kF16, sat, 0x3c00, 0x3c00) == 0x3c00);  // 2 -> 1
  CHECK(run1(AluOp::kAdd, Type::kF16, sat, 0xbc00, 0x3800) == 0x0000);  // -0.5 -> 0
  CHECK(run1(AluOp::kAdd, Type::kF16, sat, 0x7e00, 0x3800) == 0x0000);  // NaN -> 0
  Mods relu;
  relu.relu = true;
  relu.round = Round::kRn;
  CHECK(run1(AluOp::kFma, Type::kF16, relu, 0xbc00, 0x3c00, 0x3800) == 0x0000);  // -0.5 -> 0
  CHECK(run1(AluOp::kFma, Type::kF16, relu, 0x3c00, 0x3c00, 0x3800) == 0x3e00);
  CHECK(run1(AluOp::kFma, Type::kF16, relu, 0x7e00, 0x3c00, 0x3800) == 0x7fff);
  Mods m;
  CHECK(run1(AluOp::kMin, Type::kF16, m, 0x7e00, 0x3c00) == 0x3c00);
  CHECK(run1(AluOp::kMax, Type::kF16, m, 0x8000, 0x0000) == 0x0000);
  CHECK(run1(AluOp::kMin, Type::kF16, m, 0x8000, 0x0000) == 0x8000);
  CHECK(run1(AluOp::kMin, Type::kF16x2, m, 0x4000bc00, 0x3c004000) == 0x3c00bc00);
  Mods nan;
  nan.nan = true;
  CHECK(run1(AluOp::kMax, Type::kF16, nan, 0x7e00, 0x3c00) == 0x7fff);
  CHECK(run1(AluOp::kNeg, Type::kF16x2, m, 0x3c00bc00) == 0xbc003c00);
  CHECK(run1(AluOp::kAbs, Type::kBF16, m, 0xbf80) == 0x3f80);
  Mods maxrelu;
  maxrelu.relu = true;
  CHECK(run1(AluOp::kMax, Type::kF16, maxrelu, 0xbc00, 0xc000) == 0x0000);
}

TEST_CASE("bf16 add/mul/fma", "[alu][half]") {
  Mods m;
  m.round = Round::kRn;
  std::mt19937 rng(5);
  const double kMax = 3.3895313892515355e38;  // largest bf16
  for (int iter = 0; iter < 60000; ++iter) {
    const uint16_t a = static_cast<uint16_t>(rng()), b = static_cast<uint16_t>(rng());
    uint16_t b2 =
        iter % 2 ? b : static_cast<uint16_t>((b & 0x807f) | (a & 0x7f80));  // close exponents
    const double x = bf16_value(a), y = bf16_value(b2);
    auto want_of = [&](double exact_or_rn) {
      if (std::isnan(exact_or_rn)) return uint16_t{0x7fff};
      return bf16_bits(ref_round(exact_or_rn, 7, -126, kMax));
    };
    if (bf_is_nan(a) || bf_is_nan(b2)) {
      CHECK(run1(AluOp::kAdd, Type::kBF16, m, a, b2) == 0x7fff);
      continue;
    }
    INFO("a=" << a << " b=" << b2);
    // x + y in double is correctly rounded to 53 bits; 53 >= 2*8+2 so rounding that to bf16
    // gives the correctly rounded sum. x*y is exact in double.
    CHECK(run1(AluOp::kAdd, Type::kBF16, m, a, b2) == want_of(x + y));
    CHECK(run1(AluOp::kMul, Type::kBF16, m, a, b2) == want_of(x * y));
    CHECK(run1(AluOp::kMul, Type::kBF16x2, m, (uint64_t{a} << 16) | b2, (uint64_t{b2} << 16) | a) ==
          ((uint64_t{want_of(x * y)} << 16) | want_of(x * y)));
  }
  // fma: single rounding (an unfused product would lose the low bits).
  // (1 + 2^-7)^2 - (1 + 2^-6) = 2^-14.
  const uint16_t one_eps = 0x3f81, neg = 0xbf82;
  CHECK(run1(AluOp::kFma, Type::kBF16, m, one_eps, one_eps, neg) == bf16_bits(0x1p-14));
}

TEST_CASE("ex2/tanh approximations on halves", "[alu][half]") {
  Mods m;
  m.approx = true;
  for (uint32_t u = 0; u < 0x10000; u += 7) {
    const uint16_t h = static_cast<uint16_t>(u);
    if (h_is_nan(h)) continue;
    const double x = static_cast<double>(u2h(h));
    const double want = std::exp2(x);
    const double got =
        static_cast<double>(u2h(static_cast<uint16_t>(run1(AluOp::kEx2, Type::kF16, m, h))));
    if (std::isinf(want) || want > 65504 || want < 0x1p-14) continue;
    CHECK(std::fabs(got - want) <= want * 0x1p-10);
  }
}

TEST_CASE("half capability queries", "[alu][half]") {
  Mods m;
  m.round = Round::kRz;
  CHECK_FALSE(alu_supported(AluOp::kAdd, Type::kF16, m));
  Mods f;
  f.ftz = true;
  CHECK_FALSE(alu_supported(AluOp::kAdd, Type::kBF16, f));
  CHECK(alu_supported(AluOp::kAdd, Type::kF16x2, f));
  CHECK_FALSE(alu_supported(AluOp::kDiv, Type::kF16, Mods{}));
}

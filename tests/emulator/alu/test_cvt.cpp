// cvt tests. References: GCC's _Float16 conversions (libgcc honours the rounding mode), host
// casts under fesetround, bit manipulation for bf16/tf32 and brute-force nearest search over
// all 256 encodings for fp8.
#include <catch2/catch.hpp>
#include <cfenv>
#include <cmath>
#include <cstring>
#include <limits>

#include "alu_test_util.h"

using namespace cusnap::emu::ptx;
using namespace cusnap::emu::ptx::test;

namespace {

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

struct ModeCase {
  Round round;
  Round int_round;
  int fe;
};
const ModeCase kModes[] = {{Round::kRn, Round::kRni, FE_TONEAREST},
                           {Round::kRz, Round::kRzi, FE_TOWARDZERO},
                           {Round::kRm, Round::kRmi, FE_DOWNWARD},
                           {Round::kRp, Round::kRpi, FE_UPWARD}};

template <class To, class From>
__attribute__((noinline)) To cast_in_mode(From x, int fe) {
  const int saved = std::fegetround();
  std::fesetround(fe);
  volatile From vx = x;
  volatile To r = static_cast<To>(vx);
  std::fesetround(saved);
  return r;
}

Mods with_round(Round r) {
  Mods m;
  m.round = r;
  return m;
}

// fp8 decoding written from the format definitions (OCP FP8: E4M3 bias 7 without infinities,
// E5M2 bias 15 IEEE-like).
double fp8_value(uint8_t u, bool e4m3) {
  const int man_bits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  const int e = (u & 0x7f) >> man_bits, man = u & ((1 << man_bits) - 1);
  const double s = (u & 0x80) ? -1.0 : 1.0;
  if (e4m3 && (u & 0x7f) == 0x7f) return NAN;
  if (!e4m3 && e == 31) return man ? NAN : s * INFINITY;
  if (e == 0) return s * std::ldexp(man, 1 - bias - man_bits);
  return s * std::ldexp(man + (1 << man_bits), e - bias - man_bits);
}

// Nearest fp8 encoding by brute force (ties to even encoding), saturating to the max finite.
uint8_t fp8_nearest(double x, bool e4m3) {
  if (std::isnan(x)) return 0x7f;
  if (std::isinf(x)) x = std::copysign(1e6, x);  // .satfinite: largest finite encoding
  uint8_t best = 0;
  double best_d = INFINITY;
  for (int u = 0; u < 256; ++u) {
    const double v = fp8_value(static_cast<uint8_t>(u), e4m3);
    if (!std::isfinite(v)) continue;
    if (v == 0 && std::signbit(v) != std::signbit(x)) continue;
    const double d = std::fabs(v - x);
    if (d < best_d || (d == best_d && (u & 1) == 0)) {
      best = static_cast<uint8_t>(u);
      best_d = d;
    }
  }
  return best;
}

}  // namespace

TEST_CASE("cvt f16 -> f32/f64 exhaustively", "[alu][cvt]") {
  Mods m;
  for (uint32_t u = 0; u < 0x10000; ++u) {
    const _Float16 h = u2h(static_cast<uint16_t>(u));
    const float f = static_cast<float>(h);
    const uint64_t want = std::isnan(f) ? 0x7fffffffu : f2u(f);
    REQUIRE(cvt1(Type::kF32, Type::kF16, m, u) == want);
    if (!std::isnan(f)) REQUIRE(cvt1(Type::kF64, Type::kF16, m, u) == d2u(static_cast<double>(h)));
  }
}

TEST_CASE("cvt f32 -> f16 in every rounding mode around every f16 value", "[alu][cvt]") {
  std::vector<float> inputs;
  for (uint32_t u = 0; u < 0x7c00; ++u) {  // positive finite f16 and their upper midpoints
    const float lo = static_cast<float>(u2h(static_cast<uint16_t>(u)));
    const float hi = u == 0x7bff ? 65536.0f : static_cast<float>(u2h(static_cast<uint16_t>(u + 1)));
    const float mid = (lo + hi) / 2;
    for (float f : {lo, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY),
                    std::nextafter(lo, INFINITY)}) {
      inputs.push_back(f);
      inputs.push_back(-f);
    }
  }
  for (float f : f32_values(2000)) inputs.push_back(f);
  for (const ModeCase& mc : kModes) {
    const Mods m = with_round(mc.round);
    for (float f : inputs) {
      const uint16_t ref = h2u(cast_in_mode<_Float16>(f, mc.fe));
      const uint64_t want = std::isnan(f) ? 0x7fff : ref;
      INFO("f=" << f << " bits=" << f2u(f) << " mode=" << int(mc.round));
      REQUIRE(cvt1(Type::kF16, Type::kF32, m, f2u(f)) == want);
    }
  }
}

TEST_CASE("cvt f64 -> f16 and f64 -> f32 in every rounding mode", "[alu][cvt]") {
  auto vals = f64_values(3000);
  std::mt19937_64 rng(8);
  for (int i = 0; i < 3000; ++i) {  // values in f16 / f32 range and near the subnormal range
    vals.push_back(
        std::ldexp(static_cast<double>(rng() >> 11), -static_cast<int>(rng() % 100) - 20));
    vals.push_back(
        -std::ldexp(static_cast<double>(rng() >> 11), -static_cast<int>(rng() % 200) - 53));
  }
  for (const ModeCase& mc : kModes) {
    const Mods m = with_round(mc.round);
    for (double x : vals) {
      // NaN keeps its sign and the payload's top bits, quieted (an H200:
      // tests/emulator/ptx/silicon).
      const uint64_t xb = d2u(x);
      const uint64_t want16 = std::isnan(x) ? ((xb >> 48) & 0x8000) | 0x7e00 | ((xb >> 42) & 0x1ff)
                                            : h2u(cast_in_mode<_Float16>(x, mc.fe));
      const float f = cast_in_mode<float>(x, mc.fe);
      const uint64_t want32 =
          std::isnan(x) ? ((xb >> 32) & 0x80000000u) | 0x7fc00000u | ((xb >> 29) & 0x3fffff)
                        : f2u(f);
      INFO("x=" << x);
      CHECK(cvt1(Type::kF16, Type::kF64, m, d2u(x)) == want16);
      CHECK(cvt1(Type::kF32, Type::kF64, m, d2u(x)) == want32);
    }
  }
  Mods ftz = with_round(Round::kRn);
  ftz.ftz = true;
  CHECK(cvt1(Type::kF32, Type::kF64, ftz, d2u(1e-40)) == 0u);
  CHECK(cvt1(Type::kF32, Type::kF64, ftz, d2u(-1e-40)) == 0x80000000u);
  Mods sat = with_round(Round::kRn);
  sat.sat = true;
  CHECK(u2f(cvt1(Type::kF32, Type::kF64, sat, d2u(1.5))) == 1.0f);
  CHECK(cvt1(Type::kF32, Type::kF64, sat, d2u(NAN)) == 0u);
  CHECK(cvt1(Type::kF32, Type::kF64, sat, d2u(-3.0)) == 0u);
}

TEST_CASE("cvt f32 -> bf16 / bf16x2 / tf32", "[alu][cvt]") {
  auto vals = f32_values(20000);
  for (float f : vals) {
    const uint32_t u = f2u(f);
    const bool nan = std::isnan(f);
    // Bit-manipulation references: nearest-even adds 0x7fff plus the lsb of the kept part.
    const uint32_t rn = nan ? 0x7fff : (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const uint32_t rz = nan ? 0x7fff : u >> 16;
    CHECK(cvt1(Type::kBF16, Type::kF32, with_round(Round::kRn), u) == rn);
    CHECK(cvt1(Type::kBF16, Type::kF32, with_round(Round::kRz), u) == rz);
    // rm/rp: truncation moves toward zero; step one ulp away when inexact in that direction.
    const bool inexact = (u & 0xffffu) != 0 && !nan && !std::isinf(f);
    const bool negative = (u >> 31) != 0;
    CHECK(cvt1(Type::kBF16, Type::kF32, with_round(Round::kRm), u) ==
          (nan ? 0x7fff : rz + (inexact && negative ? 1 : 0)));
    CHECK(cvt1(Type::kBF16, Type::kF32, with_round(Round::kRp), u) ==
          (nan ? 0x7fff : rz + (inexact && !negative ? 1 : 0)));
    // tf32 with ties away from zero: add half an ulp (bit 12) to the magnitude and truncate.
    const uint32_t rna = nan ? 0x7fffffffu : (u + 0x1000u) & 0xffffe000u;
    CHECK(cvt1(Type::kTF32, Type::kF32, with_round(Round::kRna), u) == rna);
  }
  // Packing: a goes to the upper half.
  CHECK(cvt1(Type::kBF16x2, Type::kF32, with_round(Round::kRn), f2u(1.0f), f2u(-2.0f)) ==
        0x3f80c000u);
  CHECK(cvt1(Type::kF16x2, Type::kF32, with_round(Round::kRn), f2u(1.0f), f2u(-2.0f)) ==
        0x3c00c000u);
  Mods relu = with_round(Round::kRn);
  relu.relu = true;
  CHECK(cvt1(Type::kF16x2, Type::kF32, relu, f2u(-1.0f), f2u(NAN)) == 0x00007fffu);
  Mods satf = with_round(Round::kRn);
  satf.satfinite = true;
  CHECK(cvt1(Type::kF16, Type::kF32, satf, f2u(1e6f)) == 0x7bffu);
  CHECK(cvt1(Type::kF16, Type::kF32, satf, f2u(-INFINITY)) == 0xfbffu);
  CHECK(cvt1(Type::kF16, Type::kF32, with_round(Round::kRn), f2u(1e6f)) == 0x7c00u);
  // .satfinite on tf32; a decoder that stores it in Mods::sat gets the same (tf32 has no .sat).
  Mods tf = with_round(Round::kRna);
  tf.satfinite = true;
  CHECK(cvt1(Type::kTF32, Type::kF32, tf, f2u(INFINITY)) == 0x7f7fe000u);  // largest finite tf32
  tf.satfinite = false;
  tf.sat = true;
  CHECK(cvt1(Type::kTF32, Type::kF32, tf, f2u(-INFINITY)) == 0xff7fe000u);
  CHECK(cvt1(Type::kTF32, Type::kF32, tf, f2u(0.75f)) == f2u(0.75f));  // not a [0,1] clamp
  Mods fp8sat = with_round(Round::kRn);
  fp8sat.sat = true;
  CHECK(cvt1(Type::kE4M3x2, Type::kF32, fp8sat, f2u(2.0f), f2u(1000.0f)) == 0x407eu);
  // .sat on f16 is the [0,1] clamp.
  Mods hs = with_round(Round::kRn);
  hs.sat = true;
  CHECK(cvt1(Type::kF16, Type::kF32, hs, f2u(2.0f)) == 0x3c00u);
  CHECK(cvt1(Type::kF16, Type::kF32, with_round(Round::kRz), f2u(1e6f)) == 0x7bffu);
}

TEST_CASE("cvt fp8 (e4m3x2 / e5m2x2) both directions", "[alu][cvt]") {
  const Mods m = with_round(Round::kRn);
  for (bool e4m3 : {true, false}) {
    const Type t = e4m3 ? Type::kE4M3x2 : Type::kE5M2x2;
    for (uint32_t u = 0; u < 256; ++u) {
      // Unpack to f16x2: fp8 values are exact in f16.
      const double v = fp8_value(static_cast<uint8_t>(u), e4m3);
      const uint64_t got = cvt1(Type::kF16x2, t, m, (u << 8) | u);
      const uint16_t lo = static_cast<uint16_t>(got), hi = static_cast<uint16_t>(got >> 16);
      if (std::isnan(v)) {
        CHECK(lo == 0x7fff);
      } else {
        CHECK(static_cast<double>(u2h(lo)) == v);
        CHECK(std::signbit(static_cast<double>(u2h(lo))) == std::signbit(v));
      }
      CHECK(hi == lo);
    }
    std::mt19937 rng(e4m3 ? 1 : 2);
    std::vector<float> inputs = {0.0f,     -0.0f,      448.0f,   449.0f,   464.0f,
                                 480.0f,   1e9f,       -1e9f,    INFINITY, -INFINITY,
                                 NAN,      57344.0f,   61440.0f, 1e-9f,    0x1p-9f,
                                 0x1p-10f, 0x1.8p-10f, 0x1p-16f, 0x1p-17f, 0x1.8p-17f};
    for (int i = 0; i < 5000; ++i) {
      inputs.push_back(std::ldexp(std::uniform_real_distribution<float>(-2, 2)(rng),
                                  static_cast<int>(rng() % 40) - 22));
    }
    for (float f : inputs) {
      const uint8_t want = fp8_nearest(f, e4m3);
      INFO("f=" << f << " e4m3=" << e4m3);
      CHECK(cvt1(t, Type::kF32, m, f2u(f), f2u(-f)) ==
            ((uint64_t{want} << 8) | fp8_nearest(-f, e4m3)));
      if (std::fabs(f) < 65504) {
        const _Float16 h = static_cast<_Float16>(f);
        if (static_cast<float>(h) == f) {
          CHECK(cvt1(t, Type::kF16x2, m, (uint64_t{h2u(h)} << 16) | h2u(h)) ==
                ((uint64_t{want} << 8) | want));
        }
      }
    }
  }
}

TEST_CASE("cvt between integer types", "[alu][cvt]") {
  const Type types[] = {Type::kU8,  Type::kS8,  Type::kU16, Type::kS16, Type::kU32,
                        Type::kS32, Type::kU64, Type::kS64, Type::kB32};
  __extension__ typedef __int128 I128;
  auto info = [](Type t) {
    const int bits = type_bits(t);
    const bool s = t == Type::kS8 || t == Type::kS16 || t == Type::kS32 || t == Type::kS64;
    return std::pair<int, bool>{bits, s};
  };
  for (Type src : types) {
    for (Type dst : types) {
      const auto [sb, ss] = info(src);
      const auto [db, ds] = info(dst);
      for (uint64_t a : int_values(sb, 10, 5)) {
        // Mathematical value of the source, then the destination's wrap / clamp.
        I128 v = static_cast<I128>(a);
        if (ss && ((a >> (sb - 1)) & 1)) v -= static_cast<I128>(1) << sb;
        const uint64_t dm = db == 64 ? ~uint64_t{0} : (uint64_t{1} << db) - 1;
        CHECK(cvt1(dst, src, Mods{}, a) == (static_cast<uint64_t>(v) & dm));
        const I128 lo = ds ? -(static_cast<I128>(1) << (db - 1)) : 0;
        const I128 hi = (static_cast<I128>(1) << (db - (ds ? 1 : 0))) - 1;
        Mods sat;
        sat.sat = true;
        CHECK(cvt1(dst, src, sat, a) == (static_cast<uint64_t>(v < lo   ? lo
                                                               : v > hi ? hi
                                                                        : v) &
                                         dm));
      }
    }
  }
}

TEST_CASE("cvt int -> float and float -> int with rounding and saturation", "[alu][cvt]") {
  const auto ivals = int_values(64, 300, 77);
  for (const ModeCase& mc : kModes) {
    const Mods m = with_round(mc.round);
    for (uint64_t a : ivals) {
      const int64_t s = static_cast<int64_t>(a);
      const int32_t s32 = static_cast<int32_t>(a);
      CHECK(cvt1(Type::kF32, Type::kS64, m, a) == f2u(cast_in_mode<float>(s, mc.fe)));
      CHECK(cvt1(Type::kF32, Type::kU64, m, a) == f2u(cast_in_mode<float>(a, mc.fe)));
      CHECK(cvt1(Type::kF64, Type::kS64, m, a) == d2u(cast_in_mode<double>(s, mc.fe)));
      CHECK(cvt1(Type::kF64, Type::kU64, m, a) == d2u(cast_in_mode<double>(a, mc.fe)));
      CHECK(cvt1(Type::kF32, Type::kS32, m, a) == f2u(cast_in_mode<float>(s32, mc.fe)));
      CHECK(cvt1(Type::kF16, Type::kS32, m, a) ==
            h2u(cast_in_mode<_Float16>(static_cast<double>(s32), mc.fe)));
      CHECK(cvt1(Type::kF16, Type::kU16, m, a) ==
            h2u(cast_in_mode<_Float16>(static_cast<double>(a & 0xffff), mc.fe)));
    }
  }
  // float -> int: round to integral, clamp; NaN from f64 -> 1 << (n - 1) in every width (an H200:
  // tests/emulator/ptx/silicon; 8-bit widths are not measured there).
  std::vector<double> fvals = f64_values(400);
  for (double x : {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2147483647.5, 2147483648.0, -2147483648.5,
                   -2147483649.0, 4294967295.5, 4294967296.0, 9.3e18, 1.9e19, -9.3e18, 1e-310}) {
    fvals.push_back(x);
  }
  for (const ModeCase& mc : kModes) {
    const Mods m = with_round(mc.int_round);
    for (double x : fvals) {
      const int saved = std::fegetround();
      std::fesetround(mc.fe);
      const double integral = std::nearbyint(x);
      std::fesetround(saved);
      auto clamp_to = [&](double lo, double hi_excl, uint64_t lo_bits, uint64_t hi_bits,
                          uint64_t mask) -> uint64_t {
        if (std::isnan(x)) return (mask >> 1) + 1;
        if (integral < lo) return lo_bits;
        if (integral >= hi_excl) return hi_bits;
        return static_cast<uint64_t>(static_cast<int64_t>(integral)) & mask;
      };
      INFO("x=" << x << " mode=" << int(mc.int_round));
      CHECK(cvt1(Type::kS32, Type::kF64, m, d2u(x)) ==
            clamp_to(-0x1p31, 0x1p31, 0x80000000u, 0x7fffffffu, 0xffffffffu));
      CHECK(cvt1(Type::kU32, Type::kF64, m, d2u(x)) ==
            clamp_to(0, 0x1p32, 0, 0xffffffffu, 0xffffffffu));
      CHECK(cvt1(Type::kS64, Type::kF64, m, d2u(x)) ==
            clamp_to(-0x1p63, 0x1p63, 0x8000000000000000u, 0x7fffffffffffffffu, ~uint64_t{0}));
      CHECK(cvt1(Type::kS8, Type::kF64, m, d2u(x)) == clamp_to(-128, 128, 0x80, 0x7f, 0xff));
      if (!(integral >= 0x1p63) && !std::isnan(x)) {
        CHECK(cvt1(Type::kU64, Type::kF64, m, d2u(x)) ==
              clamp_to(0, 0x1p64, 0, ~uint64_t{0}, ~uint64_t{0}));
      }
      const float f = static_cast<float>(x);
      if (static_cast<double>(f) == x && !std::isnan(x)) {
        CHECK(cvt1(Type::kS32, Type::kF32, m, f2u(f)) ==
              clamp_to(-0x1p31, 0x1p31, 0x80000000u, 0x7fffffffu, 0xffffffffu));
        // Same-type integral rounding.
        CHECK(u2f(cvt1(Type::kF32, Type::kF32, m, f2u(f))) == static_cast<float>(integral));
      }
    }
  }
  CHECK(cvt1(Type::kU64, Type::kF32, with_round(Round::kRzi), f2u(3e19f)) == ~uint64_t{0});
  Mods ftz = with_round(Round::kRmi);
  ftz.ftz = true;
  CHECK(cvt1(Type::kS32, Type::kF32, ftz, f2u(-1e-40f)) == 0u);
  CHECK(cvt1(Type::kS32, Type::kF32, with_round(Round::kRmi), f2u(-1e-40f)) == 0xffffffffu);
  CHECK(cvt1(Type::kS32, Type::kF16, with_round(Round::kRni), 0x4100) == 2u);  // 2.5 -> 2
  Mods sat;
  sat.sat = true;
  CHECK(u2f(cvt1(Type::kF32, Type::kF32, sat, f2u(1.25f))) == 1.0f);
  CHECK(cvt1(Type::kF32, Type::kF32, sat, 0x7fc00000u) == 0u);
}

TEST_CASE("cvt capability queries", "[alu][cvt]") {
  CHECK(cvt_supported(Type::kF16, Type::kF32, with_round(Round::kRn)));
  CHECK(cvt_supported(Type::kS32, Type::kF32, with_round(Round::kRzi)));
  CHECK_FALSE(cvt_supported(Type::kS32, Type::kF32, with_round(Round::kRn)));
  CHECK_FALSE(cvt_supported(Type::kF16, Type::kF32, with_round(Round::kRni)));
  CHECK_FALSE(cvt_supported(Type::kTF32, Type::kF32, with_round(Round::kRm)));
  CHECK_FALSE(cvt_supported(Type::kPred, Type::kF32, Mods{}));
  CHECK_FALSE(cvt_supported(Type::kB128, Type::kB64, Mods{}));
}

// f32/f64 ALU tests. References are host operations evaluated under fesetround (the host's SSE
// arithmetic is IEEE-754 correctly rounded in every mode) plus explicit PTX rules for NaN, .ftz
// and .sat.
#include <catch2/catch.hpp>
#include <cfenv>
#include <cmath>

#include "alu_test_util.h"

using namespace cusnap::emu::ptx;
using namespace cusnap::emu::ptx::test;

namespace {

struct ModeCase {
  Round round;
  int fe;
};
const ModeCase kModes[] = {{Round::kRn, FE_TONEAREST},
                           {Round::kRz, FE_TOWARDZERO},
                           {Round::kRm, FE_DOWNWARD},
                           {Round::kRp, FE_UPWARD}};

template <class F>
__attribute__((noinline)) F host_op(char op, F a, F b, F c, int fe) {
  const int saved = std::fegetround();
  std::fesetround(fe);
  volatile F va = a, vb = b, vc = c;
  F r;
  switch (op) {
    case '+':
      r = va + vb;
      break;
    case '-':
      r = va - vb;
      break;
    case '*':
      r = va * vb;
      break;
    case '/':
      r = va / vb;
      break;
    case 's':
      r = std::sqrt(va);
      break;
    case 'r':
      r = F{1} / va;
      break;
    default:
      r = std::fma(va, vb, vc);
      break;
  }
  volatile F vr = r;
  std::fesetround(saved);
  return vr;
}

bool is_sub(float f) { return std::fpclassify(f) == FP_SUBNORMAL; }
float ftz(float f) { return is_sub(f) ? std::copysign(0.0f, f) : f; }

// What PTX says an f32 arithmetic result register holds.
uint64_t expect_f32(float r, bool flush, bool sat) {
  if (flush) r = ftz(r);
  if (sat) {
    if (std::isnan(r) || r <= 0) r = 0.0f;
    if (r > 1) r = 1.0f;
  }
  if (std::isnan(r)) return 0x7fffffffu;
  return f2u(r);
}

}  // namespace

TEST_CASE("f32 add/sub/mul/fma/div/sqrt/rcp in every rounding mode, ftz and sat", "[alu][float]") {
  const auto vals = f32_values(60);
  for (const ModeCase& mc : kModes) {
    for (int flags = 0; flags < 4; ++flags) {
      Mods m;
      m.round = mc.round;
      m.ftz = flags & 1;
      m.sat = flags & 2;
      for (float a : vals) {
        for (float b : vals) {
          const float fa = m.ftz ? ftz(a) : a, fb = m.ftz ? ftz(b) : b;
          const float c = b * 0.75f - a;
          const float fc = m.ftz ? ftz(c) : c;
          INFO("a=" << a << " b=" << b << " mode=" << int(mc.round) << " flags=" << flags);
          CHECK(run1(AluOp::kAdd, Type::kF32, m, f2u(a), f2u(b)) ==
                expect_f32(host_op('+', fa, fb, 0.0f, mc.fe), m.ftz, m.sat));
          CHECK(run1(AluOp::kSub, Type::kF32, m, f2u(a), f2u(b)) ==
                expect_f32(host_op('-', fa, fb, 0.0f, mc.fe), m.ftz, m.sat));
          CHECK(run1(AluOp::kMul, Type::kF32, m, f2u(a), f2u(b)) ==
                expect_f32(host_op('*', fa, fb, 0.0f, mc.fe), m.ftz, m.sat));
          CHECK(run1(AluOp::kFma, Type::kF32, m, f2u(a), f2u(b), f2u(c)) ==
                expect_f32(host_op('f', fa, fb, fc, mc.fe), m.ftz, m.sat));
          if (!m.sat) {
            CHECK(run1(AluOp::kDiv, Type::kF32, m, f2u(a), f2u(b)) ==
                  expect_f32(host_op('/', fa, fb, 0.0f, mc.fe), m.ftz, false));
          }
        }
        const float fa = m.ftz ? ftz(a) : a;
        if (!m.sat) {
          CHECK(run1(AluOp::kSqrt, Type::kF32, m, f2u(a)) ==
                expect_f32(host_op('s', fa, 0.0f, 0.0f, mc.fe), m.ftz, false));
          CHECK(run1(AluOp::kRcp, Type::kF32, m, f2u(a)) ==
                expect_f32(host_op('r', fa, 0.0f, 0.0f, mc.fe), m.ftz, false));
        }
      }
    }
  }
}

TEST_CASE("f32 fma is fused: exact product, single rounding", "[alu][float]") {
  Mods m;
  m.round = Round::kRn;
  // (1 + 2^-12)^2 - (1 + 2^-11) = 2^-24 exactly; an unfused mul+add would give 0.
  const float a = 1.0f + 0x1p-12f, c = -(1.0f + 0x1p-11f);
  CHECK(u2f(run1(AluOp::kFma, Type::kF32, m, f2u(a), f2u(a), f2u(c))) == 0x1p-24f);
}

TEST_CASE("f64 arithmetic in every rounding mode", "[alu][float]") {
  const auto vals = f64_values(50);
  for (const ModeCase& mc : kModes) {
    Mods m;
    m.round = mc.round;
    for (double a : vals) {
      for (double b : vals) {
        const double c = a * 0.25 - b;
        auto same = [](uint64_t got, double want) {
          return std::isnan(want) ? std::isnan(u2d(got)) : got == d2u(want);
        };
        CHECK(
            same(run1(AluOp::kAdd, Type::kF64, m, d2u(a), d2u(b)), host_op('+', a, b, 0.0, mc.fe)));
        CHECK(
            same(run1(AluOp::kSub, Type::kF64, m, d2u(a), d2u(b)), host_op('-', a, b, 0.0, mc.fe)));
        CHECK(
            same(run1(AluOp::kMul, Type::kF64, m, d2u(a), d2u(b)), host_op('*', a, b, 0.0, mc.fe)));
        CHECK(
            same(run1(AluOp::kDiv, Type::kF64, m, d2u(a), d2u(b)), host_op('/', a, b, 0.0, mc.fe)));
        CHECK(same(run1(AluOp::kFma, Type::kF64, m, d2u(a), d2u(b), d2u(c)),
                   host_op('f', a, b, c, mc.fe)));
      }
      auto same = [](uint64_t got, double want) {
        return std::isnan(want) ? std::isnan(u2d(got)) : got == d2u(want);
      };
      CHECK(same(run1(AluOp::kSqrt, Type::kF64, m, d2u(a)), host_op('s', a, 0.0, 0.0, mc.fe)));
      CHECK(same(run1(AluOp::kRcp, Type::kF64, m, d2u(a)), host_op('r', a, 0.0, 0.0, mc.fe)));
    }
  }
}

TEST_CASE("f32 NaN results are canonical 0x7fffffff", "[alu][float]") {
  Mods m;
  const uint32_t payload_nan = 0xffc12345u;
  CHECK(run1(AluOp::kAdd, Type::kF32, m, payload_nan, f2u(1.0f)) == 0x7fffffffu);
  CHECK(run1(AluOp::kMul, Type::kF32, m, f2u(INFINITY), f2u(0.0f)) == 0x7fffffffu);
  CHECK(run1(AluOp::kSub, Type::kF32, m, f2u(INFINITY), f2u(INFINITY)) == 0x7fffffffu);
  CHECK(run1(AluOp::kNeg, Type::kF32, m, payload_nan) == 0x7fffffffu);
  CHECK(run1(AluOp::kMin, Type::kF32, m, payload_nan, payload_nan) == 0x7fffffffu);
  Mods approx;
  approx.approx = true;
  CHECK(run1(AluOp::kLg2, Type::kF32, approx, f2u(-1.0f)) == 0x7fffffffu);
  CHECK(run1(AluOp::kSin, Type::kF32, approx, f2u(INFINITY)) == 0x7fffffffu);
}

TEST_CASE("f32/f64 min and max", "[alu][float]") {
  Mods m;
  const float nan = std::bit_cast<float>(0x7fc00001u);
  CHECK(u2f(run1(AluOp::kMin, Type::kF32, m, f2u(nan), f2u(2.0f))) == 2.0f);
  CHECK(u2f(run1(AluOp::kMax, Type::kF32, m, f2u(3.0f), f2u(nan))) == 3.0f);
  CHECK(run1(AluOp::kMin, Type::kF32, m, f2u(0.0f), f2u(-0.0f)) == 0x80000000u);
  CHECK(run1(AluOp::kMax, Type::kF32, m, f2u(-0.0f), f2u(0.0f)) == 0u);
  CHECK(u2d(run1(AluOp::kMax, Type::kF64, m, d2u(-1.0), d2u(NAN))) == -1.0);
  Mods nanm;
  nanm.nan = true;
  CHECK(run1(AluOp::kMin, Type::kF32, nanm, f2u(nan), f2u(2.0f)) == 0x7fffffffu);
  Mods xs;
  xs.xorsign_abs = true;
  CHECK(u2f(run1(AluOp::kMax, Type::kF32, xs, f2u(-3.0f), f2u(2.0f))) == -3.0f);
  CHECK(u2f(run1(AluOp::kMin, Type::kF32, xs, f2u(-3.0f), f2u(-2.0f))) == 2.0f);
  const auto vals = f32_values(40);
  for (float a : vals) {
    for (float b : vals) {
      if (std::isnan(a) || std::isnan(b) || a == b) continue;
      CHECK(u2f(run1(AluOp::kMin, Type::kF32, m, f2u(a), f2u(b))) == std::fmin(a, b));
      CHECK(u2f(run1(AluOp::kMax, Type::kF32, m, f2u(a), f2u(b))) == std::fmax(a, b));
    }
  }
}

TEST_CASE("approximate f32 functions stay within the PTX ISA's hardware error bounds",
          "[alu][float]") {
  Mods m;
  m.approx = true;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> wide(-100.0f, 100.0f), pos(1e-3f, 1e3f);
  for (int i = 0; i < 20000; ++i) {
    const float x = wide(rng), p = pos(rng);
    const double ex2 = std::exp2(static_cast<double>(x));
    CHECK(std::fabs(u2f(run1(AluOp::kEx2, Type::kF32, m, f2u(x))) - ex2) <= std::ldexp(ex2, -22));
    CHECK(std::fabs(u2f(run1(AluOp::kLg2, Type::kF32, m, f2u(p))) -
                    std::log2(static_cast<double>(p))) <=
          0x1p-22 * std::fmax(1.0, std::fabs(std::log2(p))));
    const double s = std::sin(static_cast<double>(x)), c = std::cos(static_cast<double>(x));
    CHECK(std::fabs(u2f(run1(AluOp::kSin, Type::kF32, m, f2u(x))) - s) <= 0x1p-20);
    CHECK(std::fabs(u2f(run1(AluOp::kCos, Type::kF32, m, f2u(x))) - c) <= 0x1p-20);
    const double rs = 1.0 / std::sqrt(static_cast<double>(p));
    CHECK(std::fabs(u2f(run1(AluOp::kRsqrt, Type::kF32, m, f2u(p))) - rs) <= std::ldexp(rs, -22));
    const double th = std::tanh(static_cast<double>(x / 16));
    CHECK(std::fabs(u2f(run1(AluOp::kTanh, Type::kF32, m, f2u(x / 16))) - th) <=
          std::fabs(th) * 0x1p-10 + 1e-30);
    const double q = static_cast<double>(x) / p;
    CHECK(std::fabs(u2f(run1(AluOp::kDiv, Type::kF32, m, f2u(x), f2u(p))) - q) <=
          std::fabs(q) * 0x1p-21);
  }
  // Special values.
  CHECK(u2f(run1(AluOp::kEx2, Type::kF32, m, f2u(-INFINITY))) == 0.0f);
  CHECK(u2f(run1(AluOp::kLg2, Type::kF32, m, f2u(0.0f))) == -INFINITY);
  CHECK(u2f(run1(AluOp::kRsqrt, Type::kF32, m, f2u(-0.0f))) == -INFINITY);
  // div.approx returns 0 for divisors beyond 2^126 (its reciprocal is flushed).
  CHECK(u2f(run1(AluOp::kDiv, Type::kF32, m, f2u(1.0f), f2u(0x1p127f))) == 0.0f);
  Mods full;
  full.full = true;
  CHECK(u2f(run1(AluOp::kDiv, Type::kF32, full, f2u(1.0f), f2u(0x1p127f))) == 0x1p-127f);
  Mods af = m;
  af.ftz = true;
  CHECK(run1(AluOp::kEx2, Type::kF32, af, f2u(-130.0f)) == 0u);  // subnormal result flushed
  CHECK(u2f(run1(AluOp::kEx2, Type::kF32, m, f2u(-130.0f))) == 0x1p-130f);
}

TEST_CASE("abs/neg/copysign/testp", "[alu][float]") {
  Mods m;
  CHECK(u2f(run1(AluOp::kAbs, Type::kF32, m, f2u(-2.5f))) == 2.5f);
  CHECK(run1(AluOp::kNeg, Type::kF32, m, f2u(0.0f)) == 0x80000000u);
  CHECK(run1(AluOp::kNeg, Type::kF64, m, d2u(1.5)) == d2u(-1.5));
  CHECK(run1(AluOp::kAbs, Type::kF64, m, d2u(-0.0)) == 0u);
  Mods f;
  f.ftz = true;
  CHECK(run1(AluOp::kAbs, Type::kF32, f, 0x80000001u) == 0u);
  CHECK(u2f(run1(AluOp::kCopysign, Type::kF32, m, f2u(-1.0f), f2u(3.0f))) == -3.0f);
  CHECK(u2d(run1(AluOp::kCopysign, Type::kF64, m, d2u(1.0), d2u(-3.0))) == 3.0);
  for (float v : f32_values(50)) {
    const int cls = std::fpclassify(v);
    CHECK(run1(AluOp::kTestpFinite, Type::kF32, m, f2u(v)) == (std::isfinite(v) ? 1u : 0u));
    CHECK(run1(AluOp::kTestpInfinite, Type::kF32, m, f2u(v)) == (cls == FP_INFINITE ? 1u : 0u));
    CHECK(run1(AluOp::kTestpNumber, Type::kF32, m, f2u(v)) == (cls != FP_NAN ? 1u : 0u));
    CHECK(run1(AluOp::kTestpNotanumber, Type::kF32, m, f2u(v)) == (cls == FP_NAN ? 1u : 0u));
    CHECK(run1(AluOp::kTestpNormal, Type::kF32, m, f2u(v)) == (cls == FP_NORMAL ? 1u : 0u));
    CHECK(run1(AluOp::kTestpSubnormal, Type::kF32, m, f2u(v)) == (cls == FP_SUBNORMAL ? 1u : 0u));
  }
}

TEST_CASE("unsupported float combinations are reported", "[alu][float]") {
  Mods m;
  m.round = Round::kRz;
  CHECK_FALSE(alu_supported(AluOp::kEx2, Type::kF32, m));
  CHECK_FALSE(alu_supported(AluOp::kSin, Type::kF64, Mods{}));
  Mods s;
  s.sat = true;
  CHECK_FALSE(alu_supported(AluOp::kAdd, Type::kF64, s));
  CHECK(alu_supported(AluOp::kAdd, Type::kF32, s));
  Mods rcp;
  CHECK_FALSE(alu_supported(AluOp::kRcp, Type::kF32, rcp));  // needs .approx or a rounding mode
  rcp.approx = true;
  CHECK(alu_supported(AluOp::kRcp, Type::kF32, rcp));
  // An unsupported call writes all ones instead of a plausible value.
  CHECK(run1(AluOp::kSin, Type::kF64, Mods{}, d2u(1.0)) == ~uint64_t{0});
}

#if defined(__x86_64__)
#include <xmmintrin.h>
TEST_CASE("results do not depend on the host's rounding mode or FTZ/DAZ state", "[alu][float]") {
  const unsigned saved = _mm_getcsr();
  // Upward rounding plus flush-to-zero and denormals-are-zero, as -ffast-math startup code sets.
  _mm_setcsr((saved & ~0x6000u) | 0x4000u | 0x8000u | 0x0040u);
  const uint64_t sub = run1(AluOp::kAdd, Type::kF32, Mods{}, 0x00000001u, 0x00000002u);
  const uint64_t third = run1(AluOp::kDiv, Type::kF32, Mods{}, f2u(1.0f), f2u(3.0f));
  const unsigned after = _mm_getcsr();
  _mm_setcsr(saved);
  CHECK(sub == 0x00000003u);
  CHECK(u2f(third) == 1.0f / 3.0f);     // nearest, not upward
  CHECK((after & 0xe040u) == 0xc040u);  // the caller's control bits came back
}
#endif

TEST_CASE("f64 approximate reciprocal flushes with .ftz", "[alu][float]") {
  Mods m;
  m.approx = true;
  m.ftz = true;
  CHECK(u2d(run1(AluOp::kRcp, Type::kF64, m, d2u(1e-310))) == INFINITY);
  CHECK(u2d(run1(AluOp::kRcp, Type::kF64, m, d2u(4.0))) == 0.25);
  CHECK(u2d(run1(AluOp::kRsqrt, Type::kF64, m, d2u(4.0))) == 0.5);
  Mods plain;
  plain.approx = true;
  CHECK_FALSE(alu_supported(AluOp::kEx2, Type::kF64, plain));
}

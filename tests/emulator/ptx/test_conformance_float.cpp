// Conformance of f32/f64/f16/bf16 arithmetic through the whole engine (conformance.h): NaN, ±Inf,
// ±0, subnormals (with and without .ftz), overflow and every rounding mode, against the host FPU
// run in the requested rounding mode (this file is compiled with -frounding-math), and the
// approximate instructions against the error bounds docs/emulator.md states.
#include "conformance.h"

using namespace cusnap::emu::ptx::conformance;

namespace {

// One f32 operation on the host, in `mode`, with the ftz/sat post-processing of the GPU.
using Op32 = std::function<float(float, float, float)>;
using Op64 = std::function<double(double, double, double)>;

// `scaled`: the same operation with its result scaled by 2^24 (operands scaled so that it is
// exact). .ftz flushes a result that is tiny after rounding with an unbounded exponent, as an H200
// does (silicon/h200-sm90.lanes: min_normal * (1 - 2^-46) rounds to min_normal and is kept,
// min_normal * (1 - 2^-24) is flushed although the subnormal grid would round it up to
// min_normal); the scaled result, computed in the normal range, is that unbounded rounding.
uint64_t ref32(const Op32& op, int mode, bool ftz, bool sat, uint64_t a, uint64_t b, uint64_t c,
               const Op32& scaled = nullptr) {
  if (ftz) a = flush32(a), b = flush32(b), c = flush32(c);
  volatile float x = as_f32(a), y = as_f32(b), z = as_f32(c);
  float r = under_rounding(mode, [&] {
    volatile float v = op(x, y, z);
    return static_cast<float>(v);
  });
  if (ftz && scaled && std::fabs(r) == std::numeric_limits<float>::min()) {
    const float s = under_rounding(mode, [&] {
      volatile float v = scaled(x, y, z);
      return static_cast<float>(v);
    });
    if (std::fabs(s) < std::ldexp(std::numeric_limits<float>::min(), 24))
      r = std::copysign(0.0f, r);
  }
  return finish32(r, ftz, sat);
}

uint64_t ref64(const Op64& op, int mode, uint64_t a, uint64_t b, uint64_t c) {
  volatile double x = as_f64(a), y = as_f64(b), z = as_f64(c);
  double r = under_rounding(mode, [&] {
    volatile double v = op(x, y, z);
    return static_cast<double>(v);
  });
  return bits_of(r);
}

void check32(const std::string& instruction, int nsrc, const Inputs& in, const Op32& op, int mode,
             bool ftz, bool sat, const Op32& scaled = nullptr) {
  Shape s{32, 32, nsrc > 1 ? 32 : 0, nsrc > 2 ? 32 : 0};
  check_exact(instruction, s, in,
              [&](auto a, auto b, auto c) { return ref32(op, mode, ftz, sat, a, b, c, scaled); });
}

void check64(const std::string& instruction, int nsrc, const Inputs& in, const Op64& op, int mode) {
  Shape s{64, 64, nsrc > 1 ? 64 : 0, nsrc > 2 ? 64 : 0};
  check_lanes(instruction, s, in, [&](const Triple& t, uint64_t d, uint64_t) {
    return same64(d, ref64(op, mode, t[0], t[1], t[2]));
  });
}

std::string operands(int nsrc) {
  return nsrc == 1 ? " %d, %a" : nsrc == 2 ? " %d, %a, %b" : " %d, %a, %b, %c";
}

Inputs f32_pairs() {
  auto e = f32_edges();
  Inputs in = cross(e, e);
  add_random(in, 256, 32, e, 32);
  // Products just below the smallest normal that round to it: tininess before or after rounding
  // (what .ftz flushes).
  for (uint64_t sign : {0u, 0x80000000u}) {
    in.push_back({0x3f7ffffe, 0x00800001 | sign, 0});
    in.push_back({0x00800001 | sign, 0x3f7ffffe, 0});
  }
  return in;
}
Inputs f32_triples() {
  auto e = f32_edges();
  std::vector<uint64_t> few = {0x00000000, 0x80000000, 0x00000001, 0x3f800000, 0xbf800001,
                               0x7f800000, 0x7fc00000, 0x7f7fffff, 0x33800000, 0x80800000};
  Inputs in = cross3(e, few, e);
  add_random(in, 512, 33, e, 32);
  // Sums just below the smallest normal: min_normal * (1 - 2^-25) rounds to min_normal to
  // nearest, below it toward zero (tininess before or after rounding, for .ftz).
  for (uint64_t sign : {0u, 0x80000000u}) {
    in.push_back({0x00800000 | sign, 0xb3000000, 0x00800000 | sign});
    in.push_back({0x00800000 | sign, 0xb3400000, 0x00800000 | sign});
  }
  return in;
}
Inputs f64_pairs() {
  auto e = f64_edges();
  Inputs in = cross(e, e);
  add_random(in, 256, 64, e, 64);
  return in;
}
Inputs f64_triples() {
  auto e = f64_edges();
  std::vector<uint64_t> few = {0x0000000000000000, 0x8000000000000000, 0x0000000000000001,
                               0x3ff0000000000000, 0xbff0000000000001, 0x7ff0000000000000,
                               0x7ff8000000000000, 0x7fefffffffffffff, 0x3ca0000000000000};
  Inputs in = cross3(e, few, e);
  add_random(in, 512, 65, e, 64);
  return in;
}

struct Arith {
  const char* name;
  int nsrc;
  Op32 f32;
  Op64 f64;
  Op32 f32_scaled;  // the f32 result times 2^24 (ref32)
};
constexpr float kTwo24 = 16777216.0f;
// a * b * 2^24 with the scale on the smaller factor (the larger could overflow).
float scaled_product_fma(float a, float b, float c) {
  return std::fabs(a) <= std::fabs(b) ? std::fma(a * kTwo24, b, c * kTwo24)
                                      : std::fma(a, b * kTwo24, c * kTwo24);
}
const Arith kArith[] = {
    {"add", 2, [](float a, float b, float) { return a + b; },
     [](double a, double b, double) { return a + b; },
     [](float a, float b, float) { return a * kTwo24 + b * kTwo24; }},
    {"sub", 2, [](float a, float b, float) { return a - b; },
     [](double a, double b, double) { return a - b; },
     [](float a, float b, float) { return a * kTwo24 - b * kTwo24; }},
    {"mul", 2, [](float a, float b, float) { return a * b; },
     [](double a, double b, double) { return a * b; },
     [](float a, float b, float) { return scaled_product_fma(a, b, 0.0f); }},
    {"fma", 3, [](float a, float b, float c) { return std::fma(a, b, c); },
     [](double a, double b, double c) { return std::fma(a, b, c); }, scaled_product_fma},
    {"div", 2, [](float a, float b, float) { return a / b; },
     [](double a, double b, double) { return a / b; },
     [](float a, float b, float) { return (a * kTwo24) / b; }},
};

// sin/cos.approx.f32: absolute error 2^-20.9 in [-pi, pi], 2^-20.5 in [-100 pi, 100 pi] (PTX ISA);
// no bound beyond.
double sincos_bound(long double x) {
  constexpr long double kPi = 3.14159265358979323846L;
  const long double ax = std::fabs(x);
  return ax <= kPi ? std::exp2(-20.9) : ax <= 100.0L * kPi ? std::exp2(-20.5) : INFINITY;
}

// ulp distance between two finite floats of the same sign class (via their ordered bit patterns).
int64_t ulp_distance32(float x, float y) {
  auto key = [](float f) {
    int32_t i = std::bit_cast<int32_t>(f);
    return i < 0 ? static_cast<int64_t>(INT32_MIN) - i : static_cast<int64_t>(i);
  };
  return std::llabs(key(x) - key(y));
}

}  // namespace

TEST_CASE("conformance: f32 add/sub/mul/fma/div in every rounding mode, with .ftz and .sat",
          "[ptx][conformance][float]") {
  const Inputs pairs = f32_pairs(), triples = f32_triples();
  for (const Arith& op : kArith) {
    for (const Rounding& r : kRoundings) {
      for (int variant = 0; variant < 3; ++variant) {  // plain, .ftz, .ftz.sat
        const bool ftz = variant >= 1, sat = variant == 2;
        std::string name =
            std::string(op.name) + r.suffix + (ftz ? ".ftz" : "") + (sat ? ".sat" : "") + ".f32";
        if (std::string(op.name) == "div" && sat) continue;  // div has no .sat
        check32(name + operands(op.nsrc), op.nsrc, op.nsrc == 3 ? triples : pairs, op.f32, r.fenv,
                ftz, sat, op.f32_scaled);
      }
    }
  }
  // No rounding modifier: round to nearest (add/sub/mul); mad.f32 with a rounding mode is fma.
  check32("add.f32 %d, %a, %b", 2, pairs, kArith[0].f32, FE_TONEAREST, false, false);
  check32("mul.sat.f32 %d, %a, %b", 2, pairs, kArith[2].f32, FE_TONEAREST, false, true);
  check32("mad.rm.f32 %d, %a, %b, %c", 3, triples, kArith[3].f32, FE_DOWNWARD, false, false);
}

TEST_CASE("conformance: f64 add/sub/mul/fma/div in every rounding mode",
          "[ptx][conformance][float]") {
  const Inputs pairs = f64_pairs(), triples = f64_triples();
  for (const Arith& op : kArith)
    for (const Rounding& r : kRoundings)
      check64(std::string(op.name) + r.suffix + ".f64" + operands(op.nsrc), op.nsrc,
              op.nsrc == 3 ? triples : pairs, op.f64, r.fenv);
  check64("mad.rz.f64 %d, %a, %b, %c", 3, triples, kArith[3].f64, FE_TOWARDZERO);
}

TEST_CASE("conformance: sqrt and rcp with IEEE rounding, f32 (.ftz) and f64",
          "[ptx][conformance][float]") {
  Inputs one = each(f32_edges());
  add_random(one, 256, 7, f32_edges(), 32);
  Inputs one64 = each(f64_edges());
  add_random(one64, 256, 8, f64_edges(), 64);
  const Op32 sqrt32 = [](float a, float, float) { return std::sqrt(a); };
  const Op32 rcp32 = [](float a, float, float) { return 1.0f / a; };
  for (const Rounding& r : kRoundings) {
    for (bool ftz : {false, true}) {
      const std::string f = std::string(r.suffix) + (ftz ? ".ftz" : "") + ".f32 %d, %a";
      check32("sqrt" + f, 1, one, sqrt32, r.fenv, ftz, false);
      check32("rcp" + f, 1, one, rcp32, r.fenv, ftz, false);
    }
    check64(
        std::string("sqrt") + r.suffix + ".f64 %d, %a", 1, one64,
        [](double a, double, double) { return std::sqrt(a); }, r.fenv);
    check64(
        std::string("rcp") + r.suffix + ".f64 %d, %a", 1, one64,
        [](double a, double, double) { return 1.0 / a; }, r.fenv);
  }
}

TEST_CASE("conformance: div.full.f32 and div.approx.f32 within the ISA's 2 ulp",
          "[ptx][conformance][float]") {
  const Inputs pairs = f32_pairs();
  for (const char* name :
       {"div.full.f32", "div.approx.f32", "div.full.ftz.f32", "div.approx.ftz.f32"}) {
    const bool ftz = std::string(name).find("ftz") != std::string::npos;
    const bool approx = std::string(name).find("approx") != std::string::npos;
    check_lanes(
        std::string(name) + " %d, %a, %b", Shape{32, 32, 32}, pairs,
        [&](const Triple& t, uint64_t d, uint64_t) -> std::string {
          uint64_t a = t[0], b = t[1];
          if (ftz) a = flush32(a), b = flush32(b);
          const float x = as_f32(a), y = as_f32(b);
          const float exact = static_cast<float>(static_cast<double>(x) / static_cast<double>(y));
          const float got = as_f32(d);
          // The bounds hold for |b| in [2^-126, 2^126] (approx) and for normal quotients; outside,
          // only the special cases are pinned down.
          const double ay = std::fabs(static_cast<double>(y));
          const bool in_range = std::isfinite(exact) && std::fpclassify(exact) == FP_NORMAL &&
                                (!approx || (ay >= 0x1p-126 && ay <= 0x1p126));
          if (std::isnan(exact)) return is_nan32(d) ? "" : "expected NaN";
          if (!in_range) return "";
          if (std::signbit(got) != std::signbit(exact) && got != 0.0f)
            return "wrong sign, expected ~" + std::to_string(exact);
          return ulp_distance32(got, exact) <= 2 ? ""
                                                 : "more than 2 ulp from " + std::to_string(exact);
        });
  }
}

TEST_CASE("conformance: f32/f64 min/max/abs/neg with NaN, ±0, subnormals",
          "[ptx][conformance][float]") {
  const Inputs pairs = f32_pairs();
  // min/max: one NaN -> the other operand; two NaNs -> canonical NaN; -0 < +0. .NaN: any NaN
  // -> canonical NaN. .ftz flushes subnormal inputs first.
  auto minmax32 = [](bool is_max, bool nan_mode, bool ftz) {
    return [=](uint64_t a, uint64_t b, uint64_t) -> uint64_t {
      if (ftz) a = flush32(a), b = flush32(b);
      const bool na = is_nan32(a), nb = is_nan32(b);
      if ((na && nb) || (nan_mode && (na || nb))) return kCanonicalNan32;
      if (na) return b;
      if (nb) return a;
      const float x = as_f32(a), y = as_f32(b);
      if (x == y) {  // ±0: -0 is the smaller
        const bool a_neg = (a >> 31) & 1;
        return is_max ? (a_neg ? b : a) : (a_neg ? a : b);
      }
      return (is_max ? x > y : x < y) ? a : b;
    };
  };
  for (bool is_max : {false, true}) {
    const std::string op = is_max ? "max" : "min";
    check_exact(op + ".f32 %d, %a, %b", Shape{32, 32, 32}, pairs, minmax32(is_max, false, false));
    check_exact(op + ".ftz.f32 %d, %a, %b", Shape{32, 32, 32}, pairs,
                minmax32(is_max, false, true));
    check_exact(op + ".NaN.f32 %d, %a, %b", Shape{32, 32, 32}, pairs,
                minmax32(is_max, true, false));
    check_lanes(op + ".f64 %d, %a, %b", Shape{64, 64, 64}, f64_pairs(),
                [&](const Triple& t, uint64_t d, uint64_t) {
                  const double x = as_f64(t[0]), y = as_f64(t[1]);
                  const bool nx = std::isnan(x), ny = std::isnan(y);
                  if (nx && ny) return same64(d, 0x7ff8000000000000);
                  if (nx) return same64(d, t[1]);
                  if (ny) return same64(d, t[0]);
                  uint64_t e;
                  if (x == y)
                    e = is_max ? ((t[0] >> 63) ? t[1] : t[0]) : ((t[0] >> 63) ? t[0] : t[1]);
                  else
                    e = (is_max ? x > y : x < y) ? t[0] : t[1];
                  return same64(d, e);
                });
  }
  Inputs one = each(f32_edges());
  // f32 abs/neg canonicalize NaN (the GPU computes them as an FADD); .ftz flushes.
  check_exact("abs.f32 %d, %a", Shape{32, 32}, one, [](auto a, auto, auto) -> uint64_t {
    return is_nan32(a) ? kCanonicalNan32 : a & 0x7fffffff;
  });
  check_exact("neg.f32 %d, %a", Shape{32, 32}, one, [](auto a, auto, auto) -> uint64_t {
    return is_nan32(a) ? kCanonicalNan32 : a ^ 0x80000000;
  });
  check_exact("abs.ftz.f32 %d, %a", Shape{32, 32}, one, [](auto a, auto, auto) -> uint64_t {
    return is_nan32(a) ? kCanonicalNan32 : flush32(a) & 0x7fffffff;
  });
  check_exact("neg.ftz.f32 %d, %a", Shape{32, 32}, one, [](auto a, auto, auto) -> uint64_t {
    return is_nan32(a) ? kCanonicalNan32 : flush32(a) ^ 0x80000000;
  });
  // f64 abs/neg are sign-bit operations, except on NaN: an H200 quiets it and leaves the sign
  // alone (silicon/h200-sm90.lanes).
  auto f64_nan = [](uint64_t a) {
    return (a & 0x7ff0000000000000) == 0x7ff0000000000000 && (a << 12) != 0;
  };
  check_exact("abs.f64 %d, %a", Shape{64, 64}, each(f64_edges()), [&](auto a, auto, auto) {
    return f64_nan(a) ? a | (1ull << 51) : a & ~(1ull << 63);
  });
  check_exact("neg.f64 %d, %a", Shape{64, 64}, each(f64_edges()),
              [&](auto a, auto, auto) { return f64_nan(a) ? a | (1ull << 51) : a ^ (1ull << 63); });
}

TEST_CASE("conformance: setp on floats, ordered and unordered, with .ftz",
          "[ptx][conformance][float]") {
  struct Cmp {
    const char* name;
    bool unordered_result;  // result when either operand is NaN
    std::function<bool(double, double)> f;
  };
  const Cmp cmps[] = {
      {"eq", false, [](double x, double y) { return x == y; }},
      {"ne", false, [](double x, double y) { return x != y; }},
      {"lt", false, [](double x, double y) { return x < y; }},
      {"le", false, [](double x, double y) { return x <= y; }},
      {"gt", false, [](double x, double y) { return x > y; }},
      {"ge", false, [](double x, double y) { return x >= y; }},
      {"equ", true, [](double x, double y) { return x == y; }},
      {"neu", true, [](double x, double y) { return x != y; }},
      {"ltu", true, [](double x, double y) { return x < y; }},
      {"leu", true, [](double x, double y) { return x <= y; }},
      {"gtu", true, [](double x, double y) { return x > y; }},
      {"geu", true, [](double x, double y) { return x >= y; }},
      {"num", false, [](double, double) { return true; }},
      {"nan", true, [](double, double) { return false; }},
  };
  const Inputs p32 = f32_pairs(), p64 = f64_pairs();
  for (const Cmp& c : cmps) {
    for (bool ftz : {false, true}) {
      check_exact(std::string("setp.") + c.name + (ftz ? ".ftz" : "") + ".f32 %d, %a, %b",
                  Shape{1, 32, 32}, p32, [&](auto a, auto b, auto) -> uint64_t {
                    if (ftz) a = flush32(a), b = flush32(b);
                    const double x = as_f32(a), y = as_f32(b);
                    if (std::isnan(x) || std::isnan(y)) return c.unordered_result;
                    return c.f(x, y);
                  });
    }
    check_exact(std::string("setp.") + c.name + ".f64 %d, %a, %b", Shape{1, 64, 64}, p64,
                [&](auto a, auto b, auto) -> uint64_t {
                  const double x = as_f64(a), y = as_f64(b);
                  if (std::isnan(x) || std::isnan(y)) return c.unordered_result;
                  return c.f(x, y);
                });
  }
}

TEST_CASE("conformance: f16 and bf16 add/sub/mul round once to nearest even",
          "[ptx][conformance][half]") {
  // f16/bf16 sums and products of two operands are exact in double, so one conversion of the
  // exact double to the half format is the correctly rounded reference.
  std::vector<uint64_t> h = {0x0000, 0x8000, 0x0001, 0x03ff, 0x0400, 0x3c00, 0x3c01, 0x3bff,
                             0x3e00, 0x4000, 0x7bff, 0x7bfe, 0x7c00, 0xfc00, 0x7e00, 0x1400,
                             0x5640, 0x0200, 0x8001, 0xbc00, 0xfbff, 0x2e66, 0x3555, 0x6bff};
  Inputs in = cross(h, h);
  add_random(in, 256, 16, h, 16);
  auto half_value = [](uint64_t v) {
    return static_cast<double>(std::bit_cast<_Float16>(static_cast<uint16_t>(v)));
  };
  auto to_half = [](double x) -> uint64_t {
    if (std::isnan(x)) return 0x7fff;  // canonical half NaN
    return std::bit_cast<uint16_t>(static_cast<_Float16>(x));
  };
  auto bf_value = [](uint64_t v) {
    return static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(v & 0xffff) << 16));
  };
  auto to_bf = [](double x) -> uint64_t {
    if (std::isnan(x)) return 0x7fff;
    // Round the exact double to bf16 (8 significant bits, exponent as f32, subnormals below
    // 2^-126 in steps of 2^-133), nearest even, by scaling to an integer: one rounding only.
    if (x == 0.0 || std::isinf(x)) return std::bit_cast<uint32_t>(static_cast<float>(x)) >> 16;
    const int e = std::max(std::ilogb(x), -126);
    const double step = std::ldexp(1.0, e - 7);
    const double r = std::nearbyint(x / step) * step;  // the host is in round-to-nearest-even here
    if (std::fabs(r) >= 0x1p128) return x < 0 ? 0xff80 : 0x7f80;
    return std::bit_cast<uint32_t>(static_cast<float>(r)) >> 16;  // exact: r has <= 8 bits
  };
  struct HalfOp {
    const char* name;
    std::function<double(double, double)> f;
  };
  const HalfOp ops[] = {{"add", [](double a, double b) { return a + b; }},
                        {"sub", [](double a, double b) { return a - b; }},
                        {"mul", [](double a, double b) { return a * b; }}};
  for (const HalfOp& op : ops) {
    check_exact(std::string(op.name) + ".rn.f16 %d, %a, %b", Shape{16, 16, 16}, in,
                [&](auto a, auto b, auto) { return to_half(op.f(half_value(a), half_value(b))); });
    check_exact(std::string(op.name) + ".f16 %d, %a, %b", Shape{16, 16, 16}, in,
                [&](auto a, auto b, auto) { return to_half(op.f(half_value(a), half_value(b))); });
    // .ftz flushes subnormal half inputs and results to sign-preserving zero - a result is
    // subnormal when it is tiny after rounding with an unbounded exponent (11 significant bits
    // at any scale; an H200 flushes 2^-14 * (1 - 2^-11) though the subnormal grid rounds it up
    // to 2^-14: silicon/h200-sm90.lanes).
    check_exact(std::string(op.name) + ".ftz.f16 %d, %a, %b", Shape{16, 16, 16}, in,
                [&](auto a, auto b, auto) -> uint64_t {
                  auto fl = [](uint64_t v) { return (v & 0x7c00) == 0 ? (v & 0x8000) : v; };
                  const double x = op.f(half_value(fl(a)), half_value(fl(b)));
                  uint64_t r = to_half(x);
                  if (x != 0 && std::isfinite(x)) {
                    const double step = std::ldexp(1.0, std::ilogb(x) - 10);
                    if (std::fabs(std::nearbyint(x / step) * step) < 0x1p-14) r &= 0x8000;
                  }
                  return fl(r);
                });
    check_exact(std::string(op.name) + ".rn.bf16 %d, %a, %b", Shape{16, 16, 16}, in,
                [&](auto a, auto b, auto) { return to_bf(op.f(bf_value(a), bf_value(b))); });
  }
}

// A mul and an add without rounding modifiers may be contracted into one fma by the code
// generator (PTX ISA: "mul/add ... may be optimized aggressively"); the emulator executes each
// instruction as written, rounding twice. c = -(a * b rounded) makes the two readings differ in
// almost every lane (fused: the product's rounding error; unfused: 0), so through NVIDIA's driver
// this case tells, per type, whether ptxas fused (an H200 fused mul.f16x2 + add.f16x2:
// docs/hardware.md).
TEST_CASE("conformance: mul then add without rounding modifiers rounds twice (ptxas may fuse)",
          "[ptx][conformance][float]") {
  cusnap::emu::ptx::test::Rng rng(77);
  Inputs f32_in, f64_in, f16_in;
  for (int i = 0; i < 512; ++i) {
    const float a = 1.0f + rng.uniform(), b = 1.0f + rng.uniform();
    f32_in.push_back({bits_of(a), bits_of(b), bits_of(-(a * b))});
    const double x = 1.0 + rng.uniform() / 3.0, y = 1.0 + rng.uniform() / 7.0;
    f64_in.push_back({bits_of(x), bits_of(y), bits_of(-(x * y))});
    const _Float16 h = static_cast<_Float16>(1.0f + rng.uniform()),
                   g = static_cast<_Float16>(1.0f + rng.uniform());
    const _Float16 p = static_cast<_Float16>(static_cast<float>(h) * static_cast<float>(g));
    f16_in.push_back({std::bit_cast<uint16_t>(h), std::bit_cast<uint16_t>(g),
                      std::bit_cast<uint16_t>(static_cast<_Float16>(-p))});
  }
  check_exact("{ .reg .f32 t; mul.f32 t, %a, %b; add.f32 %d, t, %c; }", Shape{32, 32, 32, 32},
              f32_in, [](auto a, auto b, auto c) -> uint64_t {
                const float p = as_f32(a) * as_f32(b);
                return bits_of(p + as_f32(c));
              });
  check_exact("{ .reg .f64 t; mul.f64 t, %a, %b; add.f64 %d, t, %c; }", Shape{64, 64, 64, 64},
              f64_in, [](auto a, auto b, auto c) -> uint64_t {
                const double p = as_f64(a) * as_f64(b);
                return bits_of(p + as_f64(c));
              });
  check_exact("{ .reg .b16 t; mul.f16 t, %a, %b; add.f16 %d, t, %c; }", Shape{16, 16, 16, 16},
              f16_in, [](auto a, auto b, auto c) -> uint64_t {
                auto half = [](uint64_t v) {
                  return static_cast<float>(std::bit_cast<_Float16>(static_cast<uint16_t>(v)));
                };
                const _Float16 p = static_cast<_Float16>(half(a) * half(b));
                const _Float16 d = static_cast<_Float16>(static_cast<float>(p) + half(c));
                return std::bit_cast<uint16_t>(d);
              });
}

TEST_CASE("conformance: approximate f32 functions within the documented bounds",
          "[ptx][conformance][float]") {
  // Bounds from the PTX ISA as docs/emulator.md (emulator/ptx/ALU.md) states them, against the
  // exact function evaluated in long double. Special values are exact.
  std::vector<uint64_t> xs = f32_edges();
  cusnap::emu::ptx::test::Rng rng(2024);
  for (int i = 0; i < 600; ++i) xs.push_back(bits_of((rng.uniform() - 0.5f) * 300.0f));
  for (int i = 0; i < 200; ++i)
    xs.push_back(
        bits_of(std::ldexp(0.5f + rng.uniform(), static_cast<int>(rng.next() % 250) - 125)));
  const Inputs in = each(xs);
  struct Approx {
    const char* name;
    std::function<long double(long double)> f;
    std::function<double(long double x, long double exact)> bound;  // allowed absolute error
  };
  const Approx fns[] = {
      {"ex2", [](long double x) { return std::exp2(x); },
       [](long double, long double e) {
         return std::max<double>(std::fabs(e) * std::exp2(-22.5), 0x1p-149);
       }},
      {"lg2", [](long double x) { return std::log2(x); },
       [](long double x, long double e) {
         return x > 0.5L && x < 2.0L ? std::exp2(-22.6)
                                     : static_cast<double>(std::fabs(e)) * std::exp2(-22.0);
       }},
      {"rsqrt", [](long double x) { return 1.0L / std::sqrt(x); },
       [](long double, long double e) {
         return static_cast<double>(std::fabs(e)) * std::exp2(-22.9);
       }},
      {"sin", [](long double x) { return std::sin(x); },
       [](long double x, long double) { return sincos_bound(x); }},
      {"cos", [](long double x) { return std::cos(x); },
       [](long double x, long double) { return sincos_bound(x); }},
  };
  for (const Approx& fn : fns) {
    for (bool ftz : {false, true}) {
      const std::string name =
          std::string(fn.name) + ".approx" + (ftz ? ".ftz" : "") + ".f32 %d, %a";
      check_lanes(
          name, Shape{32, 32}, in, [&](const Triple& t, uint64_t d, uint64_t) -> std::string {
            const uint64_t a = ftz ? flush32(t[0]) : t[0];
            const long double x = as_f32(a);
            const long double exact = fn.f(x);
            const float got = as_f32(d);
            if (std::isnan(exact)) return is_nan32(d) ? "" : "expected NaN";
            if (std::isinf(exact))
              return std::isinf(got) &&
                             std::signbit(got) == std::signbit(static_cast<double>(exact))
                         ? ""
                         : "expected " + std::to_string(static_cast<double>(exact));
            if (std::fabs(exact) > 0x1.fffffep127L)
              return std::isinf(got) || std::fabs(got) >= 0x1.fffffcp127f ? ""
                                                                          : "expected overflow";
            if (ftz && std::fabs(exact) < 0x1p-126L)
              return (got == 0.0f || std::fabs(got) <= 0x1p-126f) ? ""
                                                                  : "expected a flushed result";
            const double err =
                static_cast<double>(std::fabs(static_cast<long double>(got) - exact));
            const double allowed = fn.bound(x, exact);
            if (err <= allowed) return "";
            std::ostringstream s;
            s << "error " << err << " > " << allowed << " (exact " << static_cast<double>(exact)
              << ")";
            return s.str();
          });
    }
  }
}

// Conformance of cvt through the whole engine (conformance.h): float<->int in every integer
// rounding with saturation and NaN -> 0, int->float in every IEEE rounding, f32<->f64 (.ftz,
// .sat), rounding to integral values, f16/bf16 in every legal rounding, and integer narrowing with
// and without .sat. References are host conversions in the requested fenv mode or explicit
// floor/ceil/trunc/nearest-even arithmetic.
#include "conformance.h"

using namespace cusnap::emu::ptx::conformance;

namespace {

struct IntDst {
  const char* name;
  int bits;
  bool is_signed;
  long double lo() const { return is_signed ? -std::ldexp(1.0L, bits - 1) : 0.0L; }
  long double hi() const {
    return is_signed ? std::ldexp(1.0L, bits - 1) - 1 : std::ldexp(1.0L, bits) - 1;
  }
};
constexpr IntDst kIntDsts[] = {{"s16", 16, true},  {"u16", 16, false}, {"s32", 32, true},
                               {"u32", 32, false}, {"s64", 64, true},  {"u64", 64, false}};

struct IntRounding {
  const char* suffix;
  long double (*f)(long double);
};
long double nearest_even(long double x) { return std::isinf(x) ? x : x - std::remainder(x, 1.0L); }
constexpr IntRounding kIntRoundings[] = {
    {".rni", nearest_even},
    {".rzi", [](long double x) { return std::trunc(x); }},
    {".rmi", [](long double x) { return std::floor(x); }},
    {".rpi", [](long double x) { return std::ceil(x); }},
};

// Integer of the destination type as its bit pattern: NaN -> 0, out of range -> the nearest
// bound (float->int conversions saturate in PTX).
// NaN: 0 as the ISA says, except where an H200 gives the bit pattern 1 << (n - 1) (signed and
// unsigned alike; silicon/h200-sm90.lanes): from f64 into every width, from f32 into 64 bits.
uint64_t nan_to_int(const IntDst& d, int src_bits) {
  return src_bits == 64 || d.bits == 64 ? uint64_t{1} << (d.bits - 1) : 0;
}

uint64_t to_int(long double x, const IntDst& d, long double (*round)(long double),
                int src_bits = 32) {
  if (std::isnan(x)) return nan_to_int(d, src_bits);
  long double r = round(x);
  r = std::min(std::max(r, d.lo()), d.hi());
  if (d.is_signed) return static_cast<uint64_t>(static_cast<int64_t>(r)) & width_mask(d.bits);
  return static_cast<uint64_t>(r);
}

// Value of the source bit pattern for an integer source type.
long double int_value(uint64_t v, int bits, bool is_signed) {
  v &= width_mask(bits);
  if (!is_signed) return static_cast<long double>(v);
  if (bits < 64 && ((v >> (bits - 1)) & 1))
    return static_cast<long double>(static_cast<int64_t>(v) - (int64_t{1} << bits));
  return static_cast<long double>(static_cast<int64_t>(v));
}

// The correctly rounded f16 of an exactly representable double, by scaling to an integer.
uint64_t to_f16(double x, const char* mode) {
  const uint64_t sign = std::signbit(x) ? 0x8000 : 0;
  if (std::isnan(x)) return 0x7fff;  // canonical
  if (std::isinf(x)) return sign | 0x7c00;
  if (x == 0.0) return sign;
  const int e = std::max(std::ilogb(x), -14);
  const double step = std::ldexp(1.0, e - 10);
  const double q = x / step;
  const std::string m = mode;
  const double r = m == ".rz"   ? std::trunc(q)
                   : m == ".rm" ? std::floor(q)
                   : m == ".rp" ? std::ceil(q)
                                : q - std::remainder(q, 1.0);
  const double v = r * step;
  if (std::fabs(v) > 65504.0) {  // overflow: infinity unless the mode rounds toward zero
    const bool to_inf = m == ".rn" || (m == ".rp" && !sign) || (m == ".rm" && sign);
    return sign | (to_inf ? 0x7c00 : 0x7bff);
  }
  if (v == 0.0) return sign;
  return std::bit_cast<uint16_t>(static_cast<_Float16>(v));  // exact
}

// Likewise bf16 (8 significant bits, f32's exponent range); .rn and .rz only.
uint64_t to_bf16(double x, bool rz) {
  const uint64_t sign = std::signbit(x) ? 0x8000 : 0;
  if (std::isnan(x)) return 0x7fff;
  if (std::isinf(x)) return sign | 0x7f80;
  if (x == 0.0) return sign;
  const int e = std::max(std::ilogb(x), -126);
  const double step = std::ldexp(1.0, e - 7);
  const double q = x / step;
  const double v = (rz ? std::trunc(q) : q - std::remainder(q, 1.0)) * step;
  if (std::fabs(v) >= 0x1p128) return sign | (rz ? 0x7f7f : 0x7f80);
  if (v == 0.0) return sign;
  return std::bit_cast<uint32_t>(static_cast<float>(v)) >> 16;
}

std::vector<uint64_t> f32_to_int_inputs() {
  std::vector<uint64_t> v = f32_edges();
  for (float f : {0.5f,           1.5f,          2.5f,          -0.5f,         -1.5f,
                  -2.5f,          0.49999997f,   2147483520.0f, 2147483648.0f, -2147483648.0f,
                  -2147483904.0f, 4294967040.0f, 4294967296.0f, 32767.5f,      32768.0f,
                  -32768.5f,      65535.5f,      65536.0f,      9.2233715e18f, 9.223372e18f,
                  -9.223372e18f,  1.8446743e19f, 1.8446744e19f, -0.75f,        3.75f})
    v.push_back(bits_of(f));
  return v;
}
std::vector<uint64_t> f64_to_int_inputs() {
  std::vector<uint64_t> v = f64_edges();
  for (double d : {0.5,
                   1.5,
                   2.5,
                   -0.5,
                   -1.5,
                   -2.5,
                   0.49999999999999994,
                   2147483647.5,
                   2147483647.0,
                   -2147483648.5,
                   -2147483649.0,
                   4294967295.5,
                   4294967296.0,
                   9223372036854774784.0,
                   9223372036854775808.0,
                   -9223372036854775808.0,
                   -9223372036854777856.0,
                   18446744073709549568.0,
                   18446744073709551616.0,
                   32767.5,
                   -32768.5,
                   65535.5,
                   -0.75,
                   3.75})
    v.push_back(bits_of(d));
  return v;
}

}  // namespace

TEST_CASE("conformance: cvt float -> int in every integer rounding, saturating, NaN as silicon",
          "[ptx][conformance][cvt]") {
  const Inputs in32 = each(f32_to_int_inputs()), in64 = each(f64_to_int_inputs());
  for (const IntDst& d : kIntDsts) {
    for (const IntRounding& r : kIntRoundings) {
      INFO(d.name << r.suffix);
      const std::string dst = std::string(".") + d.name;
      check_exact(std::string("cvt") + r.suffix + dst + ".f32 %d, %a", Shape{d.bits, 32}, in32,
                  [&](auto a, auto, auto) { return to_int(as_f32(a), d, r.f); });
      // .ftz flushes a subnormal source first, which matters for .rmi/.rpi of tiny values.
      check_exact(std::string("cvt") + r.suffix + ".ftz" + dst + ".f32 %d, %a", Shape{d.bits, 32},
                  in32, [&](auto a, auto, auto) { return to_int(as_f32(flush32(a)), d, r.f); });
      check_exact(std::string("cvt") + r.suffix + dst + ".f64 %d, %a", Shape{d.bits, 64}, in64,
                  [&](auto a, auto, auto) { return to_int(as_f64(a), d, r.f, 64); });
    }
    // .sat is the same clamp (float -> int always saturates).
    check_exact(std::string("cvt.rzi.sat.") + d.name + ".f32 %d, %a", Shape{d.bits, 32}, in32,
                [&](auto a, auto, auto) { return to_int(as_f32(a), d, kIntRoundings[1].f); });
  }
}

TEST_CASE("conformance: cvt int -> float in every IEEE rounding", "[ptx][conformance][cvt]") {
  struct Src {
    const char* name;
    int bits;
    bool is_signed;
  };
  const Src srcs[] = {{"s16", 16, true},  {"u16", 16, false}, {"s32", 32, true},
                      {"u32", 32, false}, {"s64", 64, true},  {"u64", 64, false}};
  for (const Src& s : srcs) {
    std::vector<uint64_t> vals = s.bits == 16   ? int16_edges()
                                 : s.bits == 32 ? int32_edges()
                                                : int64_edges();
    // Values just above and below float/double rounding boundaries.
    for (uint64_t v :
         {0x1000001ull, 0x1000003ull, 0xffffff7full, 0xffffff80ull, 0xffffff81ull, 0x7fffffbfull,
          0x20000000000001ull, 0x7ffffffffffffdffull, 0xfffffffffffffbffull, 0xfffffffffffffc00ull,
          0x8000008000000000ull, 0x8000008000000001ull})
      vals.push_back(v & width_mask(s.bits));
    Inputs in = each(vals);
    add_random(in, 128, s.bits + s.is_signed, vals, s.bits);
    for (const Rounding& r : kRoundings) {
      INFO(s.name << r.suffix);
      check_exact(std::string("cvt") + r.suffix + ".f32." + s.name + " %d, %a", Shape{32, s.bits},
                  in, [&](auto a, auto, auto) -> uint64_t {
                    a &= width_mask(s.bits);
                    return under_rounding(r.fenv, [&] {
                      volatile int64_t sv = static_cast<int64_t>(int_value(a, s.bits, true));
                      volatile uint64_t uv = a;
                      volatile float f =
                          s.is_signed ? static_cast<float>(sv) : static_cast<float>(uv);
                      return bits_of(static_cast<float>(f));
                    });
                  });
      check_exact(std::string("cvt") + r.suffix + ".f64." + s.name + " %d, %a", Shape{64, s.bits},
                  in, [&](auto a, auto, auto) -> uint64_t {
                    a &= width_mask(s.bits);
                    return under_rounding(r.fenv, [&] {
                      volatile int64_t sv = static_cast<int64_t>(int_value(a, s.bits, true));
                      volatile uint64_t uv = a;
                      volatile double f =
                          s.is_signed ? static_cast<double>(sv) : static_cast<double>(uv);
                      return bits_of(static_cast<double>(f));
                    });
                  });
    }
  }
}

TEST_CASE("conformance: cvt f32 <-> f64 (.ftz, .sat, every rounding) and to integral values",
          "[ptx][conformance][cvt]") {
  Inputs in32 = each(f32_edges());
  add_random(in32, 128, 3, f32_edges(), 32);
  Inputs in64 = each(f64_edges());
  for (double d :
       {0x1.fffffefffffffp127, 0x1.ffffffp127, 0x1p-149, 0x1.8p-149, 0x1p-150, 0x1.000001p-150,
        0x1p-127, 1.0 + 0x1p-24, 1.0 + 0x1p-24 + 0x1p-52, 1.0 + 3 * 0x1p-24, 1e300, -1e-300})
    in64.push_back({bits_of(d), 0, 0});
  add_random(in64, 128, 4, f64_edges(), 64);
  // f32 -> f64 is exact; .ftz flushes a subnormal source. NaN stays NaN.
  for (bool ftz : {false, true}) {
    check_lanes(std::string("cvt") + (ftz ? ".ftz" : "") + ".f64.f32 %d, %a", Shape{64, 32}, in32,
                [&](const Triple& t, uint64_t d, uint64_t) {
                  return same64(d,
                                bits_of(static_cast<double>(as_f32(ftz ? flush32(t[0]) : t[0]))));
                });
  }
  // f64 -> f32 in each rounding mode; overflow to infinity or the largest finite per mode.
  for (const Rounding& r : kRoundings) {
    for (int variant = 0; variant < 3; ++variant) {
      const bool ftz = variant >= 1, sat = variant == 2;
      check_exact(std::string("cvt") + r.suffix + (ftz ? ".ftz" : "") + (sat ? ".sat" : "") +
                      ".f32.f64 %d, %a",
                  Shape{32, 64}, in64, [&](auto a, auto, auto) -> uint64_t {
                    // NaN (without .sat): sign, quiet bit and the payload's top 22 bits, as an
                    // H200 converts it (silicon/h200-sm90.lanes).
                    if (!sat && std::isnan(as_f64(a)))
                      return (a >> 63) << 31 | 0x7fc00000u | ((a >> 29) & 0x3fffff);
                    volatile double x = as_f64(a);
                    float f = under_rounding(r.fenv, [&] {
                      volatile float v = static_cast<float>(x);
                      return static_cast<float>(v);
                    });
                    return finish32(f, ftz, sat);
                  });
    }
  }
  // Rounding to integral values in the same format.
  for (const IntRounding& r : kIntRoundings) {
    for (bool ftz : {false, true}) {
      check_exact(
          std::string("cvt") + r.suffix + (ftz ? ".ftz" : "") + ".f32.f32 %d, %a", Shape{32, 32},
          in32, [&](auto a, auto, auto) -> uint64_t {
            const float x = as_f32(ftz ? flush32(a) : a);
            if (std::isnan(x)) return kCanonicalNan32;
            const float v = static_cast<float>(r.f(x));
            return bits_of(std::copysign(v, x));  // integral results keep the sign (-0.3 -> -0)
          });
    }
    check_lanes(std::string("cvt") + r.suffix + ".f64.f64 %d, %a", Shape{64, 64}, in64,
                [&](const Triple& t, uint64_t d, uint64_t) {
                  const double x = as_f64(t[0]);
                  if (std::isnan(x)) return same64(d, t[0]);
                  return same64(d, bits_of(std::copysign(static_cast<double>(r.f(x)), x)));
                });
  }
}

TEST_CASE("conformance: cvt to and from f16/bf16 in every legal rounding",
          "[ptx][conformance][cvt][half]") {
  // f32 inputs around every region of the half formats: subnormal halves, ties, overflow.
  std::vector<uint64_t> v = f32_edges();
  for (float f : {65504.0f,
                  65519.0f,
                  65520.0f,
                  65535.0f,
                  65536.0f,
                  1.0f + 0x1p-11f,
                  1.0f + 0x1p-11f + 0x1p-23f,
                  1.0f + 3 * 0x1p-11f,
                  0x1p-24f,
                  0x1p-25f,
                  0x1.8p-25f,
                  0x1.000002p-25f,
                  0x1p-26f,
                  0x1.ffcp-15f,
                  0x1.ff8p-15f,
                  3.0e38f,
                  0x1.fep127f,
                  0x1.ff8p127f,
                  0x1.01p0f,
                  0x1.018p0f,
                  0x1.008p0f,
                  0x1p-133f,
                  0x1.8p-134f,
                  0x1p-134f,
                  1.0009765625f,
                  2049.0f,
                  4097.0f})
    for (float s : {1.0f, -1.0f}) v.push_back(bits_of(f * s));
  Inputs in = each(v);
  add_random(in, 256, 5, v, 32);
  for (const Rounding& r : kRoundings) {
    check_exact(
        std::string("cvt") + r.suffix + ".f16.f32 %d, %a", Shape{16, 32}, in,
        [&](auto a, auto, auto) { return to_f16(static_cast<double>(as_f32(a)), r.suffix); });
  }
  Inputs in64 = each(f64_edges());
  for (double d : {65519.99999999999, 65520.0, 1.0 + 0x1p-11 + 0x1p-40, 0x1p-25 + 0x1p-60, 0x1p-25})
    in64.push_back({bits_of(d), 0, 0});
  // NaN: sign, quiet bit and the payload's top 9 bits (an H200; from f32 the NaN is canonical).
  check_exact("cvt.rn.f16.f64 %d, %a", Shape{16, 64}, in64, [](auto a, auto, auto) -> uint64_t {
    if (std::isnan(as_f64(a))) return (a >> 63) << 15 | 0x7e00 | ((a >> 42) & 0x1ff);
    return to_f16(as_f64(a), ".rn");
  });
  for (bool rz : {false, true}) {
    check_exact(std::string("cvt") + (rz ? ".rz" : ".rn") + ".bf16.f32 %d, %a", Shape{16, 32}, in,
                [&](auto a, auto, auto) { return to_bf16(static_cast<double>(as_f32(a)), rz); });
  }
  // Half -> f32 is exact for every one of the 65536 patterns (f16 NaN becomes the canonical f32
  // NaN, on an H200 too).
  std::vector<uint64_t> all_halves(65536);
  for (uint64_t h = 0; h < 65536; ++h) all_halves[h] = h;
  check_exact(
      "cvt.f32.f16 %d, %a", Shape{32, 16}, each(all_halves), [](auto a, auto, auto) -> uint64_t {
        const float f = static_cast<float>(std::bit_cast<_Float16>(static_cast<uint16_t>(a)));
        return std::isnan(f) ? kCanonicalNan32 : bits_of(f);
      });
  // bf16 -> f32 is a shift, NaN payloads included (not even quieted: an H200).
  check_exact("cvt.f32.bf16 %d, %a", Shape{32, 16}, each(all_halves),
              [](auto a, auto, auto) -> uint64_t { return a << 16; });
}

TEST_CASE("conformance: cvt between integer widths, with and without .sat",
          "[ptx][conformance][cvt]") {
  struct T {
    const char* name;
    int bits;
    bool is_signed;
  };
  const T types[] = {{"s16", 16, true},  {"u16", 16, false}, {"s32", 32, true},
                     {"u32", 32, false}, {"s64", 64, true},  {"u64", 64, false}};
  for (const T& src : types) {
    std::vector<uint64_t> vals = src.bits == 16   ? int16_edges()
                                 : src.bits == 32 ? int32_edges()
                                                  : int64_edges();
    for (uint64_t x : {0x7full, 0x80ull, 0xffull, 0x100ull, 0xff80ull}) vals.push_back(x);
    const Inputs in = each(vals);
    for (const T& dst : types) {
      if (std::string(src.name) == dst.name) continue;
      INFO(dst.name << " <- " << src.name);
      auto value = [&](uint64_t a) { return int_value(a, src.bits, src.is_signed); };
      // Without .sat: truncate to the destination width, then sign/zero-extend by the
      // destination type into its register (the register here is exactly the width).
      check_exact(std::string("cvt.") + dst.name + "." + src.name + " %d, %a",
                  Shape{dst.bits, src.bits}, in, [&](auto a, auto, auto) -> uint64_t {
                    uint64_t x = a & width_mask(src.bits);
                    if (src.is_signed && src.bits < 64 && ((x >> (src.bits - 1)) & 1))
                      x |= ~width_mask(src.bits);
                    return x & width_mask(dst.bits);
                  });
      // .sat only where the destination cannot hold every source value (PTX ISA, cvt); where it
      // can, cvt.sat is not PTX and the load is refused.
      const bool holds_all = src.is_signed == dst.is_signed ? dst.bits >= src.bits
                                                            : dst.is_signed && dst.bits > src.bits;
      const std::string sat = std::string("cvt.sat.") + dst.name + "." + src.name + " %d, %a";
      if (holds_all) {
        const auto r =
            cusnap::emu::ptx::compile(conformance_module(sat, Shape{dst.bits, src.bits}));
        INFO(r.error);
        CHECK(r.program == nullptr);
        CHECK(r.error.find("every source value fits") != std::string::npos);
        continue;
      }
      const IntDst d{dst.name, dst.bits, dst.is_signed};
      check_exact(sat, Shape{dst.bits, src.bits}, in,
                  [&](auto a, auto, auto) { return to_int(value(a), d, kIntRoundings[1].f); });
    }
  }
  // 8-bit destinations live in 16-bit registers. Only the low byte is checked: whether the
  // register's upper byte is sign-extended (.s8) or zero-filled is not pinned down here (the
  // emulator zero-fills; nvcc's code reads such registers back through cvt.*.s8/u8, which looks
  // at the low byte only).
  const Inputs in = each(int32_edges());
  auto low_byte = [](std::function<uint64_t(uint64_t)> ref) {
    return [ref](const Triple& t, uint64_t d, uint64_t) {
      const uint64_t e = ref(t[0]) & 0xff;
      return (d & 0xff) == e ? std::string() : "expected low byte " + hex(e);
    };
  };
  check_lanes("cvt.s8.s32 %d, %a", Shape{16, 32}, in, low_byte([](uint64_t a) { return a; }));
  check_lanes("cvt.u8.s32 %d, %a", Shape{16, 32}, in, low_byte([](uint64_t a) { return a; }));
  check_lanes("cvt.sat.s8.s32 %d, %a", Shape{16, 32}, in, low_byte([](uint64_t a) {
                return static_cast<uint64_t>(
                    static_cast<int64_t>(std::clamp<int32_t>(static_cast<int32_t>(a), -128, 127)));
              }));
  check_lanes("cvt.sat.u8.s32 %d, %a", Shape{16, 32}, in, low_byte([](uint64_t a) {
                return static_cast<uint64_t>(std::clamp<int32_t>(static_cast<int32_t>(a), 0, 255));
              }));
}

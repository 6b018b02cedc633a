// cvt: conversions between every integer and floating-point type PTX defines.
//
// Every source value is first taken exactly (integers as 128-bit integers, floats as doubles,
// which hold every f16/bf16/f32/f64 value exactly); the destination is then produced with one
// rounding, so results are correctly rounded in every mode.
// - float -> int: rounded to integral with .rni/.rzi/.rmi/.rpi (.rzi when omitted), clamped to
//   the destination range, NaN -> 0 (PTX: float-to-int conversions always saturate).
// - int -> int: truncation/extension by the source's signedness; .sat clamps to the range.
// - float -> float: .rn (default), .rz, .rm, .rp, .rna (tf32 only); same-type .rni/.rzi/.rmi/.rpi
//   round to an integral value; .sat clamps to [0, 1] (NaN -> +0); .relu clamps negatives to +0;
//   .satfinite turns overflow and infinities into the largest finite value.
// - NaN results are canonical: 0x7fffffff (f32, tf32), 0x7fff (f16, bf16), 0x7f (fp8); f64
//   results from a NaN keep the host conversion's quiet NaN.
#include <cmath>
#include <limits>

#include "alu_internal.h"

namespace cusnap::emu::ptx::detail {
namespace {

__extension__ typedef __int128 I128;

enum class Kind : uint8_t { kInt, kFloat, kPacked, kInvalid };

Kind kind_of(Type t) {
  if (is_int_type(t)) return Kind::kInt;
  switch (t) {
    case Type::kF16:
    case Type::kBF16:
    case Type::kF32:
    case Type::kF64:
    case Type::kTF32:
      return Kind::kFloat;
    case Type::kF16x2:
    case Type::kBF16x2:
    case Type::kE4M3x2:
    case Type::kE5M2x2:
      return Kind::kPacked;
    default:
      return Kind::kInvalid;
  }
}

bool is_int_round(Round r) {
  return r == Round::kRni || r == Round::kRzi || r == Round::kRmi || r == Round::kRpi;
}
bool is_float_round(Round r) {
  return r == Round::kRn || r == Round::kRz || r == Round::kRm || r == Round::kRp;
}

I128 load_int(uint64_t v, Type t) {
  const int bits = type_bits(t);
  const uint64_t masked = bits == 64 ? v : v & ((uint64_t{1} << bits) - 1);
  if (is_signed_type(t) && bits < 64 && ((masked >> (bits - 1)) & 1u)) {
    return static_cast<I128>(masked) - (static_cast<I128>(1) << bits);
  }
  if (is_signed_type(t) && bits == 64) return static_cast<int64_t>(masked);
  return static_cast<I128>(masked);
}

I128 int_min(Type t) {
  return is_signed_type(t) ? -(static_cast<I128>(1) << (type_bits(t) - 1)) : 0;
}
I128 int_max(Type t) {
  const int bits = type_bits(t) - (is_signed_type(t) ? 1 : 0);
  return (static_cast<I128>(1) << bits) - 1;
}

uint64_t store_int(I128 v, Type t) {
  const int bits = type_bits(t);
  const uint64_t u = static_cast<uint64_t>(v);
  return bits == 64 ? u : u & ((uint64_t{1} << bits) - 1);
}

// Integer value as a double rounded to odd (exact when it fits in 53 bits).
double int_to_double_odd(I128 v) {
  const bool negative = v < 0;
  uint64_t mag = static_cast<uint64_t>(negative ? -v : v);
  const int width = 64 - std::countl_zero(mag);
  int shift = width - 53;
  if (shift > 0) {
    const bool sticky = (mag & ((uint64_t{1} << shift) - 1)) != 0;
    mag = (mag >> shift) | (sticky ? 1u : 0u);
  } else {
    shift = 0;
  }
  const double r = std::ldexp(static_cast<double>(mag), shift);
  return negative ? -r : r;
}

// Rounds to an integral value; exact for every double.
double round_integral(double x, Round r) {
  switch (r) {
    case Round::kRzi:
    case Round::kNone:
      return std::trunc(x);
    case Round::kRmi:
      return std::floor(x);
    case Round::kRpi:
      return std::ceil(x);
    default: {
      const double f = std::floor(x);
      const double diff = x - f;
      // Nearest even; a result of zero keeps the source's sign (-0.3 -> -0.0, as IEEE
      // roundToIntegralTiesToEven and the GPU), which `f + 1` from floor(-0.3) = -1 would lose.
      const double r = (diff > 0.5 || (diff == 0.5 && std::fmod(f, 2.0) != 0)) ? f + 1 : f;
      return std::copysign(r, x);
    }
  }
}

// Exact value of a float-typed source.
double load_float(uint64_t v, Type t, bool ftz) {
  switch (t) {
    case Type::kF16:
      return load_half(static_cast<uint16_t>(v), Type::kF16, false);
    case Type::kBF16:
      return load_half(static_cast<uint16_t>(v), Type::kBF16, false);
    case Type::kF32: {
      const float f = as_f32(v);
      return ftz ? flush(f) : f;
    }
    default:
      return as_f64(v);
  }
}

const FloatFormat& format_of(Type t) {
  switch (t) {
    case Type::kF16:
    case Type::kF16x2:
      return kFmtF16;
    case Type::kBF16:
    case Type::kBF16x2:
      return kFmtBF16;
    case Type::kTF32:
      return kFmtTF32;
    case Type::kE4M3x2:
      return kFmtE4M3;
    case Type::kE5M2x2:
      return kFmtE5M2;
    default:
      return kFmtF32;
  }
}

// Narrow float destination (f16, bf16, tf32, e4m3, e5m2, and f32 from exact values).
uint32_t encode_narrow(double x, Type dst, const Mods& m) {
  const bool fp8 = dst == Type::kE4M3x2 || dst == Type::kE5M2x2;
  // .sat is a [0,1] clamp only where PTX defines it (f16, bf16, f32 destinations); on fp8 and
  // tf32 destinations Mods::sat can only stand for .satfinite.
  const bool sat_is_satfinite = fp8 || dst == Type::kTF32;
  const bool clamp01 = m.sat && !sat_is_satfinite;
  const bool satfinite = m.satfinite || fp8 || (m.sat && sat_is_satfinite);
  if (m.relu && !std::isnan(x) && (x < 0 || std::signbit(x))) x = 0;
  if (clamp01 && !std::isnan(x)) x = x > 0 ? (x < 1 ? x : 1) : 0;
  if (clamp01 && std::isnan(x)) x = 0;
  Round r = m.round == Round::kNone ? Round::kRn : m.round;
  const FloatFormat& f = format_of(dst);
  if (std::isnan(x)) {
    if (dst == Type::kTF32 || dst == Type::kF32) return kCanonicalNanF32;
    return (((1u << f.exp_bits) - 1) << f.man_bits) | ((1u << f.man_bits) - 1);
  }
  const uint32_t v = encode_format(x, f, r, satfinite);
  if (dst == Type::kTF32) {  // tf32 lives in an f32 register with the low 13 bits zero
    return ((v >> 18) & 1u) << 31 | ((v >> 10) & 0xffu) << 23 | (v & 0x3ffu) << 13;
  }
  return v;
}

struct CvtPlan {
  Type dst, src;
  Kind dk, sk;
};

uint64_t convert_one(const CvtPlan& p, const Mods& m, uint64_t a) {
  if (p.sk == Kind::kInt && p.dk == Kind::kInt) {
    I128 v = load_int(a, p.src);
    if (m.sat) v = std::min(std::max(v, int_min(p.dst)), int_max(p.dst));
    return store_int(v, p.dst);
  }
  if (p.sk == Kind::kFloat && p.dk == Kind::kInt) {
    const double x = load_float(a, p.src, m.ftz && p.src == Type::kF32);
    if (std::isnan(x)) {
      // The ISA says NaN -> 0. An H200 (tests/emulator/ptx/silicon) agrees for f32 (and f16)
      // sources into 16- and 32-bit integers, but gives the pattern 1 << (n - 1) - INT_MIN's bits,
      // for unsigned destinations too - from an f64 source into every width and from an f32
      // source into 64-bit integers, with or without .sat.
      const int n = type_bits(p.dst);
      if (p.src == Type::kF64 || (p.src == Type::kF32 && n == 64))
        return store_int(is_signed_type(p.dst) ? int_min(p.dst) : I128{1} << (n - 1), p.dst);
      return 0;
    }
    const double r = round_integral(x, m.round);
    // Clamp in double: both bounds (+-2^(n-1), 2^n) are exact powers of two.
    const double lo = static_cast<double>(int_min(p.dst));
    const double hi_exclusive = std::ldexp(1.0, type_bits(p.dst) - (is_signed_type(p.dst) ? 1 : 0));
    if (r < lo) return store_int(int_min(p.dst), p.dst);
    if (r >= hi_exclusive) return store_int(int_max(p.dst), p.dst);
    return store_int(static_cast<I128>(r), p.dst);
  }
  // Float destination: exact (or rounded-to-odd) source value first.
  double x;
  bool exact = true;
  if (p.sk == Kind::kInt) {
    const I128 v = load_int(a, p.src);
    x = int_to_double_odd(v);
    exact = static_cast<I128>(x) == v;
  } else {
    x = load_float(a, p.src, m.ftz && p.src == Type::kF32);
  }
  if (is_int_round(m.round) && !std::isnan(x) && !std::isinf(x)) x = round_integral(x, m.round);
  if (p.dst == Type::kF64) {
    if (m.sat) x = std::isnan(x) ? 0 : (x > 0 ? (x < 1 ? x : 1) : 0);
    if (!exact) {  // 64-bit integer that does not fit in 53 bits: let the host round it
      RoundingScope scope(fenv_round(m.round));
      const I128 v = load_int(a, p.src);
      double h;
      if (is_signed_type(p.src)) {
        int64_t s = static_cast<int64_t>(v);
        opaque(s);
        h = static_cast<double>(s);
      } else {
        uint64_t u = static_cast<uint64_t>(v);
        opaque(u);
        h = static_cast<double>(u);
      }
      opaque(h);
      return bits_of(h);
    }
    if (std::isnan(x) && p.src == Type::kF32) return bits_of(static_cast<double>(as_f32(a)));
    return bits_of(x);
  }
  if (std::isnan(x) && !m.sat && p.sk == Kind::kFloat) {
    // NaN payloads as an H200 converts them (tests/emulator/ptx/silicon): bf16 -> f32 is a shift
    // (not even quieted); f64 -> f32 and f64 -> f16 keep the sign and the payload's top bits and
    // set the quiet bit. The other float-to-float forms give the canonical NaN, as there.
    if (p.src == Type::kBF16 && p.dst == Type::kF32) return (a & 0xffffu) << 16;
    if (p.src == Type::kF64 && p.dst == Type::kF32)
      return ((a >> 32) & 0x80000000u) | 0x7fc00000u | ((a >> 29) & 0x3fffffu);
    if (p.src == Type::kF64 && p.dst == Type::kF16)
      return ((a >> 48) & 0x8000u) | 0x7e00u | ((a >> 42) & 0x1ffu);
  }
  if (p.dst == Type::kF32) {
    uint32_t v;
    if (std::isnan(x) && !m.sat) return kCanonicalNanF32;
    if (m.sat) x = std::isnan(x) ? 0 : (x > 0 ? (x < 1 ? x : 1) : 0);
    Mods fm = m;
    fm.sat = false;
    fm.relu = false;
    v = encode_narrow(x, Type::kF32, fm);
    float f = std::bit_cast<float>(v);
    if (m.ftz) f = flush(f);
    return bits_of(f);
  }
  return encode_narrow(x, p.dst, m);
}

}  // namespace
}  // namespace cusnap::emu::ptx::detail

namespace cusnap::emu::ptx {

using detail::Kind;

bool cvt_supported(Type dst, Type src, const Mods& m) {
  const Kind dk = detail::kind_of(dst), sk = detail::kind_of(src);
  if (dk == Kind::kInvalid || sk == Kind::kInvalid) return false;
  if (m.approx || m.full || m.nan || m.xorsign_abs || m.cc || m.use_carry || m.b_signed) {
    return false;
  }
  const bool irnd = detail::is_int_round(m.round);
  const bool frnd = detail::is_float_round(m.round);
  if (m.ftz && src != Type::kF32 && dst != Type::kF32) return false;
  if (dk == Kind::kPacked || sk == Kind::kPacked) {
    const bool fp8_dst = dst == Type::kE4M3x2 || dst == Type::kE5M2x2;
    // .sat is not defined for packed destinations; for fp8 (where .satfinite is mandatory and
    // implied) a decoder that folded `.satfinite` into Mods::sat is accepted.
    if ((m.sat && !fp8_dst) || irnd) return false;
    const bool fp8_src = src == Type::kE4M3x2 || src == Type::kE5M2x2;
    if ((dst == Type::kF16x2 || dst == Type::kBF16x2) && src == Type::kF32) {
      return m.round == Round::kNone || frnd;
    }
    if (fp8_dst && (src == Type::kF32 || src == Type::kF16x2)) {
      return m.round == Round::kNone || m.round == Round::kRn;
    }
    if (dst == Type::kF16x2 && fp8_src) {
      return (m.round == Round::kNone || m.round == Round::kRn) && !m.satfinite;
    }
    return false;
  }
  if (m.relu || m.satfinite) {
    // .relu/.satfinite exist for conversions to f16/bf16/tf32 from f32.
    if (!(dk == Kind::kFloat && src == Type::kF32 &&
          (dst == Type::kF16 || dst == Type::kBF16 || dst == Type::kTF32))) {
      return false;
    }
  }
  if (dst == Type::kTF32) {
    // tf32 has no .sat; Mods::sat there can only mean .satfinite (see encode_narrow).
    return src == Type::kF32 && !m.ftz &&
           (m.round == Round::kRna || m.round == Round::kRn || m.round == Round::kRz);
  }
  if (src == Type::kTF32) return false;
  if (m.round == Round::kRna) return false;
  switch (dk) {
    case Kind::kInt:
      if (sk == Kind::kInt) return m.round == Round::kNone && !m.ftz;
      return m.round == Round::kNone || irnd;
    case Kind::kFloat:
      if (irnd) return sk == Kind::kFloat && src == dst;
      return true;
    default:
      return false;
  }
}

void cvt(Type dst, Type src, const Mods& mods, uint32_t mask, const uint64_t* a, uint64_t* d,
         const uint64_t* b) {
  using namespace detail;
  if (!cvt_supported(dst, src, mods)) {
    for_lanes(mask, [&](int i) { d[i] = ~uint64_t{0}; });
    return;
  }
  const CvtPlan plan{dst, src, kind_of(dst), kind_of(src)};
  RoundingScope scope(FE_TONEAREST);  // host FTZ/DAZ off: f32 subnormal sources must survive
  if (plan.dk != Kind::kPacked && plan.sk != Kind::kPacked) {
    // Fast path (hot in hash/FMA loops): 32-bit integer -> f32, round-to-nearest, no modifiers,
    // is one correctly rounded host conversion (the scope above guarantees RN, no FTZ/DAZ).
    const bool plain = (mods.round == Round::kNone || mods.round == Round::kRn) && !mods.sat &&
                       !mods.ftz && !mods.relu && !mods.satfinite;
    if (plain && dst == Type::kF32 && (src == Type::kU32 || src == Type::kS32)) {
      if (src == Type::kU32) {
        for_lanes(mask, [&](int i) {
          uint32_t v = static_cast<uint32_t>(a[i]);
          float f = static_cast<float>(v);
          d[i] = std::bit_cast<uint32_t>(f);
        });
      } else {
        for_lanes(mask, [&](int i) {
          int32_t v = static_cast<int32_t>(static_cast<uint32_t>(a[i]));
          float f = static_cast<float>(v);
          d[i] = std::bit_cast<uint32_t>(f);
        });
      }
      return;
    }
    for_lanes(mask, [&](int i) { d[i] = convert_one(plan, mods, a[i]); });
    return;
  }
  const bool fp8_dst = dst == Type::kE4M3x2 || dst == Type::kE5M2x2;
  const int half_bits = fp8_dst ? 8 : 16;
  for_lanes(mask, [&](int i) {
    uint64_t hi_bits, lo_bits;
    if (src == Type::kF32) {  // two f32 sources: a -> upper half, b -> lower half
      const double hi = load_float(a[i], Type::kF32, mods.ftz);
      const double lo = load_float(b != nullptr ? b[i] : 0, Type::kF32, mods.ftz);
      hi_bits = encode_narrow(hi, dst, mods);
      lo_bits = encode_narrow(lo, dst, mods);
    } else if (src == Type::kF16x2) {  // f16x2 -> fp8x2
      hi_bits =
          encode_narrow(load_half(static_cast<uint16_t>(a[i] >> 16), Type::kF16, false), dst, mods);
      lo_bits = encode_narrow(load_half(static_cast<uint16_t>(a[i]), Type::kF16, false), dst, mods);
    } else {  // fp8x2 -> f16x2: exact
      const FloatFormat& f = format_of(src);
      hi_bits =
          encode_narrow(decode_format(static_cast<uint32_t>(a[i] >> 8) & 0xffu, f), dst, mods);
      lo_bits = encode_narrow(decode_format(static_cast<uint32_t>(a[i]) & 0xffu, f), dst, mods);
    }
    d[i] = (hi_bits << half_bits) | lo_bits;
  });
}

}  // namespace cusnap::emu::ptx

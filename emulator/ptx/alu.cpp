// Entry points of the ALU (see alu.h) and the small-format encoder shared by every file.
// Precision of the approximate instructions: see ALU.md and alu_float.cpp.
#include "alu.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "alu_internal.h"

namespace cusnap::emu::ptx {

int type_bits(Type t) {
  switch (t) {
    case Type::kNone:
      return 0;
    case Type::kPred:
      return 1;
    case Type::kB8:
    case Type::kU8:
    case Type::kS8:
      return 8;
    case Type::kB16:
    case Type::kU16:
    case Type::kS16:
    case Type::kF16:
    case Type::kBF16:
    case Type::kE4M3x2:
    case Type::kE5M2x2:
      return 16;
    case Type::kB32:
    case Type::kU32:
    case Type::kS32:
    case Type::kF32:
    case Type::kF16x2:
    case Type::kBF16x2:
    case Type::kTF32:
    case Type::kU16x2:
    case Type::kS16x2:
      return 32;
    case Type::kB64:
    case Type::kU64:
    case Type::kS64:
    case Type::kF64:
      return 64;
    case Type::kB128:
      return 128;
  }
  return 0;
}

const char* type_name(Type t) {
  switch (t) {
    case Type::kNone:
      return "none";
    case Type::kPred:
      return "pred";
    case Type::kB8:
      return "b8";
    case Type::kB16:
      return "b16";
    case Type::kB32:
      return "b32";
    case Type::kB64:
      return "b64";
    case Type::kB128:
      return "b128";
    case Type::kU8:
      return "u8";
    case Type::kU16:
      return "u16";
    case Type::kU32:
      return "u32";
    case Type::kU64:
      return "u64";
    case Type::kS8:
      return "s8";
    case Type::kS16:
      return "s16";
    case Type::kS32:
      return "s32";
    case Type::kS64:
      return "s64";
    case Type::kF16:
      return "f16";
    case Type::kF16x2:
      return "f16x2";
    case Type::kBF16:
      return "bf16";
    case Type::kBF16x2:
      return "bf16x2";
    case Type::kTF32:
      return "tf32";
    case Type::kF32:
      return "f32";
    case Type::kF64:
      return "f64";
    case Type::kE4M3x2:
      return "e4m3x2";
    case Type::kE5M2x2:
      return "e5m2x2";
    case Type::kU16x2:
      return "u16x2";
    case Type::kS16x2:
      return "s16x2";
  }
  return "?";
}

const char* alu_op_name(AluOp op) {
  static constexpr const char* kNames[] = {
      "add",
      "sub",
      "mul.lo",
      "mul.hi",
      "mul.wide",
      "mul24.lo",
      "mul24.hi",
      "mad.lo",
      "mad.hi",
      "mad.wide",
      "mad24.lo",
      "mad24.hi",
      "sad",
      "mul",
      "mad",
      "fma",
      "div",
      "rem",
      "abs",
      "neg",
      "min",
      "max",
      "copysign",
      "rcp",
      "sqrt",
      "rsqrt",
      "sin",
      "cos",
      "lg2",
      "ex2",
      "tanh",
      "and",
      "or",
      "xor",
      "not",
      "cnot",
      "lop3",
      "shl",
      "shr",
      "shf.l",
      "shf.r",
      "shf.l.clamp",
      "shf.r.clamp",
      "bfe",
      "bfi",
      "brev",
      "clz",
      "popc",
      "bfind",
      "bfind.shiftamt",
      "fns",
      "prmt",
      "prmt.f4e",
      "prmt.b4e",
      "prmt.rc8",
      "prmt.ecl",
      "prmt.ecr",
      "prmt.rc16",
      "dp4a",
      "dp2a.lo",
      "dp2a.hi",
      "testp.finite",
      "testp.infinite",
      "testp.number",
      "testp.notanumber",
      "testp.normal",
      "testp.subnormal",
      "mov",
  };
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(AluOp::kMov) + 1);
  return kNames[static_cast<size_t>(op)];
}

const char* cmp_op_name(CmpOp op) {
  static constexpr const char* kNames[] = {"eq",  "ne",  "lt",  "le",  "gt",  "ge",
                                           "lo",  "ls",  "hi",  "hs",  "equ", "neu",
                                           "ltu", "leu", "gtu", "geu", "num", "nan"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(CmpOp::kNan) + 1);
  return kNames[static_cast<size_t>(op)];
}

namespace {

detail::AluKernel resolve(AluOp op, Type type, const Mods& mods) {
  if (mods.satfinite) return nullptr;  // a cvt-only modifier
  switch (type) {
    case Type::kF32:
    case Type::kF64:
      return detail::resolve_float(op, type, mods);
    case Type::kF16:
    case Type::kF16x2:
    case Type::kBF16:
    case Type::kBF16x2:
      return detail::resolve_half(op, type, mods);
    default:
      return detail::resolve_int(op, type, mods);
  }
}

}  // namespace

bool alu_supported(AluOp op, Type type, const Mods& mods) {
  return resolve(op, type, mods) != nullptr;
}

void alu(AluOp op, Type type, const Mods& mods, uint32_t mask, const uint64_t* a, const uint64_t* b,
         const uint64_t* c, uint64_t* d, CarryFlags* carry, const uint64_t* e) {
  detail::AluKernel kernel = resolve(op, type, mods);
  if (kernel == nullptr) {
    for_lanes(mask, [&](int i) { d[i] = ~uint64_t{0}; });
    return;
  }
  kernel(detail::AluArgs{mods, mask, a, b, c, d, carry, e});
}

namespace detail {

namespace {

// 2^e as a double, for e in the normal double range (every format's exponents are).
inline double pow2(int e) { return std::bit_cast<double>(static_cast<uint64_t>(e + 1023) << 52); }

}  // namespace

double decode_format(uint32_t bits, const FloatFormat& f) {
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  const uint32_t man_mask = (1u << f.man_bits) - 1;
  const uint32_t exp_all = (1u << f.exp_bits) - 1;
  const bool negative = (bits >> (f.exp_bits + f.man_bits)) & 1;
  const uint32_t exp = (bits >> f.man_bits) & exp_all;
  const uint32_t man = bits & man_mask;
  double v;
  if (f.has_inf && exp == exp_all) {
    v = man != 0 ? std::numeric_limits<double>::quiet_NaN() : INFINITY;
  } else if (!f.has_inf && exp == exp_all && man == man_mask) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (exp == 0) {
    v = static_cast<double>(man) * pow2(1 - bias - f.man_bits);  // exact
  } else {
    v = std::bit_cast<double>(static_cast<uint64_t>(static_cast<int>(exp) - bias + 1023) << 52 |
                              static_cast<uint64_t>(man) << (52 - f.man_bits));
  }
  return negative ? -v : v;
}

uint32_t encode_format(double x, const FloatFormat& f, Round r, bool satfinite) {
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  const uint32_t man_all = (1u << f.man_bits) - 1;
  const uint32_t exp_all = (1u << f.exp_bits) - 1;
  const uint64_t xb = std::bit_cast<uint64_t>(x);
  const bool negative = (xb >> 63) != 0;
  const uint32_t sign = negative ? 1u << (f.exp_bits + f.man_bits) : 0u;
  const uint32_t nan = (exp_all << f.man_bits) | man_all;
  // Largest finite: e4m3 keeps the top exponent for normals except the all-ones mantissa.
  const uint32_t max_finite =
      f.has_inf ? ((exp_all - 1) << f.man_bits) | man_all : (exp_all << f.man_bits) | (man_all - 1);
  const uint32_t inf = f.has_inf ? exp_all << f.man_bits : nan;
  const int dexp = static_cast<int>((xb >> 52) & 0x7ff);
  const uint64_t dman = xb & ((uint64_t{1} << 52) - 1);
  if (dexp == 0x7ff) return dman != 0 ? nan : sign | (satfinite ? max_finite : inf);
  if (dexp == 0 && dman == 0) return sign;

  // x = sig * 2^(exp - 52) with a 53-bit significand (double subnormals: far below every
  // target's smallest subnormal, they only matter as a sticky bit).
  int exp = dexp == 0 ? -1022 : dexp - 1023;
  const uint64_t sig = dexp == 0 ? dman : dman | (uint64_t{1} << 52);
  const int emin = 1 - bias;
  // Keep man_bits fraction bits at the target exponent (clamped to the subnormal exponent).
  const int target_exp = exp < emin ? emin : exp;
  const int shift = 52 - f.man_bits + (target_exp - exp);
  uint64_t n;
  bool above_half, exactly_half, inexact;
  if (shift >= 64) {
    n = 0;
    above_half = false;
    exactly_half = false;
    inexact = true;
  } else {
    n = sig >> shift;
    const uint64_t rem = sig & ((uint64_t{1} << shift) - 1);
    const uint64_t half = uint64_t{1} << (shift - 1);
    above_half = rem > half;
    exactly_half = rem == half;
    inexact = rem != 0;
  }
  exp = target_exp;
  bool up = false;
  switch (r) {
    case Round::kRz:
    case Round::kRzi:
      break;
    case Round::kRm:
    case Round::kRmi:
      up = negative && inexact;
      break;
    case Round::kRp:
    case Round::kRpi:
      up = !negative && inexact;
      break;
    case Round::kRna:
      up = above_half || exactly_half;
      break;
    default:
      up = above_half || (exactly_half && (n & 1) != 0);
      break;
  }
  if (up) ++n;
  if (n == (uint64_t{2} << f.man_bits)) {
    n >>= 1;
    ++exp;
  }
  const bool normal = n >= (uint64_t{1} << f.man_bits);
  const int exp_field = normal ? exp + bias : 0;
  const bool overflow = exp_field > static_cast<int>(f.has_inf ? exp_all - 1 : exp_all) ||
                        ((static_cast<uint32_t>(exp_field) << f.man_bits) |
                         (static_cast<uint32_t>(n) & man_all)) > max_finite;
  if (overflow) {
    if (satfinite) return sign | max_finite;
    bool to_inf;
    switch (r) {
      case Round::kRz:
      case Round::kRzi:
        to_inf = false;
        break;
      case Round::kRm:
      case Round::kRmi:
        to_inf = negative;
        break;
      case Round::kRp:
      case Round::kRpi:
        to_inf = !negative;
        break;
      default:
        to_inf = true;
        break;
    }
    return sign | (to_inf ? inf : max_finite);
  }
  return sign | (static_cast<uint32_t>(exp_field) << f.man_bits) |
         (static_cast<uint32_t>(n) & man_all);
}

double load_half(uint16_t bits, Type t, bool ftz) {
  const FloatFormat& f = (t == Type::kBF16 || t == Type::kBF16x2) ? kFmtBF16 : kFmtF16;
  double v = decode_format(bits, f);
  if (ftz && (bits & (((1u << f.exp_bits) - 1) << f.man_bits)) == 0) v = std::copysign(0.0, v);
  return v;
}

uint16_t round_half(double x, Type t, Round r, bool ftz) {
  const bool bf = t == Type::kBF16 || t == Type::kBF16x2;
  if (std::isnan(x)) return bf ? kCanonicalNanBF16 : kCanonicalNanF16;
  const FloatFormat& f = bf ? kFmtBF16 : kFmtF16;
  uint32_t v = encode_format(x, f, r, false);
  if (ftz && (v & (((1u << f.exp_bits) - 1) << f.man_bits)) == 0) v &= 0x8000u;
  return static_cast<uint16_t>(v);
}

}  // namespace detail
}  // namespace cusnap::emu::ptx

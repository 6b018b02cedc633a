// f16, bf16 and their packed x2 forms (PTX ISA "Half Precision Floating-Point Instructions").
//
// Each half is decoded exactly to double, the operation is evaluated in double rounded to odd
// (see sum_to_odd) and the result is rounded once to the half format, so add/sub/mul/fma are
// correctly rounded (.rn, the only rounding PTX allows for them). Results that are NaN are the
// canonical 0x7fff. `.ftz` (f16 only) flushes subnormal inputs and results to signed zero;
// `.sat` (f16 only) clamps to [0, 1] with NaN -> +0; `.relu` clamps negatives to +0 and keeps NaN
// (canonical). neg/abs are sign-bit operations (NaN payload kept).
// ex2.approx and tanh.approx are computed with the host's double-precision exp2/tanh and rounded
// to nearest: within 0.5 ulp + libm error of the exact value; the PTX ISA bounds the hardware's
// ex2.approx.f16 to 2^-9.9 relative error and tanh.approx.f16 to 2^-10.987 (absolute, f16).
#include <cmath>

#include "alu_internal.h"

namespace cusnap::emu::ptx::detail {
namespace {

inline double clamp01(double r) { return r > 0 ? (r < 1 ? r : 1) : 0; }

template <bool kBF, AluOp Op>
uint16_t half_op(uint16_t ua, uint16_t ub, uint16_t uc, const Mods& m) {
  constexpr Type t = kBF ? Type::kBF16 : Type::kF16;
  const bool ftz = m.ftz;
  if constexpr (Op == AluOp::kMov) {
    return ua;
  } else if constexpr (Op == AluOp::kNeg || Op == AluOp::kAbs) {
    uint16_t v = ua;
    if (ftz && (v & (kBF ? 0x7f80u : 0x7c00u)) == 0) v &= 0x8000u;
    return Op == AluOp::kNeg ? static_cast<uint16_t>(v ^ 0x8000u)
                             : static_cast<uint16_t>(v & 0x7fffu);
  } else if constexpr (Op == AluOp::kEx2 || Op == AluOp::kTanh) {
    const double a = load_half(ua, t, ftz);
    const double r = Op == AluOp::kEx2 ? std::exp2(a) : std::tanh(a);
    return round_half(r, t, Round::kRn, ftz);
  } else if constexpr (Op == AluOp::kMin || Op == AluOp::kMax) {
    const MinMaxPick<double> p = minmax_pick(load_half(ua, t, ftz), load_half(ub, t, ftz),
                                             Op == AluOp::kMax, m.nan, m.xorsign_abs);
    if (p.is_nan) return kBF ? kCanonicalNanBF16 : kCanonicalNanF16;
    double r = p.value;
    if (m.relu && (r < 0 || (r == 0 && std::signbit(r)))) r = 0;
    return round_half(r, t, Round::kRn, ftz);  // exact: r is one of the inputs
  } else {
    const double a = load_half(ua, t, ftz), b = load_half(ub, t, ftz);
    double r;
    // Products of halves are exact in double (at most 2 x 11 significand bits); sums go through
    // sum_to_odd because bf16 exponents span more than double's 53 bits.
    if constexpr (Op == AluOp::kAdd) {
      r = std::isfinite(a) && std::isfinite(b) ? sum_to_odd(a, b) : a + b;
    } else if constexpr (Op == AluOp::kSub) {
      r = std::isfinite(a) && std::isfinite(b) ? sum_to_odd(a, -b) : a - b;
    } else if constexpr (Op == AluOp::kMul) {
      r = a * b;
    } else {
      static_assert(Op == AluOp::kFma, "unhandled half op");
      const double c = load_half(uc, t, ftz);
      const double p = a * b;
      r = std::isfinite(p) && std::isfinite(c) ? sum_to_odd(p, c) : p + c;
    }
    if (std::isnan(r)) return m.sat ? 0 : (kBF ? kCanonicalNanBF16 : kCanonicalNanF16);
    uint16_t h = round_half(r, t, Round::kRn, ftz);
    // .ftz (f16): a result that is tiny after rounding with an unbounded exponent is flushed,
    // though rounded to the subnormal grid it is the smallest normal 0x0400 (an H200,
    // tests/emulator/ptx/silicon). Scaled by 2^8 it rounds in the normal range: below 2^-6
    // (0x2400) it was tiny.
    if (ftz && (h & 0x7fffu) == 0x0400u &&
        (round_half(std::ldexp(r, 8), t, Round::kRn, false) & 0x7fffu) < 0x2400u)
      h &= 0x8000u;
    if (m.sat) {
      h = round_half(clamp01(load_half(h, t, false)), t, Round::kRn, false);
    }
    if (m.relu && (h & 0x8000u) != 0) h = 0;
    return h;
  }
}

template <bool kBF, bool kX2, AluOp Op>
void half_kernel(const AluArgs& x) {
  const Mods& m = x.mods;
  RoundingScope scope(FE_TONEAREST);  // host FTZ/DAZ off for the double-precision evaluation
  for_lanes(x.mask, [&](int i) {
    const uint64_t a = x.a[i];
    const uint64_t b = x.b != nullptr ? x.b[i] : 0;
    const uint64_t c = x.c != nullptr ? x.c[i] : 0;
    uint64_t r = half_op<kBF, Op>(static_cast<uint16_t>(a), static_cast<uint16_t>(b),
                                  static_cast<uint16_t>(c), m);
    if constexpr (kX2) {
      r |= uint64_t{half_op<kBF, Op>(static_cast<uint16_t>(a >> 16), static_cast<uint16_t>(b >> 16),
                                     static_cast<uint16_t>(c >> 16), m)}
           << 16;
    }
    x.d[i] = r;
  });
}

template <bool kBF, bool kX2>
AluKernel resolve_for(AluOp op, const Mods& m) {
  if (m.round != Round::kNone && m.round != Round::kRn) return nullptr;
  if (m.full || m.cc || m.use_carry || m.b_signed) return nullptr;
  if (kBF && (m.ftz || m.sat) && op != AluOp::kEx2) return nullptr;  // bf16 has no .ftz/.sat
  const bool has_round = m.round != Round::kNone;
  switch (op) {
    case AluOp::kAdd:
    case AluOp::kSub:
    case AluOp::kMul:
    case AluOp::kFma:
      if (m.approx || m.nan || m.xorsign_abs) return nullptr;
      if (m.relu && op != AluOp::kFma) return nullptr;
      if (m.relu && m.sat) return nullptr;
      if (op == AluOp::kAdd) return &half_kernel<kBF, kX2, AluOp::kAdd>;
      if (op == AluOp::kSub) return &half_kernel<kBF, kX2, AluOp::kSub>;
      if (op == AluOp::kMul) return &half_kernel<kBF, kX2, AluOp::kMul>;
      return &half_kernel<kBF, kX2, AluOp::kFma>;
    case AluOp::kMin:
    case AluOp::kMax:
      if (has_round || m.approx || m.sat) return nullptr;
      return op == AluOp::kMin ? &half_kernel<kBF, kX2, AluOp::kMin>
                               : &half_kernel<kBF, kX2, AluOp::kMax>;
    case AluOp::kNeg:
    case AluOp::kAbs:
      if (has_round || m.approx || m.sat || m.relu || m.nan || m.xorsign_abs) return nullptr;
      return op == AluOp::kNeg ? &half_kernel<kBF, kX2, AluOp::kNeg>
                               : &half_kernel<kBF, kX2, AluOp::kAbs>;
    case AluOp::kEx2:
    case AluOp::kTanh:
      if (has_round || m.sat || m.relu || m.nan || m.xorsign_abs) return nullptr;
      return op == AluOp::kEx2 ? &half_kernel<kBF, kX2, AluOp::kEx2>
                               : &half_kernel<kBF, kX2, AluOp::kTanh>;
    case AluOp::kMov:
      if (has_round || m.approx || m.ftz || m.sat || m.relu || m.nan || m.xorsign_abs) {
        return nullptr;
      }
      return &half_kernel<kBF, kX2, AluOp::kMov>;
    default:
      return nullptr;
  }
}

}  // namespace

AluKernel resolve_half(AluOp op, Type type, const Mods& m) {
  switch (type) {
    case Type::kF16:
      return resolve_for<false, false>(op, m);
    case Type::kF16x2:
      return resolve_for<false, true>(op, m);
    case Type::kBF16:
      return resolve_for<true, false>(op, m);
    case Type::kBF16x2:
      return resolve_for<true, true>(op, m);
    default:
      return nullptr;
  }
}

}  // namespace cusnap::emu::ptx::detail

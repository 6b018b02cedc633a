// f32 and f64 instructions.
//
// Precision of the approximate instructions. The emulator evaluates each one in double precision
// with the host libm and rounds the result once to the destination format, so its results are
// within about 0.5 ulp of the exact function: inside the hardware's documented bounds, but not
// bit-identical to the GPU's special-function unit (SFU/MUFU), whose results can differ by a few
// ulp. Bounds quoted from the PTX ISA for the hardware:
//   instruction           hardware (PTX ISA)                        emulator
//   rcp.approx.f32        max 1 ulp                                 1/x in f64, rounded (<= 0.5 ulp
//   + tie) sqrt.approx.f32       max rel. error 2^-23                      sqrt, correctly rounded
//   rsqrt.approx.f32      max rel. error 2^-22.9                    1/sqrt(x) in f64, rounded
//   ex2.approx.f32        max rel. error 2^-22.5 (2^-22 with .ftz)  exp2 in f64, rounded
//   lg2.approx.f32        max abs. error 2^-22.6 for x in [0.5, 2],  log2 in f64, rounded
//                         2^-22 rel. elsewhere
//   sin/cos.approx.f32    max abs. error 2^-20.5 in [-pi, pi],      sin/cos in f64, rounded
//                         2^-20.9 in [-100pi, 100pi]
//   tanh.approx.f32       max rel. error 2^-10.987 (about 11 bits)  tanh in f64, rounded
//   div.approx.f32        a * rcp.approx(b): max 2 ulp for |b| in   same construction: 1/b rounded
//                         [2^-126, 2^126]; 0 for |b| in (2^126,      to f32 and flushed to 0 when
//                         2^128) when a is finite                   subnormal, then a*r rounded
//   div.full.f32          max 2 ulp over the full range             correctly rounded a/b
//   rcp.approx.ftz.f64,   "approximate" (no bound stated)           1/x resp. 1/sqrt(x) in f64
//   rsqrt.approx.f64
// Kernels that depend on the exact SFU bits (rare; e.g. hashing the output of expf) will see
// different results; kernels with tolerances (softmax, reductions) see more accurate ones.
// Special values follow IEEE/PTX: ex2(-inf)=+0, lg2(+-0)=-inf, lg2(x<0)=NaN, rsqrt(+-0)=+-inf,
// sin/cos(+-inf)=NaN.
//
// NaN results: every f32 arithmetic result that is NaN is the canonical 0x7fffffff, as the GPU
// produces. f64 results keep the host's NaN propagation (quieted first NaN operand, or the
// default NaN 0xfff8000000000000 for invalid operations); PTX does not specify f64 NaN payloads
// and this was not compared against hardware.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "alu_internal.h"

namespace cusnap::emu::ptx::detail {
namespace {

template <class F>
inline constexpr bool kIsF32 = std::is_same_v<F, float>;

template <class F>
inline F load(uint64_t v, bool ftz) {
  if constexpr (kIsF32<F>) {
    const float f = as_f32(v);
    return ftz ? flush(f) : f;
  } else {
    const double f = as_f64(v);
    return ftz ? flush(f) : f;
  }
}

template <class F>
inline uint64_t finish(F r, bool ftz, bool sat) {
  if (ftz) r = flush(r);
  if (sat) r = r > F{0} ? (r < F{1} ? r : F{1}) : F{0};  // NaN and -0 -> +0
  if constexpr (kIsF32<F>) {
    if (std::isnan(r)) return kCanonicalNanF32;
  }
  return bits_of(r);
}

template <class F>
inline uint64_t nan_result(F a) {
  if constexpr (kIsF32<F>) {
    return kCanonicalNanF32;
  } else {
    return bits_of(a) | (uint64_t{1} << 51);
  }
}

template <class F>
inline uint64_t minmax(F a, F b, bool is_max, const Mods& m) {
  const MinMaxPick<F> p = minmax_pick(a, b, is_max, m.nan, m.xorsign_abs);
  return p.is_nan ? nan_result(p.value) : bits_of(p.value);
}

// Rounds a double-precision intermediate to f32, flushing results that are subnormal (as the
// hardware's reciprocal unit does inside div.approx).
inline float rcp_approx_flushed(float b) {
  return flush(static_cast<float>(1.0 / static_cast<double>(b)));
}

// .ftz on f32 mul, div and fma flushes a result that is tiny after rounding with an unbounded
// exponent (IEEE 754's "after rounding" tininess), as an H200 does (tests/emulator/ptx/silicon):
// rounded to the subnormal grid, r can be exactly the smallest normal while the unbounded-exponent
// result is below it. `scaled` recomputes the operation with operands scaled by 2^24 - exact,
// since .ftz operands are normal or zero, and free of overflow whenever the result is this small.
template <class Scaled>
inline float flush_tiny(float r, bool ftz, Scaled scaled) {
  constexpr float kMin = std::numeric_limits<float>::min();
  if (!ftz || std::fabs(r) != kMin) return r;
  return std::fabs(scaled()) < kMin * 0x1p24f ? std::copysign(0.0f, r) : r;
}

template <class F, AluOp Op>
void float_kernel(const AluArgs& x) {
  const Mods& m = x.mods;
  const bool ftz = m.ftz;
  const bool sat = m.sat;
  RoundingScope scope(fenv_round(m.round));
  for_lanes(x.mask, [&](int i) {
    if constexpr (Op == AluOp::kMov || Op == AluOp::kCopysign || Op == AluOp::kTestpFinite ||
                  Op == AluOp::kTestpInfinite || Op == AluOp::kTestpNumber ||
                  Op == AluOp::kTestpNotanumber || Op == AluOp::kTestpNormal ||
                  Op == AluOp::kTestpSubnormal) {
      // Pure bit operations: no flushing, no canonicalization.
      const F a = load<F>(x.a[i], false);
      if constexpr (Op == AluOp::kMov) {
        x.d[i] = x.a[i] & (kIsF32<F> ? 0xffffffffu : ~uint64_t{0});
      } else if constexpr (Op == AluOp::kCopysign) {  // d = b with the sign of a
        constexpr uint64_t sign = kIsF32<F> ? 0x80000000u : uint64_t{1} << 63;
        const uint64_t bv = bits_of(load<F>(x.b[i], false));
        x.d[i] = (bv & ~sign) | (bits_of(a) & sign);
      } else {
        const int cls = std::fpclassify(a);
        bool r = false;
        if constexpr (Op == AluOp::kTestpFinite) r = std::isfinite(a);
        if constexpr (Op == AluOp::kTestpInfinite) r = cls == FP_INFINITE;
        if constexpr (Op == AluOp::kTestpNumber) r = cls != FP_NAN;
        if constexpr (Op == AluOp::kTestpNotanumber) r = cls == FP_NAN;
        if constexpr (Op == AluOp::kTestpNormal) r = cls == FP_NORMAL;
        if constexpr (Op == AluOp::kTestpSubnormal) r = cls == FP_SUBNORMAL;
        x.d[i] = r ? 1 : 0;
      }
    } else {
      F a = load<F>(x.a[i], ftz);
      if constexpr (Op == AluOp::kAbs || Op == AluOp::kNeg) {
        if constexpr (kIsF32<F>) {
          const float r = Op == AluOp::kAbs ? std::fabs(a) : -a;
          x.d[i] = finish<F>(r, ftz, false);
        } else if (std::isnan(a)) {
          // f64 NaN: quieted, sign and payload kept - the sign is not touched (an H200,
          // tests/emulator/ptx/silicon).
          x.d[i] = bits_of(a) | (uint64_t{1} << 51);
        } else {  // f64: a sign-bit operation
          x.d[i] = Op == AluOp::kAbs ? bits_of(a) & ~(uint64_t{1} << 63)
                                     : bits_of(a) ^ (uint64_t{1} << 63);
        }
      } else if constexpr (Op == AluOp::kRcp) {
        if (m.approx) {
          x.d[i] = finish<F>(static_cast<F>(1.0 / static_cast<double>(a)), ftz, false);
        } else {
          x.d[i] = finish<F>(F{1} / a, ftz, false);
        }
      } else if constexpr (Op == AluOp::kSqrt) {
        x.d[i] = finish<F>(std::sqrt(a), ftz, false);
      } else if constexpr (Op == AluOp::kRsqrt) {
        x.d[i] = finish<F>(static_cast<F>(1.0 / std::sqrt(static_cast<double>(a))), ftz, false);
      } else if constexpr (Op == AluOp::kSin) {
        x.d[i] = finish<F>(static_cast<F>(std::sin(static_cast<double>(a))), ftz, false);
      } else if constexpr (Op == AluOp::kCos) {
        x.d[i] = finish<F>(static_cast<F>(std::cos(static_cast<double>(a))), ftz, false);
      } else if constexpr (Op == AluOp::kLg2) {
        x.d[i] = finish<F>(static_cast<F>(std::log2(static_cast<double>(a))), ftz, false);
      } else if constexpr (Op == AluOp::kEx2) {
        x.d[i] = finish<F>(static_cast<F>(std::exp2(static_cast<double>(a))), ftz, false);
      } else if constexpr (Op == AluOp::kTanh) {
        x.d[i] = finish<F>(static_cast<F>(std::tanh(static_cast<double>(a))), ftz, false);
      } else {
        const F b = load<F>(x.b[i], ftz);
        if constexpr (Op == AluOp::kAdd) {
          x.d[i] = finish<F>(a + b, ftz, sat);
        } else if constexpr (Op == AluOp::kSub) {
          x.d[i] = finish<F>(a - b, ftz, sat);
        } else if constexpr (Op == AluOp::kMul) {
          F r = a * b;
          if constexpr (kIsF32<F>) {
            r = flush_tiny(r, ftz, [&] {
              return std::fabs(a) <= std::fabs(b) ? (a * 0x1p24f) * b : a * (b * 0x1p24f);
            });
          }
          x.d[i] = finish<F>(r, ftz, sat);
        } else if constexpr (Op == AluOp::kMin || Op == AluOp::kMax) {
          x.d[i] = minmax<F>(a, b, Op == AluOp::kMax, m);
        } else if constexpr (Op == AluOp::kDiv) {
          if constexpr (kIsF32<F>) {
            if (m.approx) {
              x.d[i] = finish<F>(a * rcp_approx_flushed(b), ftz, false);
              return;
            }
          }
          F r = a / b;
          if constexpr (kIsF32<F>) r = flush_tiny(r, ftz, [&] { return (a * 0x1p24f) / b; });
          x.d[i] = finish<F>(r, ftz, false);
        } else if constexpr (Op == AluOp::kFma || Op == AluOp::kMad) {
          const F c = load<F>(x.c[i], ftz);
          F r = std::fma(a, b, c);
          if constexpr (kIsF32<F>) {
            r = flush_tiny(r, ftz, [&] {
              return std::fabs(a) <= std::fabs(b) ? std::fma(a * 0x1p24f, b, c * 0x1p24f)
                                                  : std::fma(a, b * 0x1p24f, c * 0x1p24f);
            });
          }
          x.d[i] = finish<F>(r, ftz, sat);
        } else {
          static_assert(Op == AluOp::kMov, "unhandled float op");
        }
      }
    }
  });
}

template <class F>
AluKernel resolve_for(AluOp op, const Mods& m) {
  constexpr bool f32 = kIsF32<F>;
  const bool rounded = m.round == Round::kNone || m.round == Round::kRn || m.round == Round::kRz ||
                       m.round == Round::kRm || m.round == Round::kRp;
  if (!rounded) return nullptr;
  const bool has_round = m.round != Round::kNone;
  if (m.relu || m.cc || m.use_carry || m.b_signed) return nullptr;
  if ((m.nan || m.xorsign_abs) && !(f32 && (op == AluOp::kMin || op == AluOp::kMax))) {
    return nullptr;
  }
  if (m.full && !(f32 && op == AluOp::kDiv)) return nullptr;
  if (m.sat && !(f32 && (op == AluOp::kAdd || op == AluOp::kSub || op == AluOp::kMul ||
                         op == AluOp::kFma || op == AluOp::kMad))) {
    return nullptr;
  }
  // .ftz: f32 arithmetic, plus the f64 approximations that define it.
  const bool f64_ftz_ok = op == AluOp::kRcp || op == AluOp::kRsqrt;
  if (m.ftz && !f32 && !(f64_ftz_ok && m.approx)) return nullptr;
  switch (op) {
    case AluOp::kMov:
    case AluOp::kCopysign:
    case AluOp::kTestpFinite:
    case AluOp::kTestpInfinite:
    case AluOp::kTestpNumber:
    case AluOp::kTestpNotanumber:
    case AluOp::kTestpNormal:
    case AluOp::kTestpSubnormal:
      if (has_round || m.ftz || m.approx) return nullptr;
      break;
    case AluOp::kAdd:
    case AluOp::kSub:
    case AluOp::kMul:
    case AluOp::kFma:
    case AluOp::kMad:
      if (m.approx) return nullptr;
      break;
    case AluOp::kDiv:
      if (m.approx + m.full + has_round > 1) return nullptr;
      if (!f32 && (m.approx || m.full)) return nullptr;
      break;
    case AluOp::kRcp:
    case AluOp::kSqrt:
      if (m.approx == has_round) return nullptr;  // exactly one of .approx and .rnd
      break;
    case AluOp::kRsqrt:
      if (has_round) return nullptr;
      break;
    case AluOp::kSin:
    case AluOp::kCos:
    case AluOp::kLg2:
    case AluOp::kEx2:
    case AluOp::kTanh:
      if (!f32 || has_round) return nullptr;
      break;
    case AluOp::kAbs:
    case AluOp::kNeg:
    case AluOp::kMin:
    case AluOp::kMax:
      if (has_round || m.approx) return nullptr;
      break;
    default:
      return nullptr;
  }
  switch (op) {
    case AluOp::kMov:
      return &float_kernel<F, AluOp::kMov>;
    case AluOp::kCopysign:
      return &float_kernel<F, AluOp::kCopysign>;
    case AluOp::kTestpFinite:
      return &float_kernel<F, AluOp::kTestpFinite>;
    case AluOp::kTestpInfinite:
      return &float_kernel<F, AluOp::kTestpInfinite>;
    case AluOp::kTestpNumber:
      return &float_kernel<F, AluOp::kTestpNumber>;
    case AluOp::kTestpNotanumber:
      return &float_kernel<F, AluOp::kTestpNotanumber>;
    case AluOp::kTestpNormal:
      return &float_kernel<F, AluOp::kTestpNormal>;
    case AluOp::kTestpSubnormal:
      return &float_kernel<F, AluOp::kTestpSubnormal>;
    case AluOp::kAdd:
      return &float_kernel<F, AluOp::kAdd>;
    case AluOp::kSub:
      return &float_kernel<F, AluOp::kSub>;
    case AluOp::kMul:
      return &float_kernel<F, AluOp::kMul>;
    case AluOp::kFma:
      return &float_kernel<F, AluOp::kFma>;
    case AluOp::kMad:
      return &float_kernel<F, AluOp::kMad>;
    case AluOp::kDiv:
      return &float_kernel<F, AluOp::kDiv>;
    case AluOp::kRcp:
      return &float_kernel<F, AluOp::kRcp>;
    case AluOp::kSqrt:
      return &float_kernel<F, AluOp::kSqrt>;
    case AluOp::kRsqrt:
      return &float_kernel<F, AluOp::kRsqrt>;
    case AluOp::kSin:
      return &float_kernel<F, AluOp::kSin>;
    case AluOp::kCos:
      return &float_kernel<F, AluOp::kCos>;
    case AluOp::kLg2:
      return &float_kernel<F, AluOp::kLg2>;
    case AluOp::kEx2:
      return &float_kernel<F, AluOp::kEx2>;
    case AluOp::kTanh:
      return &float_kernel<F, AluOp::kTanh>;
    case AluOp::kAbs:
      return &float_kernel<F, AluOp::kAbs>;
    case AluOp::kNeg:
      return &float_kernel<F, AluOp::kNeg>;
    case AluOp::kMin:
      return &float_kernel<F, AluOp::kMin>;
    case AluOp::kMax:
      return &float_kernel<F, AluOp::kMax>;
    default:
      return nullptr;
  }
}

}  // namespace

AluKernel resolve_float(AluOp op, Type type, const Mods& m) {
  if (type == Type::kF32) return resolve_for<float>(op, m);
  if (type == Type::kF64) return resolve_for<double>(op, m);
  return nullptr;
}

}  // namespace cusnap::emu::ptx::detail

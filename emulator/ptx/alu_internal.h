// Private helpers shared by the ALU implementation files (alu*.cpp). Not part of the contract.
//
// Every public entry point resolves (op, type, mods) to one kernel function once and the kernel
// loops over the active lanes, so the per-lane work has no dispatch in it.
#pragma once

#include <bit>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <type_traits>

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include "alu.h"

namespace cusnap::emu::ptx::detail {

struct AluArgs {
  const Mods& mods;
  uint32_t mask;
  const uint64_t* a;
  const uint64_t* b;
  const uint64_t* c;
  uint64_t* d;
  CarryFlags* carry;
  const uint64_t* e;
};
using AluKernel = void (*)(const AluArgs&);

// Resolvers per family; nullptr means "not supported". The public alu()/alu_supported() use the
// same resolver, so the capability query can never disagree with the implementation.
AluKernel resolve_int(AluOp op, Type type, const Mods& mods);
AluKernel resolve_float(AluOp op, Type type, const Mods& mods);  // f32, f64
AluKernel resolve_half(AluOp op, Type type, const Mods& mods);   // f16, bf16 and x2 forms

// Forces a value through memory so the compiler cannot move the floating-point operation that
// produces or consumes it across a change of the rounding mode or a read of the status flags.
template <class T>
inline void opaque(T& v) {
  asm volatile("" : "+m"(v));
}

// ---- bit views ----
inline float as_f32(uint64_t v) { return std::bit_cast<float>(static_cast<uint32_t>(v)); }
inline double as_f64(uint64_t v) { return std::bit_cast<double>(v); }
inline uint64_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }
inline uint64_t bits_of(double f) { return std::bit_cast<uint64_t>(f); }

inline constexpr uint32_t kCanonicalNanF32 = 0x7fffffffu;
inline constexpr uint16_t kCanonicalNanF16 = 0x7fff;
inline constexpr uint16_t kCanonicalNanBF16 = 0x7fff;

inline bool is_int_type(Type t) {
  switch (t) {
    case Type::kB8:
    case Type::kB16:
    case Type::kB32:
    case Type::kB64:
    case Type::kU8:
    case Type::kU16:
    case Type::kU32:
    case Type::kU64:
    case Type::kS8:
    case Type::kS16:
    case Type::kS32:
    case Type::kS64:
      return true;
    default:
      return false;
  }
}
inline bool is_signed_type(Type t) {
  return t == Type::kS8 || t == Type::kS16 || t == Type::kS32 || t == Type::kS64;
}

// ---- f32 subnormal flushing (.ftz) ----
inline float flush(float x) {
  return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x;
}
inline double flush(double x) {  // only used where PTX flushes f64 (rcp.approx.ftz.f64)
  return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0, x) : x;
}

// Rounding mode of a Round modifier for float results; kNone and kRna map to nearest-even
// (the callers handle .rna themselves where it is legal).
inline int fenv_round(Round r) {
  switch (r) {
    case Round::kRz:
    case Round::kRzi:
      return FE_TOWARDZERO;
    case Round::kRm:
    case Round::kRmi:
      return FE_DOWNWARD;
    case Round::kRp:
    case Round::kRpi:
      return FE_UPWARD;
    default:
      return FE_TONEAREST;
  }
}

// Sets the host rounding mode for the lifetime of the scope and restores the caller's state.
// The host application may run with any mode (or, after -ffast-math startup code, with the SSE
// flush-to-zero / denormals-are-zero bits set); PTX semantics must depend on neither. On x86-64
// the scope therefore owns the whole MXCSR: rounding control as asked, FTZ and DAZ off, and on
// exit the caller's MXCSR comes back when it had to be changed. Only SSE arithmetic is used
// by the ALU (no long double), so the x87 control word does not matter.
class RoundingScope {
 public:
  explicit RoundingScope(int mode) {
#if defined(__x86_64__)
    saved_ = _mm_getcsr();
    constexpr unsigned kControl = 0x6000u | 0x8000u | 0x0040u;  // RC, FTZ, DAZ
    const unsigned want = (saved_ & ~kControl) | (static_cast<unsigned>(mode) << 3);
    changed_ = want != saved_;
    if (changed_) _mm_setcsr(want);
#else
    saved_ = static_cast<unsigned>(std::fegetround());
    changed_ = static_cast<int>(saved_) != mode;
    if (changed_) std::fesetround(mode);
#endif
  }
  ~RoundingScope() {
    if (!changed_) return;  // the usual case: the host already runs round-to-nearest, no FTZ
#if defined(__x86_64__)
    _mm_setcsr(saved_);
#else
    std::fesetround(static_cast<int>(saved_));
#endif
  }
  RoundingScope(const RoundingScope&) = delete;
  RoundingScope& operator=(const RoundingScope&) = delete;

 private:
  unsigned saved_;
  bool changed_;
};

// p + q rounded to odd: the truncated sum with its least significant bit set when the sum was
// inexact. Rounding such a value once more to any format with at least two fewer significand
// bits gives the correctly rounded exact sum (no double-rounding error). Uses Knuth's TwoSum,
// so the caller must hold a RoundingScope(FE_TONEAREST); p, q and the sum must be finite.
inline double sum_to_odd(double p, double q) {
  const double s = p + q;
  const double bp = s - q;
  const double err = (p - bp) + (q - (s - bp));  // p + q == s + err exactly
  if (err == 0 || !std::isfinite(s)) return s;
  // Truncate toward zero: s itself when the error points away from zero, else one ulp inward.
  double t = (err > 0) == (s > 0) ? s : std::nextafter(s, 0.0);
  return std::bit_cast<double>(std::bit_cast<uint64_t>(t) | 1u);
}

// ---- small IEEE-like formats (f16, bf16, tf32, fp8) ----
struct FloatFormat {
  int exp_bits;
  int man_bits;
  bool has_inf;  // false: e4m3 ("FN"): no infinities, only S.1111.111 is NaN
};
inline constexpr FloatFormat kFmtF16{5, 10, true};
inline constexpr FloatFormat kFmtBF16{8, 7, true};
inline constexpr FloatFormat kFmtTF32{8, 10, true};
inline constexpr FloatFormat kFmtF32{8, 23, true};
inline constexpr FloatFormat kFmtE4M3{4, 3, false};
inline constexpr FloatFormat kFmtE5M2{5, 2, true};

// Exact value of an encoding (NaN for any NaN encoding).
double decode_format(uint32_t bits, const FloatFormat& f);

// Encodes x (taken as exact, or rounded to odd with more than man_bits+2 significand bits)
// with rounding `r` (kRn/kNone: nearest even, kRna: nearest away, kRz, kRm, kRp).
// satfinite: infinities and overflows give the largest finite value; NaN stays NaN.
// NaN encodes as the all-ones positive pattern (0x7fff for f16/bf16, 0x7f for fp8).
uint32_t encode_format(double x, const FloatFormat& f, Round r, bool satfinite);

inline bool is_nan_format(uint32_t bits, const FloatFormat& f) {
  return std::isnan(decode_format(bits, f));
}

// f16 and bf16 arithmetic results: NaN -> canonical 0x7fff, `ftz` flushes subnormal results.
uint16_t round_half(double x, Type t, Round r, bool ftz);
double load_half(uint16_t bits, Type t, bool ftz);

// The operand PTX min/max selects (f32/f64 and f16/bf16 alike): with .xorsign.abs the
// magnitudes compare and the result takes the XOR of the input signs; one NaN operand yields the
// other; -0 is below +0. `is_nan` is set when the result is NaN (both NaN, or .NaN with one NaN);
// `value` is then the NaN operand whose payload an f64 result keeps.
template <class F>
struct MinMaxPick {
  F value;
  bool is_nan;
};
template <class F>
inline MinMaxPick<F> minmax_pick(F a, F b, bool is_max, bool nan_mode, bool xorsign_abs) {
  bool negate = false;
  if (xorsign_abs) {
    negate = std::signbit(a) != std::signbit(b);
    a = std::fabs(a);
    b = std::fabs(b);
  }
  const bool na = std::isnan(a), nb = std::isnan(b);
  if ((na && nb) || ((na || nb) && nan_mode)) return {na ? a : b, true};
  F r;
  if (na || nb) {
    r = na ? b : a;
  } else if (a == b) {  // equal values, or +0 and -0: -0 is the smaller
    r = (std::signbit(a) != is_max) ? a : b;
  } else {
    r = (a < b) != is_max ? a : b;
  }
  return {negate ? -r : r, false};
}

}  // namespace cusnap::emu::ptx::detail

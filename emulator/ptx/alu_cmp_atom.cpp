// setp/set comparisons and atom read-modify-write operations.
//
// Atomics run on host memory with std::atomic_ref (lock-free compare-and-swap loops for the
// operations the host has no single instruction for). atom.add.f32 flushes subnormal inputs and
// results to sign-preserving zero, as the PTX ISA specifies; atom.add.f64 and the f16/bf16 adds
// (.noftz) do not. atom.inc/dec follow PTX: inc: old >= b ? 0 : old + 1;
// dec: (old == 0 || old > b) ? b : old - 1.
#include <atomic>
#include <cmath>

#include "alu_internal.h"

namespace cusnap::emu::ptx {
namespace {

template <class T>
uint32_t compare_int(CmpOp cmp, uint32_t mask, const uint64_t* a, const uint64_t* b) {
  using U = std::make_unsigned_t<T>;
  uint32_t r = 0;
  for_lanes(mask, [&](int i) {
    const T x = static_cast<T>(a[i]), y = static_cast<T>(b[i]);
    const U ux = static_cast<U>(x), uy = static_cast<U>(y);
    bool v = false;
    switch (cmp) {
      case CmpOp::kEq:
        v = x == y;
        break;
      case CmpOp::kNe:
        v = x != y;
        break;
      case CmpOp::kLt:
        v = x < y;
        break;
      case CmpOp::kLe:
        v = x <= y;
        break;
      case CmpOp::kGt:
        v = x > y;
        break;
      case CmpOp::kGe:
        v = x >= y;
        break;
      case CmpOp::kLo:
        v = ux < uy;
        break;
      case CmpOp::kLs:
        v = ux <= uy;
        break;
      case CmpOp::kHi:
        v = ux > uy;
        break;
      case CmpOp::kHs:
        v = ux >= uy;
        break;
      default:
        break;
    }
    if (v) r |= 1u << i;
  });
  return r;
}

bool compare_float_value(CmpOp cmp, double x, double y) {
  const bool unordered = std::isnan(x) || std::isnan(y);
  switch (cmp) {
    case CmpOp::kEq:
      return !unordered && x == y;
    case CmpOp::kNe:
      return !unordered && x != y;
    case CmpOp::kLt:
      return !unordered && x < y;
    case CmpOp::kLe:
      return !unordered && x <= y;
    case CmpOp::kGt:
      return !unordered && x > y;
    case CmpOp::kGe:
      return !unordered && x >= y;
    case CmpOp::kEqu:
      return unordered || x == y;
    case CmpOp::kNeu:
      return unordered || x != y;
    case CmpOp::kLtu:
      return unordered || x < y;
    case CmpOp::kLeu:
      return unordered || x <= y;
    case CmpOp::kGtu:
      return unordered || x > y;
    case CmpOp::kGeu:
      return unordered || x >= y;
    case CmpOp::kNum:
      return !unordered;
    case CmpOp::kNan:
      return unordered;
    default:
      return false;
  }
}

// Exact value of one float lane operand (half: `shift` selects the half of a packed register).
double float_operand(Type t, uint64_t v, bool ftz, int shift) {
  switch (t) {
    case Type::kF32: {
      const float f = detail::as_f32(v);
      return ftz ? detail::flush(f) : f;
    }
    case Type::kF64:
      return detail::as_f64(v);
    case Type::kF16:
    case Type::kF16x2:
      return detail::load_half(static_cast<uint16_t>(v >> shift), Type::kF16, ftz);
    default:
      return detail::load_half(static_cast<uint16_t>(v >> shift), Type::kBF16, ftz);
  }
}

bool is_float_cmp_type(Type t) {
  return t == Type::kF32 || t == Type::kF64 || t == Type::kF16 || t == Type::kBF16 ||
         t == Type::kF16x2 || t == Type::kBF16x2;
}

}  // namespace

bool compare_supported(CmpOp cmp, Type type, const Mods& m) {
  if (m.round != Round::kNone || m.sat || m.approx || m.full || m.relu || m.nan || m.xorsign_abs ||
      m.cc || m.use_carry || m.b_signed || m.satfinite) {
    return false;
  }
  const bool unsigned_alias =
      cmp == CmpOp::kLo || cmp == CmpOp::kLs || cmp == CmpOp::kHi || cmp == CmpOp::kHs;
  if (is_float_cmp_type(type)) {
    if (m.ftz && type != Type::kF32 && type != Type::kF16 && type != Type::kF16x2) return false;
    return !unsigned_alias;
  }
  if (m.ftz) return false;
  if (!detail::is_int_type(type) || type_bits(type) < 16) return false;
  const bool bits = type == Type::kB16 || type == Type::kB32 || type == Type::kB64;
  if (bits) return cmp == CmpOp::kEq || cmp == CmpOp::kNe;
  return cmp <= CmpOp::kHs;
}

void compare_x2(CmpOp cmp, Type type, const Mods& mods, uint32_t mask, const uint64_t* a,
                const uint64_t* b, uint32_t* lo, uint32_t* hi) {
  uint32_t rlo = 0, rhi = 0;
  if (compare_supported(cmp, type, mods) && is_float_cmp_type(type) && type != Type::kF32 &&
      type != Type::kF64) {
    const bool packed = type == Type::kF16x2 || type == Type::kBF16x2;
    detail::RoundingScope scope(FE_TONEAREST);
    for_lanes(mask, [&](int i) {
      if (compare_float_value(cmp, float_operand(type, a[i], mods.ftz, 0),
                              float_operand(type, b[i], mods.ftz, 0))) {
        rlo |= 1u << i;
      }
      if (packed && compare_float_value(cmp, float_operand(type, a[i], mods.ftz, 16),
                                        float_operand(type, b[i], mods.ftz, 16))) {
        rhi |= 1u << i;
      }
    });
  }
  if (lo != nullptr) *lo = rlo;
  if (hi != nullptr) *hi = rhi;
}

uint32_t compare(CmpOp cmp, Type type, const Mods& mods, uint32_t mask, const uint64_t* a,
                 const uint64_t* b) {
  if (!compare_supported(cmp, type, mods)) return 0;
  switch (type) {
    case Type::kF32:
    case Type::kF64: {
      uint32_t r = 0;
      detail::RoundingScope scope(FE_TONEAREST);  // host DAZ must not turn subnormals into 0
      for_lanes(mask, [&](int i) {
        if (compare_float_value(cmp, float_operand(type, a[i], mods.ftz, 0),
                                float_operand(type, b[i], mods.ftz, 0))) {
          r |= 1u << i;
        }
      });
      return r;
    }
    case Type::kF16:
    case Type::kBF16:
    case Type::kF16x2:
    case Type::kBF16x2: {
      uint32_t lo = 0;
      compare_x2(cmp, type, mods, mask, a, b, &lo, nullptr);
      return lo;
    }
    case Type::kB16:
    case Type::kU16:
      return compare_int<uint16_t>(cmp, mask, a, b);
    case Type::kS16:
      return compare_int<int16_t>(cmp, mask, a, b);
    case Type::kB32:
    case Type::kU32:
      return compare_int<uint32_t>(cmp, mask, a, b);
    case Type::kS32:
      return compare_int<int32_t>(cmp, mask, a, b);
    case Type::kB64:
    case Type::kU64:
      return compare_int<uint64_t>(cmp, mask, a, b);
    case Type::kS64:
      return compare_int<int64_t>(cmp, mask, a, b);
    default:
      return 0;
  }
}

// ---- atomics ----
namespace {

// Applies `f(old) -> new` atomically; returns the old value.
template <class U, class F>
U cas_loop(void* address, F&& f) {
  std::atomic_ref<U> ref(*static_cast<U*>(address));
  U old = ref.load(std::memory_order_relaxed);
  while (!ref.compare_exchange_weak(old, f(old), std::memory_order_seq_cst,
                                    std::memory_order_relaxed)) {
  }
  return old;
}

template <class U>
uint64_t int_atomic(AtomOp op, bool is_signed, void* address, U v, U cmp) {
  using S = std::make_signed_t<U>;
  std::atomic_ref<U> ref(*static_cast<U*>(address));
  switch (op) {
    case AtomOp::kAdd:
      return ref.fetch_add(v);
    case AtomOp::kAnd:
      return ref.fetch_and(v);
    case AtomOp::kOr:
      return ref.fetch_or(v);
    case AtomOp::kXor:
      return ref.fetch_xor(v);
    case AtomOp::kExch:
      return ref.exchange(v);
    case AtomOp::kCas: {
      U expected = cmp;
      ref.compare_exchange_strong(expected, v);
      return expected;  // the old value either way
    }
    case AtomOp::kMin:
      return cas_loop<U>(address, [&](U old) {
        if (is_signed) return static_cast<S>(v) < static_cast<S>(old) ? v : old;
        return v < old ? v : old;
      });
    case AtomOp::kMax:
      return cas_loop<U>(address, [&](U old) {
        if (is_signed) return static_cast<S>(v) > static_cast<S>(old) ? v : old;
        return v > old ? v : old;
      });
    case AtomOp::kInc:
      return cas_loop<U>(address, [&](U old) { return old >= v ? U{0} : static_cast<U>(old + 1); });
    case AtomOp::kDec:
      return cas_loop<U>(
          address, [&](U old) { return (old == 0 || old > v) ? v : static_cast<U>(old - 1); });
  }
  return ~uint64_t{0};
}

}  // namespace

namespace {

// atom.add on f16/bf16 (U = uint16_t) and their x2 pairs (U = uint32_t): the sum is the ALU's
// own correctly rounded add (.rn, no flushing: the .noftz semantics).
template <class U>
uint64_t half_atomic_add(Type type, void* address, uint64_t operand) {
  const Mods m;
  const uint64_t b = static_cast<U>(operand);
  return cas_loop<U>(address, [&](U old) {
    const uint64_t a = old;
    uint64_t d = 0;
    alu(AluOp::kAdd, type, m, 1u, &a, &b, nullptr, &d);
    return static_cast<U>(d);
  });
}

}  // namespace

bool atomic_supported(AtomOp op, Type type) {
  switch (type) {
    case Type::kB32:
    case Type::kB64:
      return op == AtomOp::kAnd || op == AtomOp::kOr || op == AtomOp::kXor || op == AtomOp::kExch ||
             op == AtomOp::kCas;
    case Type::kU32:
      return op != AtomOp::kAnd && op != AtomOp::kOr && op != AtomOp::kXor;
    case Type::kU64:
      return op == AtomOp::kAdd || op == AtomOp::kMin || op == AtomOp::kMax ||
             op == AtomOp::kExch || op == AtomOp::kCas;
    case Type::kS32:
    case Type::kS64:
      return op == AtomOp::kAdd || op == AtomOp::kMin || op == AtomOp::kMax;
    case Type::kB16:
      return op == AtomOp::kCas || op == AtomOp::kExch;
    case Type::kF32:
    case Type::kF64:
      return op == AtomOp::kAdd || op == AtomOp::kExch;
    case Type::kF16:
    case Type::kBF16:
    case Type::kF16x2:
    case Type::kBF16x2:
      return op == AtomOp::kAdd;
    default:
      return false;
  }
}

uint64_t atomic_rmw(AtomOp op, Type type, void* address, uint64_t operand, uint64_t compare_value) {
  if (!atomic_supported(op, type)) return ~uint64_t{0};
  switch (type) {
    case Type::kB16:
      return int_atomic<uint16_t>(op, false, address, static_cast<uint16_t>(operand),
                                  static_cast<uint16_t>(compare_value));
    case Type::kB32:
    case Type::kU32:
    case Type::kS32:
      return int_atomic<uint32_t>(op, type == Type::kS32, address, static_cast<uint32_t>(operand),
                                  static_cast<uint32_t>(compare_value));
    case Type::kB64:
    case Type::kU64:
    case Type::kS64:
      return int_atomic<uint64_t>(op, type == Type::kS64, address, operand, compare_value);
    case Type::kF32: {
      if (op == AtomOp::kExch)
        return std::atomic_ref<uint32_t>(*static_cast<uint32_t*>(address))
            .exchange(static_cast<uint32_t>(operand));
      detail::RoundingScope scope(FE_TONEAREST);
      const float v = detail::flush(detail::as_f32(operand));
      return cas_loop<uint32_t>(address, [&](uint32_t old) {
        float r = detail::flush(detail::flush(std::bit_cast<float>(old)) + v);
        return std::isnan(r) ? detail::kCanonicalNanF32 : std::bit_cast<uint32_t>(r);
      });
    }
    case Type::kF64: {
      if (op == AtomOp::kExch) {
        return std::atomic_ref<uint64_t>(*static_cast<uint64_t*>(address)).exchange(operand);
      }
      detail::RoundingScope scope(FE_TONEAREST);
      const double v = detail::as_f64(operand);
      return cas_loop<uint64_t>(address, [&](uint64_t old) {
        return std::bit_cast<uint64_t>(std::bit_cast<double>(old) + v);
      });
    }
    case Type::kF16:
    case Type::kBF16:
      return half_atomic_add<uint16_t>(type, address, operand);
    case Type::kF16x2:
    case Type::kBF16x2:
      return half_atomic_add<uint32_t>(type, address, operand);
    default:
      return ~uint64_t{0};
  }
}

}  // namespace cusnap::emu::ptx

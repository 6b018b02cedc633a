// Integer and bitwise instructions (PTX ISA "Integer Arithmetic" and "Logic and Shift").
//
// Choices where PTX leaves the result to the hardware (not verified on a GPU from this code):
// - div/rem by zero: ptxas lowers 32-bit div/rem to a reciprocal sequence that ends with
//   "if divisor == 0: result = ~divisor", i.e. all ones. We return all ones (0xffffffff for
//   .u32/.s32, likewise for 16/64-bit) for both div and rem, signed or not.
// - div.s INT_MIN / -1 wraps to INT_MIN, rem.s INT_MIN % -1 is 0.
// - Carry flag: add.cc/addc write the carry-out; sub.cc/subc write the BORROW (1 when the
//   subtraction wrapped), which is what makes `sub.cc` + `subc` chains compute multi-word
//   differences as the PTX ISA defines `subc`: d = a - (b + CC.CF).
#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "alu_internal.h"

namespace cusnap::emu::ptx::detail {
namespace {

__extension__ typedef __int128 I128;
__extension__ typedef unsigned __int128 U128;

template <class T>
using Unsigned = std::make_unsigned_t<T>;
template <class T>
using Signed = std::make_signed_t<T>;
template <class T>
inline constexpr int kBits = static_cast<int>(sizeof(T) * 8);
template <class T>
inline constexpr bool kSigned = std::is_signed_v<T>;

template <class T>
inline T in(uint64_t v) {
  return static_cast<T>(v);
}
template <class T>
inline uint64_t out(T v) {
  return static_cast<Unsigned<T>>(v);
}

// Mask of the low `bits` bits of a 64-bit register value.
constexpr uint64_t low_mask(int bits) {
  return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
}

template <class T>
inline bool negative(T v) {
  if constexpr (std::is_signed_v<T>)
    return v < 0;
  else
    return false;
}

// Exact wide value of a lane operand (sign- or zero-extended by T).
template <class T>
inline I128 wide(T v) {
  return static_cast<I128>(v);
}

// Bits of the exact 2N-bit product a*b. The multiplication is done on unsigned 128-bit values:
// the sign-extended operands' product modulo 2^128 has the exact product's two's-complement
// bits, whereas a signed I128 multiply overflows (undefined) for u64 operands near 2^64.
template <class T>
inline U128 product(T a, T b) {
  return static_cast<U128>(wide(a)) * static_cast<U128>(wide(b));
}

template <class T>
inline T saturate(I128 v) {
  constexpr I128 lo = static_cast<I128>(std::numeric_limits<T>::min());
  constexpr I128 hi = static_cast<I128>(std::numeric_limits<T>::max());
  return static_cast<T>(v < lo ? lo : v > hi ? hi : v);
}

inline bool carry_in(const AluArgs& x, int lane) {
  return x.mods.use_carry && x.carry != nullptr && ((x.carry->bits >> lane) & 1u) != 0;
}
inline void carry_out(const AluArgs& x, int lane, bool value) {
  if (!x.mods.cc || x.carry == nullptr) return;
  const uint32_t bit = 1u << lane;
  x.carry->bits = value ? (x.carry->bits | bit) : (x.carry->bits & ~bit);
}

// `lo + addend + cin` in the width of T, with the carry-out of that addition.
template <class T>
inline T add_with_carry(const AluArgs& x, int lane, T lo, T addend) {
  const U128 sum = static_cast<U128>(static_cast<Unsigned<T>>(lo)) +
                   static_cast<Unsigned<T>>(addend) + (carry_in(x, lane) ? 1 : 0);
  carry_out(x, lane, (sum >> kBits<T>) != 0);
  return static_cast<T>(static_cast<Unsigned<T>>(sum));
}

template <class T>
inline I128 mul24_product(T a, T b) {
  if constexpr (kSigned<T>) {
    const int64_t a24 = static_cast<int32_t>(static_cast<uint32_t>(a) << 8) >> 8;
    const int64_t b24 = static_cast<int32_t>(static_cast<uint32_t>(b) << 8) >> 8;
    return a24 * b24;
  } else {
    return static_cast<I128>(uint64_t{static_cast<uint32_t>(a) & 0xffffffu} *
                             (static_cast<uint32_t>(b) & 0xffffffu));
  }
}

template <class T>
inline T div_int(T a, T b) {
  if (b == 0) return static_cast<T>(~Unsigned<T>{0});
  if constexpr (kSigned<T>) {
    if (b == -1) return static_cast<T>(Unsigned<T>{0} - static_cast<Unsigned<T>>(a));
  }
  return static_cast<T>(a / b);
}
template <class T>
inline T rem_int(T a, T b) {
  if (b == 0) return static_cast<T>(~Unsigned<T>{0});
  if constexpr (kSigned<T>) {
    if (b == -1) return 0;
  }
  return static_cast<T>(a % b);
}

// Position and length: the ISA keeps their low 8 bits, and so does silicon for the 32-bit forms;
// for the 64-bit forms an H200 uses them unmasked (measured up to 511: tests/emulator/ptx/silicon),
// which is what bfe_bits/bfi_bits pass on. Both are 64-bit here so pos + len cannot wrap.
template <class T>
inline uint64_t bf_operand(uint64_t v) {
  return kBits<T> == 64 ? static_cast<uint32_t>(v) : static_cast<uint32_t>(v) & 0xffu;
}

template <class T>
inline T bfe(T a, uint64_t pos, uint64_t len) {
  constexpr uint64_t msb = kBits<T> - 1;
  using UT = Unsigned<T>;
  const UT ua = static_cast<UT>(a);
  UT sbit = 0;
  if (kSigned<T> && len != 0) sbit = (ua >> std::min(pos + len - 1, msb)) & 1u;
  UT d = 0;
  for (uint64_t i = 0; i <= msb; ++i) {
    const UT bit = (i < len && pos + i <= msb) ? (ua >> (pos + i)) & 1u : sbit;
    d |= static_cast<UT>(bit << i);
  }
  return static_cast<T>(d);
}

template <class T>
inline T bfi(T insert, T base, uint64_t pos, uint64_t len) {
  constexpr uint64_t msb = kBits<T> - 1;
  using UT = Unsigned<T>;
  UT f = static_cast<UT>(base);
  for (uint64_t i = 0; i < len && pos + i <= msb; ++i) {
    const UT bit = static_cast<UT>(UT{1} << (pos + i));
    f = ((static_cast<UT>(insert) >> i) & 1u) ? (f | bit) : (f & static_cast<UT>(~bit));
  }
  return static_cast<T>(f);
}

template <class T>
inline uint32_t bfind(T a, bool shift_amount) {
  using UT = Unsigned<T>;
  UT v = static_cast<UT>(a);
  if (negative(a)) v = static_cast<UT>(~v);
  if (v == 0) return 0xffffffffu;
  const uint32_t pos = static_cast<uint32_t>(kBits<T> - 1 - std::countl_zero(v));
  return shift_amount ? static_cast<uint32_t>(kBits<T> - 1) - pos : pos;
}

inline uint32_t fns(uint32_t mask, uint32_t base, int32_t offset) {
  if (offset == 0) return (base < 32 && ((mask >> base) & 1u)) ? base : 0xffffffffu;
  int64_t pos = base;
  int64_t count = (offset > 0 ? int64_t{offset} : -int64_t{offset}) - 1;
  const int inc = offset > 0 ? 1 : -1;
  for (; pos >= 0 && pos < 32; pos += inc) {
    if ((mask >> pos) & 1u) {
      if (count == 0) return static_cast<uint32_t>(pos);
      --count;
    }
  }
  return 0xffffffffu;
}

inline uint32_t lop3(uint32_t a, uint32_t b, uint32_t c, uint32_t lut) {
  uint32_t r = 0;
  for (int k = 0; k < 8; ++k) {
    if (((lut >> k) & 1u) == 0) continue;
    r |= ((k & 4) ? a : ~a) & ((k & 2) ? b : ~b) & ((k & 1) ? c : ~c);
  }
  return r;
}

// prmt source byte indices for d.b3..d.b0 (packed as 4 nibbles, b0 in the low nibble) per mode
// and selector c[1:0] — the table of the PTX ISA's prmt description.
constexpr uint16_t kPrmtModes[6][4] = {
    {0x3210, 0x4321, 0x5432, 0x6543},  // f4e
    {0x5670, 0x6701, 0x7012, 0x0123},  // b4e
    {0x0000, 0x1111, 0x2222, 0x3333},  // rc8
    {0x3210, 0x3211, 0x3222, 0x3333},  // ecl
    {0x0000, 0x1110, 0x2210, 0x3210},  // ecr
    {0x1010, 0x3232, 0x1010, 0x3232},  // rc16
};

inline uint32_t prmt(AluOp op, uint32_t a, uint32_t b, uint32_t c) {
  const uint64_t bytes = (uint64_t{b} << 32) | a;
  uint32_t d = 0;
  if (op == AluOp::kPrmt) {
    for (int i = 0; i < 4; ++i) {
      const uint32_t sel = (c >> (4 * i)) & 0xfu;
      uint32_t byte = static_cast<uint32_t>(bytes >> (8 * (sel & 7u))) & 0xffu;
      if (sel & 8u) byte = (byte & 0x80u) ? 0xffu : 0u;
      d |= byte << (8 * i);
    }
    return d;
  }
  const int mode = static_cast<int>(op) - static_cast<int>(AluOp::kPrmtF4e);
  const uint16_t pattern = kPrmtModes[mode][c & 3u];
  for (int i = 0; i < 4; ++i) {
    const uint32_t sel = (pattern >> (4 * i)) & 0x7u;
    d |= (static_cast<uint32_t>(bytes >> (8 * sel)) & 0xffu) << (8 * i);
  }
  return d;
}

inline int32_t dot_part(uint32_t v, int width, int index, bool is_signed) {
  const uint32_t field = (v >> (width * index)) & ((1u << width) - 1);
  if (!is_signed) return static_cast<int32_t>(field);
  const uint32_t sign = 1u << (width - 1);
  return static_cast<int32_t>(field ^ sign) - static_cast<int32_t>(sign);
}

template <class T, AluOp Op>
void int_kernel(const AluArgs& x) {
  using UT = Unsigned<T>;
  constexpr int N = kBits<T>;
  const Mods& m = x.mods;
  // Fast path: the plain add, its modifiers tested once per warp instead of once per lane.
  if constexpr (Op == AluOp::kAdd) {
    if (!m.cc && !m.use_carry && !m.sat) {
      for_lanes(x.mask, [&](int i) {
        x.d[i] = out<T>(static_cast<T>(
            static_cast<UT>(static_cast<UT>(in<T>(x.a[i])) + static_cast<UT>(in<T>(x.b[i])))));
      });
      return;
    }
  }
  for_lanes(x.mask, [&](int i) {
    const T a = in<T>(x.a[i]);
    if constexpr (Op == AluOp::kMov) {
      x.d[i] = out<T>(a);
    } else if constexpr (Op == AluOp::kAbs) {
      x.d[i] = out<T>(negative(a) ? static_cast<T>(UT{0} - static_cast<UT>(a)) : a);
    } else if constexpr (Op == AluOp::kNeg) {
      x.d[i] = out<T>(static_cast<T>(UT{0} - static_cast<UT>(a)));
    } else if constexpr (Op == AluOp::kNot) {
      x.d[i] = out<T>(static_cast<T>(~static_cast<UT>(a)));
    } else if constexpr (Op == AluOp::kCnot) {
      x.d[i] = a == 0 ? 1 : 0;
    } else if constexpr (Op == AluOp::kBrev) {
      UT v = static_cast<UT>(a), r = 0;
      for (int k = 0; k < N; ++k) r |= static_cast<UT>(((v >> k) & 1u) << (N - 1 - k));
      x.d[i] = out<T>(static_cast<T>(r));
    } else if constexpr (Op == AluOp::kClz) {
      x.d[i] = static_cast<uint32_t>(std::countl_zero(static_cast<UT>(a)));
    } else if constexpr (Op == AluOp::kPopc) {
      x.d[i] = static_cast<uint32_t>(std::popcount(static_cast<UT>(a)));
    } else if constexpr (Op == AluOp::kBfind || Op == AluOp::kBfindShiftAmt) {
      x.d[i] = bfind<T>(a, Op == AluOp::kBfindShiftAmt);
    } else {
      const T b = in<T>(x.b[i]);
      if constexpr (Op == AluOp::kAdd) {
        if (m.cc || m.use_carry) {
          x.d[i] = out<T>(add_with_carry<T>(x, i, a, b));
        } else if (m.sat) {
          x.d[i] = out<T>(saturate<T>(wide(a) + wide(b)));
        } else {
          x.d[i] = out<T>(static_cast<T>(static_cast<UT>(static_cast<UT>(a) + static_cast<UT>(b))));
        }
      } else if constexpr (Op == AluOp::kSub) {
        if (m.cc || m.use_carry) {
          const U128 ua = static_cast<UT>(a),
                     sub = U128{static_cast<UT>(b)} + (carry_in(x, i) ? 1 : 0);
          carry_out(x, i, ua < sub);
          x.d[i] = out<T>(static_cast<T>(static_cast<UT>(ua - sub)));
        } else if (m.sat) {
          x.d[i] = out<T>(saturate<T>(wide(a) - wide(b)));
        } else {
          x.d[i] = out<T>(static_cast<T>(static_cast<UT>(static_cast<UT>(a) - static_cast<UT>(b))));
        }
      } else if constexpr (Op == AluOp::kMulLo) {
        x.d[i] = out<T>(static_cast<T>(static_cast<UT>(product(a, b))));
      } else if constexpr (Op == AluOp::kMulHi) {
        x.d[i] = out<T>(static_cast<T>(static_cast<UT>(product(a, b) >> N)));
      } else if constexpr (Op == AluOp::kMulWide) {
        x.d[i] = static_cast<uint64_t>(product(a, b)) & low_mask(2 * N);
      } else if constexpr (Op == AluOp::kMul24Lo || Op == AluOp::kMul24Hi) {
        const I128 t = mul24_product<T>(a, b);
        const uint32_t r =
            static_cast<uint32_t>(static_cast<U128>(t) >> (Op == AluOp::kMul24Hi ? 16 : 0));
        x.d[i] = r;
      } else if constexpr (Op == AluOp::kDiv) {
        x.d[i] = out<T>(div_int<T>(a, b));
      } else if constexpr (Op == AluOp::kRem) {
        x.d[i] = out<T>(rem_int<T>(a, b));
      } else if constexpr (Op == AluOp::kMin || Op == AluOp::kMax) {
        T r = (Op == AluOp::kMin) == (a < b) ? a : b;
        if (m.relu && negative(r)) r = 0;
        x.d[i] = out<T>(r);
      } else if constexpr (Op == AluOp::kAnd) {
        x.d[i] = out<T>(static_cast<T>(static_cast<UT>(a) & static_cast<UT>(b)));
      } else if constexpr (Op == AluOp::kOr) {
        x.d[i] = out<T>(static_cast<T>(static_cast<UT>(a) | static_cast<UT>(b)));
      } else if constexpr (Op == AluOp::kXor) {
        x.d[i] = out<T>(static_cast<T>(static_cast<UT>(a) ^ static_cast<UT>(b)));
      } else if constexpr (Op == AluOp::kShl) {
        const uint32_t s = static_cast<uint32_t>(x.b[i]);
        x.d[i] = out<T>(s >= static_cast<uint32_t>(N)
                            ? T{0}
                            : static_cast<T>(static_cast<UT>(static_cast<UT>(a) << s)));
      } else if constexpr (Op == AluOp::kShr) {
        const uint32_t s = static_cast<uint32_t>(x.b[i]);
        if constexpr (kSigned<T>) {
          x.d[i] = out<T>(static_cast<T>(a >> std::min<uint32_t>(s, N - 1)));
        } else {
          x.d[i] = out<T>(s >= static_cast<uint32_t>(N) ? T{0} : static_cast<T>(a >> s));
        }
      } else if constexpr (Op == AluOp::kShfL || Op == AluOp::kShfR || Op == AluOp::kShfLClamp ||
                           Op == AluOp::kShfRClamp) {
        const uint32_t sel = static_cast<uint32_t>(x.c[i]);
        const bool clamp = Op == AluOp::kShfLClamp || Op == AluOp::kShfRClamp;
        const uint32_t n = clamp ? std::min<uint32_t>(sel, 32) : (sel & 31u);
        const uint64_t both = (uint64_t{static_cast<uint32_t>(b)} << 32) | static_cast<uint32_t>(a);
        if constexpr (Op == AluOp::kShfL || Op == AluOp::kShfLClamp) {
          x.d[i] = static_cast<uint32_t>((both << n) >> 32);
        } else {
          x.d[i] = static_cast<uint32_t>(both >> n);
        }
      } else if constexpr (Op == AluOp::kBfe) {
        x.d[i] = out<T>(bfe<T>(a, bf_operand<T>(x.b[i]), bf_operand<T>(x.c[i])));
      } else if constexpr (Op == AluOp::kBfi) {
        x.d[i] = out<T>(bfi<T>(a, b, bf_operand<T>(x.c[i]), bf_operand<T>(x.e[i])));
      } else if constexpr (Op == AluOp::kFns) {
        x.d[i] = fns(static_cast<uint32_t>(a), static_cast<uint32_t>(b),
                     static_cast<int32_t>(static_cast<uint32_t>(x.c[i])));
      } else if constexpr (Op == AluOp::kLop3) {
        // e holds the LUT (alu.h); without it the call violates the contract: all ones.
        x.d[i] = x.e == nullptr
                     ? ~uint64_t{0}
                     : lop3(static_cast<uint32_t>(a), static_cast<uint32_t>(b),
                            static_cast<uint32_t>(x.c[i]), static_cast<uint32_t>(x.e[i]) & 0xffu);
      } else if constexpr (Op >= AluOp::kPrmt && Op <= AluOp::kPrmtRc16) {
        x.d[i] = prmt(Op, static_cast<uint32_t>(a), static_cast<uint32_t>(b),
                      static_cast<uint32_t>(x.c[i]));
      } else if constexpr (Op == AluOp::kDp4a || Op == AluOp::kDp2aLo || Op == AluOp::kDp2aHi) {
        const uint32_t ua = static_cast<uint32_t>(a), ub = static_cast<uint32_t>(b);
        uint32_t acc = static_cast<uint32_t>(x.c[i]);
        if constexpr (Op == AluOp::kDp4a) {
          for (int k = 0; k < 4; ++k) {
            acc += static_cast<uint32_t>(dot_part(ua, 8, k, kSigned<T>) *
                                         dot_part(ub, 8, k, m.b_signed));
          }
        } else {
          const int first = Op == AluOp::kDp2aHi ? 2 : 0;
          for (int k = 0; k < 2; ++k) {
            acc += static_cast<uint32_t>(dot_part(ua, 16, k, kSigned<T>) *
                                         dot_part(ub, 8, first + k, m.b_signed));
          }
        }
        x.d[i] = acc;
      } else {
        const T c = in<T>(x.c[i]);
        if constexpr (Op == AluOp::kSad) {
          const I128 diff = wide(a) - wide(b);
          const U128 ad = static_cast<U128>(diff < 0 ? -diff : diff);
          x.d[i] = out<T>(static_cast<T>(static_cast<UT>(ad + static_cast<UT>(c))));
        } else if constexpr (Op == AluOp::kMadLo || Op == AluOp::kMadHi) {
          const U128 p = product(a, b);
          const T part = static_cast<T>(static_cast<UT>(Op == AluOp::kMadHi ? p >> N : p));
          if (m.cc || m.use_carry) {
            x.d[i] = out<T>(add_with_carry<T>(x, i, part, c));
          } else if (m.sat) {  // mad.hi.sat.s32
            x.d[i] = out<T>(saturate<T>(wide(part) + wide(c)));
          } else {
            x.d[i] =
                out<T>(static_cast<T>(static_cast<UT>(static_cast<UT>(part) + static_cast<UT>(c))));
          }
        } else if constexpr (Op == AluOp::kMadWide) {
          const U128 p = product(a, b);
          x.d[i] = static_cast<uint64_t>(p + x.c[i]) & low_mask(2 * N);
        } else if constexpr (Op == AluOp::kMad24Lo || Op == AluOp::kMad24Hi) {
          const I128 t = mul24_product<T>(a, b);
          const uint32_t part =
              static_cast<uint32_t>(static_cast<U128>(t) >> (Op == AluOp::kMad24Hi ? 16 : 0));
          if (m.sat) {
            x.d[i] = out<T>(saturate<T>(wide(static_cast<T>(part)) + wide(c)));
          } else {
            x.d[i] = static_cast<uint32_t>(part + static_cast<uint32_t>(c));
          }
        } else {
          static_assert(Op == AluOp::kMov, "unhandled integer op");
        }
      }
    }
  });
}

// Predicates: values are 0/1.
template <AluOp Op>
void pred_kernel(const AluArgs& x) {
  for_lanes(x.mask, [&](int i) {
    const uint64_t a = x.a[i] & 1u;
    if constexpr (Op == AluOp::kNot)
      x.d[i] = a ^ 1u;
    else if constexpr (Op == AluOp::kMov)
      x.d[i] = a;
    else if constexpr (Op == AluOp::kAnd)
      x.d[i] = a & x.b[i] & 1u;
    else if constexpr (Op == AluOp::kOr)
      x.d[i] = (a | x.b[i]) & 1u;
    else if constexpr (Op == AluOp::kXor)
      x.d[i] = (a ^ x.b[i]) & 1u;
  });
}

// b128 mov only: lanes hold 128-bit values as two consecutive uint64_t? Not representable in the
// contract, so b128 is unsupported everywhere.

template <class T>
AluKernel resolve_for(AluOp op, const Mods& m, Type type) {
  constexpr int N = kBits<T>;
  constexpr bool is_signed = kSigned<T>;
  const bool is_bits =
      type == Type::kB8 || type == Type::kB16 || type == Type::kB32 || type == Type::kB64;
  const bool carry = m.cc || m.use_carry;
  const bool arith_ok = N >= 16 && !is_bits;
  switch (op) {
    case AluOp::kMov:
      return &int_kernel<T, AluOp::kMov>;
    case AluOp::kAdd:
    case AluOp::kSub:
      if (!arith_ok) return nullptr;
      if (carry && (N < 32 || m.sat)) return nullptr;
      if (m.sat && !(is_signed && N == 32)) return nullptr;
      return op == AluOp::kAdd ? &int_kernel<T, AluOp::kAdd> : &int_kernel<T, AluOp::kSub>;
    case AluOp::kMulLo:
      return arith_ok ? &int_kernel<T, AluOp::kMulLo> : nullptr;
    case AluOp::kMulHi:
      return arith_ok ? &int_kernel<T, AluOp::kMulHi> : nullptr;
    case AluOp::kMulWide:
      return arith_ok && N <= 32 ? &int_kernel<T, AluOp::kMulWide> : nullptr;
    case AluOp::kMadLo:
    case AluOp::kMadHi: {
      if (!arith_ok) return nullptr;
      if (carry && (N < 32 || m.sat)) return nullptr;
      if (m.sat && !(op == AluOp::kMadHi && is_signed && N == 32)) return nullptr;
      return op == AluOp::kMadLo ? &int_kernel<T, AluOp::kMadLo> : &int_kernel<T, AluOp::kMadHi>;
    }
    case AluOp::kMadWide:
      return arith_ok && N <= 32 && !carry ? &int_kernel<T, AluOp::kMadWide> : nullptr;
    case AluOp::kMul24Lo:
    case AluOp::kMul24Hi:
    case AluOp::kMad24Lo:
    case AluOp::kMad24Hi:
      if (N != 32 || is_bits) return nullptr;
      if (m.sat && !(op == AluOp::kMad24Hi && is_signed)) return nullptr;
      if (op == AluOp::kMul24Lo) return &int_kernel<T, AluOp::kMul24Lo>;
      if (op == AluOp::kMul24Hi) return &int_kernel<T, AluOp::kMul24Hi>;
      if (op == AluOp::kMad24Lo) return &int_kernel<T, AluOp::kMad24Lo>;
      return &int_kernel<T, AluOp::kMad24Hi>;
    case AluOp::kSad:
      return arith_ok ? &int_kernel<T, AluOp::kSad> : nullptr;
    case AluOp::kDiv:
      return arith_ok ? &int_kernel<T, AluOp::kDiv> : nullptr;
    case AluOp::kRem:
      return arith_ok ? &int_kernel<T, AluOp::kRem> : nullptr;
    case AluOp::kAbs:
      return arith_ok && is_signed ? &int_kernel<T, AluOp::kAbs> : nullptr;
    case AluOp::kNeg:
      return arith_ok && is_signed ? &int_kernel<T, AluOp::kNeg> : nullptr;
    case AluOp::kMin:
    case AluOp::kMax:
      if (!arith_ok) return nullptr;
      if (m.relu && !(is_signed && N <= 32)) return nullptr;
      return op == AluOp::kMin ? &int_kernel<T, AluOp::kMin> : &int_kernel<T, AluOp::kMax>;
    case AluOp::kAnd:
      return N >= 16 ? &int_kernel<T, AluOp::kAnd> : nullptr;
    case AluOp::kOr:
      return N >= 16 ? &int_kernel<T, AluOp::kOr> : nullptr;
    case AluOp::kXor:
      return N >= 16 ? &int_kernel<T, AluOp::kXor> : nullptr;
    case AluOp::kNot:
      return N >= 16 ? &int_kernel<T, AluOp::kNot> : nullptr;
    case AluOp::kCnot:
      return N >= 16 ? &int_kernel<T, AluOp::kCnot> : nullptr;
    case AluOp::kShl:
      return N >= 16 ? &int_kernel<T, AluOp::kShl> : nullptr;
    case AluOp::kShr:
      return N >= 16 ? &int_kernel<T, AluOp::kShr> : nullptr;
    case AluOp::kShfL:
      return N == 32 ? &int_kernel<T, AluOp::kShfL> : nullptr;
    case AluOp::kShfR:
      return N == 32 ? &int_kernel<T, AluOp::kShfR> : nullptr;
    case AluOp::kShfLClamp:
      return N == 32 ? &int_kernel<T, AluOp::kShfLClamp> : nullptr;
    case AluOp::kShfRClamp:
      return N == 32 ? &int_kernel<T, AluOp::kShfRClamp> : nullptr;
    case AluOp::kBfe:
      return N >= 32 && !is_bits ? &int_kernel<T, AluOp::kBfe> : nullptr;
    case AluOp::kBfi:
      return N >= 32 ? &int_kernel<T, AluOp::kBfi> : nullptr;
    case AluOp::kBrev:
      return N >= 32 ? &int_kernel<T, AluOp::kBrev> : nullptr;
    case AluOp::kClz:
      return N >= 32 ? &int_kernel<T, AluOp::kClz> : nullptr;
    case AluOp::kPopc:
      return N >= 32 ? &int_kernel<T, AluOp::kPopc> : nullptr;
    case AluOp::kBfind:
      return N >= 32 && !is_bits ? &int_kernel<T, AluOp::kBfind> : nullptr;
    case AluOp::kBfindShiftAmt:
      return N >= 32 && !is_bits ? &int_kernel<T, AluOp::kBfindShiftAmt> : nullptr;
    case AluOp::kFns:
      return N == 32 ? &int_kernel<T, AluOp::kFns> : nullptr;
    case AluOp::kLop3:
      return N == 32 ? &int_kernel<T, AluOp::kLop3> : nullptr;
    case AluOp::kPrmt:
      return N == 32 ? &int_kernel<T, AluOp::kPrmt> : nullptr;
    case AluOp::kPrmtF4e:
      return N == 32 ? &int_kernel<T, AluOp::kPrmtF4e> : nullptr;
    case AluOp::kPrmtB4e:
      return N == 32 ? &int_kernel<T, AluOp::kPrmtB4e> : nullptr;
    case AluOp::kPrmtRc8:
      return N == 32 ? &int_kernel<T, AluOp::kPrmtRc8> : nullptr;
    case AluOp::kPrmtEcl:
      return N == 32 ? &int_kernel<T, AluOp::kPrmtEcl> : nullptr;
    case AluOp::kPrmtEcr:
      return N == 32 ? &int_kernel<T, AluOp::kPrmtEcr> : nullptr;
    case AluOp::kPrmtRc16:
      return N == 32 ? &int_kernel<T, AluOp::kPrmtRc16> : nullptr;
    case AluOp::kDp4a:
      return N == 32 && !is_bits ? &int_kernel<T, AluOp::kDp4a> : nullptr;
    case AluOp::kDp2aLo:
      return N == 32 && !is_bits ? &int_kernel<T, AluOp::kDp2aLo> : nullptr;
    case AluOp::kDp2aHi:
      return N == 32 && !is_bits ? &int_kernel<T, AluOp::kDp2aHi> : nullptr;
    default:
      return nullptr;
  }
}

// add/min/max.u16x2 and .s16x2 (sm_90): each 16-bit half on its own, the low half of the
// register first; add wraps, .relu (s16x2 min/max only) makes a negative half 0.
template <bool Signed, AluOp Op>
void packed16_kernel(const AluArgs& x) {
  const bool relu = x.mods.relu;
  for_lanes(x.mask, [&](int i) {
    uint32_t d = 0;
    for (int half = 0; half < 2; ++half) {
      const auto ua = static_cast<uint16_t>(x.a[i] >> (16 * half));
      const auto ub = static_cast<uint16_t>(x.b[i] >> (16 * half));
      uint16_t r;
      if constexpr (Op == AluOp::kAdd) {
        r = static_cast<uint16_t>(ua + ub);
      } else if constexpr (Signed) {
        const auto sa = static_cast<int16_t>(ua), sb = static_cast<int16_t>(ub);
        int16_t v = (Op == AluOp::kMin) == (sa < sb) ? sa : sb;
        if (relu && v < 0) v = 0;
        r = static_cast<uint16_t>(v);
      } else {
        r = (Op == AluOp::kMin) == (ua < ub) ? ua : ub;
      }
      d |= static_cast<uint32_t>(r) << (16 * half);
    }
    x.d[i] = d;
  });
}

template <bool Signed>
AluKernel resolve_packed16(AluOp op, const Mods& m) {
  if (m.sat || m.cc || m.use_carry) return nullptr;
  switch (op) {
    case AluOp::kAdd:
      return m.relu ? nullptr : &packed16_kernel<Signed, AluOp::kAdd>;
    case AluOp::kMin:
      return m.relu && !Signed ? nullptr : &packed16_kernel<Signed, AluOp::kMin>;
    case AluOp::kMax:
      return m.relu && !Signed ? nullptr : &packed16_kernel<Signed, AluOp::kMax>;
    default:
      return nullptr;
  }
}

}  // namespace

AluKernel resolve_int(AluOp op, Type type, const Mods& m) {
  // Modifiers that never apply to integer instructions.
  if (m.round != Round::kNone || m.ftz || m.approx || m.full || m.nan || m.xorsign_abs) {
    return nullptr;
  }
  if (m.b_signed && op != AluOp::kDp4a && op != AluOp::kDp2aLo && op != AluOp::kDp2aHi) {
    return nullptr;
  }
  if (m.relu && op != AluOp::kMin && op != AluOp::kMax) return nullptr;
  if (m.sat && op != AluOp::kAdd && op != AluOp::kSub && op != AluOp::kMadHi &&
      op != AluOp::kMad24Hi) {
    return nullptr;
  }
  if ((m.cc || m.use_carry) && op != AluOp::kAdd && op != AluOp::kSub && op != AluOp::kMadLo &&
      op != AluOp::kMadHi) {
    return nullptr;
  }
  switch (type) {
    case Type::kPred:
      switch (op) {
        case AluOp::kMov:
          return &pred_kernel<AluOp::kMov>;
        case AluOp::kAnd:
          return &pred_kernel<AluOp::kAnd>;
        case AluOp::kOr:
          return &pred_kernel<AluOp::kOr>;
        case AluOp::kXor:
          return &pred_kernel<AluOp::kXor>;
        case AluOp::kNot:
          return &pred_kernel<AluOp::kNot>;
        default:
          return nullptr;
      }
    case Type::kB8:
    case Type::kU8:
      return resolve_for<uint8_t>(op, m, type);
    case Type::kS8:
      return resolve_for<int8_t>(op, m, type);
    case Type::kB16:
    case Type::kU16:
      return resolve_for<uint16_t>(op, m, type);
    case Type::kS16:
      return resolve_for<int16_t>(op, m, type);
    case Type::kB32:
    case Type::kU32:
      return resolve_for<uint32_t>(op, m, type);
    case Type::kS32:
      return resolve_for<int32_t>(op, m, type);
    case Type::kB64:
    case Type::kU64:
      return resolve_for<uint64_t>(op, m, type);
    case Type::kS64:
      return resolve_for<int64_t>(op, m, type);
    case Type::kU16x2:
      return resolve_packed16<false>(op, m);
    case Type::kS16x2:
      return resolve_packed16<true>(op, m);
    default:
      return nullptr;
  }
}

}  // namespace cusnap::emu::ptx::detail

// Scalar semantics of PTX arithmetic, logic, comparison and conversion instructions: the
// contract between the interpreter core (emulator/ptx/interpreter*) and the ALU
// (emulator/ptx/alu*.cpp). The core decodes an instruction once into (op, type, modifiers,
// operand slots); at run time it calls one of the functions below for a whole warp.
//
// Values are raw bit patterns in uint64_t, zero-extended from the type's width (f32 as its IEEE
// bits in the low 32 bits, f16x2 as two halves in the low 32 bits, pred as 0/1). Results are
// written the same way. Lanes whose bit is clear in `mask` are neither read nor written.
#pragma once

#include <bit>
#include <cstdint>

namespace cusnap::emu::ptx {

inline constexpr int kWarpSize = 32;

// Calls f(lane) for every lane set in `mask` (ALU kernels and the interpreter alike). The
// converged warp (all 32 lanes) is a plain counted loop the compiler unrolls and vectorizes;
// other masks walk the set bits.
template <class F>
inline void for_lanes(uint32_t mask, F&& f) {
  if (mask == ~uint32_t{0}) {
    for (int i = 0; i < kWarpSize; ++i) f(i);
    return;
  }
  for (; mask != 0; mask &= mask - 1) f(std::countr_zero(mask));
}

enum class Type : uint8_t {
  kNone,
  kPred,
  kB8,
  kB16,
  kB32,
  kB64,
  kB128,
  kU8,
  kU16,
  kU32,
  kU64,
  kS8,
  kS16,
  kS32,
  kS64,
  kF16,
  kF16x2,
  kBF16,
  kBF16x2,
  kTF32,
  kF32,
  kF64,
  kE4M3x2,
  kE5M2x2,  // fp8 pairs (cvt only)
  kU16x2,
  kS16x2,  // packed 16-bit integer pairs (add, min, max; sm_90)
};

// Width in bits of a register of this type (kF16x2 -> 32, kPred -> 1).
int type_bits(Type t);

enum class Round : uint8_t {
  kNone,  // default for the instruction (e.g. .rn for add.f32)
  kRn,
  kRz,
  kRm,
  kRp,
  kRna,  // floating-point result rounding
  kRni,
  kRzi,
  kRmi,
  kRpi,  // round to integral value (cvt)
};

struct Mods {
  Round round = Round::kNone;
  bool ftz = false;     // flush f32 subnormal inputs and results to sign-preserving zero
  bool sat = false;     // clamp to [0,1] for floats (NaN -> 0); saturate for integers
  bool approx = false;  // .approx (also implied by ex2/lg2/sin/cos/rsqrt/tanh)
  bool full = false;    // div.full.f32
  bool relu = false;    // .relu (cvt packs, min/max)
  bool nan = false;     // min/max .NaN
  bool xorsign_abs = false;
  bool cc = false;         // .cc: write the carry flag (add.cc, sub.cc, mad.cc)
  bool use_carry = false;  // addc/subc/madc: consume the carry flag
  bool b_signed = false;   // dp4a/dp2a: type of the second source is .s32
  // Additions:
  bool satfinite = false;  // cvt .satfinite: overflow/inf -> largest finite value, NaN stays NaN
                           // (implied for the fp8 destinations e4m3x2/e5m2x2)
};

enum class AluOp : uint8_t {
  // integer + float arithmetic
  kAdd,
  kSub,
  kMulLo,
  kMulHi,
  kMulWide,
  kMul24Lo,
  kMul24Hi,
  kMadLo,
  kMadHi,
  kMadWide,
  kMad24Lo,
  kMad24Hi,
  kSad,
  kMul,  // float mul
  kMad,
  kFma,  // float mad/fma (c is the addend)
  kDiv,
  kRem,
  kAbs,
  kNeg,
  kMin,
  kMax,
  kCopysign,
  // float special functions
  kRcp,
  kSqrt,
  kRsqrt,
  kSin,
  kCos,
  kLg2,
  kEx2,
  kTanh,
  // bitwise
  kAnd,
  kOr,
  kXor,
  kNot,
  kCnot,
  kLop3,  // lop3: immediate LUT passed in `e`
  kShl,
  kShr,
  kShfL,
  kShfR,
  kShfLClamp,
  kShfRClamp,  // shf: a=lo, b=hi, c=shift
  kBfe,
  kBfi,
  kBrev,
  kClz,
  kPopc,
  kBfind,
  kBfindShiftAmt,
  kFns,
  kPrmt,
  kPrmtF4e,
  kPrmtB4e,
  kPrmtRc8,
  kPrmtEcl,
  kPrmtEcr,
  kPrmtRc16,
  kDp4a,
  kDp2aLo,
  kDp2aHi,
  kTestpFinite,
  kTestpInfinite,
  kTestpNumber,
  kTestpNotanumber,
  kTestpNormal,
  kTestpSubnormal,
  kMov,
};

enum class CmpOp : uint8_t {
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,  // ordered for floats (false on NaN), signed/unsigned by type
  kLo,
  kLs,
  kHi,
  kHs,  // unsigned aliases
  kEqu,
  kNeu,
  kLtu,
  kLeu,
  kGtu,
  kGeu,  // unordered float compares
  kNum,
  kNan,
};

// Per-lane carry flags for .cc/addc (bit i = lane i). Owned by the warp.
struct CarryFlags {
  uint32_t bits = 0;
};

// d = op(a, b, c) for every active lane. Operands a/b/c may alias d. Unused operands may be null.
// For kMulWide/kMadWide `type` is the source type and d receives the double-width result.
// For kBfe: a=value, b=pos, c=len. kBfi: a=insert, b=base, c=pos, e=len.
// kLop3: a, b, c are the three sources and e (required) holds the immediate LUT
// (`lop3.b32 d, a, b, c, lut`).
// kPrmt*: a, b = the two source words, c = selector. kDp4a/kDp2a*: a, b sources, c accumulator,
// `type` is the type of a; Mods::b_signed gives the signedness of b.
void alu(AluOp op, Type type, const Mods& mods, uint32_t mask, const uint64_t* a, const uint64_t* b,
         const uint64_t* c, uint64_t* d, CarryFlags* carry = nullptr, const uint64_t* e = nullptr);

// d = cvt(a) from `src` to `dst` with rounding/saturation/ftz as PTX's cvt defines (every
// direction between integer and floating types, incl. f16/bf16/tf32 and packed x2 forms where
// `a` holds the high input and `b` the low one, as `cvt.rn.f16x2.f32 d, a, b`).
void cvt(Type dst, Type src, const Mods& mods, uint32_t mask, const uint64_t* a, uint64_t* d,
         const uint64_t* b = nullptr);

// Returns, for every active lane, bit i set when `a cmp b` holds (set/setp compare part).
uint32_t compare(CmpOp cmp, Type type, const Mods& mods, uint32_t mask, const uint64_t* a,
                 const uint64_t* b);

// Atomic read-modify-write on one location in host memory, performed atomically with respect to
// other host threads (the engine runs blocks on several threads). Returns the old value.
enum class AtomOp : uint8_t { kAdd, kMin, kMax, kInc, kDec, kAnd, kOr, kXor, kExch, kCas };
uint64_t atomic_rmw(AtomOp op, Type type, void* address, uint64_t operand, uint64_t compare_value);

// ---- Capability queries (additions) -------------------------------------------------------
// The interpreter calls these once per instruction at decode time. When one returns false the
// combination is not implemented (or not valid PTX) and the module must be rejected or the launch
// fail with CUDA_ERROR_ILLEGAL_INSTRUCTION, naming the instruction. Calling alu/cvt/compare/
// atomic_rmw with a combination for which the query returns false is a contract violation: the
// call writes all-ones bit patterns to the active lanes' results (compare returns 0, atomic_rmw
// does not touch memory and returns all ones) so that the error is at least visible.
bool alu_supported(AluOp op, Type type, const Mods& mods);
bool cvt_supported(Type dst, Type src, const Mods& mods);
bool compare_supported(CmpOp cmp, Type type, const Mods& mods);
bool atomic_supported(AtomOp op, Type type);

// setp on packed types (f16x2, bf16x2) yields two predicates: `lo` receives the comparison of
// the low halves (bits 15..0) and `hi` of the high halves. In `setp.lt.f16x2 p|q, a, b` the
// first destination p is `lo` and q is `hi`. Bit i = lane i. compare() on a packed type
// returns `lo`.
void compare_x2(CmpOp cmp, Type type, const Mods& mods, uint32_t mask, const uint64_t* a,
                const uint64_t* b, uint32_t* lo, uint32_t* hi);

// Names for diagnostics ("add.f32"-style messages): "f32", "add", "lt".
const char* type_name(Type t);
const char* alu_op_name(AluOp op);
const char* cmp_op_name(CmpOp op);

}  // namespace cusnap::emu::ptx

// Warp-level matrix instructions (mma, ldmatrix, stmatrix, movmatrix; all .sync.aligned),
// executed once for the whole warp rather than lane by lane: for mma the fragments of all 32
// lanes are gathered into the A, B and C matrices, multiplied, and D is scattered back.
//
// Arithmetic (docs/emulator.md, "Matrix instructions"; the PTX ISA leaves the order and the
// intermediate precision of the float accumulation open):
// * f16, bf16, tf32 inputs: every product is exact (at most 2 x 11 significand bits); each
//   element of D is C plus the products in increasing k, every addition rounded to nearest-even
//   f32 (an f32 fused multiply-add chain). No flushing of subnormals. An f16 C is widened
//   exactly, an f16 D is the final f32 sum rounded once to nearest-even f16. tf32 operands use
//   the top 19 bits of their register (the low 13 mantissa bits are ignored). A NaN result is
//   the canonical NaN (0x7fffffff, 0x7fff for f16).
// * f64: a chain of correctly rounded f64 fused multiply-adds in increasing k, starting at C.
// * s8/u8: exact; the s32 result wraps modulo 2^32, or with .satfinite clamps to the s32 range.
#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "alu_internal.h"
#include "interp.h"
#include "swizzle.h"

namespace cusnap::emu::ptx {
namespace {

using detail::as_f32;
using detail::as_f64;

// Largest matrices of the shapes lowered (A of mma m16n8k32 and wmma m32n8k16, B of m8n32k16).
constexpr int kMaxElems = 16 * 32;

int element_bits(Type t) {
  switch (t) {
    case Type::kS8:
    case Type::kU8:
      return 8;
    case Type::kF16:
    case Type::kBF16:
      return 16;
    case Type::kF64:
      return 64;
    default:
      return 32;
  }
}

// Sends each fragment element of the registers `regs` (32-lane arrays) through `load` into the
// matrix `out` at the position the fragment map gives.
template <class T, class Load>
void gather(const uint64_t* const* regs, const std::vector<uint16_t>& map, int frag, Type t, T* out,
            Load load) {
  const int bits = element_bits(t);
  const int per = bits == 64 ? 1 : 32 / bits;
  const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  const uint16_t* where = map.data();
  for (int lane = 0; lane < kWarpSize; ++lane) {
    for (int i = 0; i < frag; ++i) {
      const uint64_t word = regs[i / per][lane];
      out[*where++] = load((word >> ((i % per) * bits)) & mask);
    }
  }
}

double load_float(uint64_t bits, Type t) {
  switch (t) {
    case Type::kF16:
      return detail::decode_format(static_cast<uint32_t>(bits), detail::kFmtF16);
    case Type::kBF16:
      return detail::decode_format(static_cast<uint32_t>(bits), detail::kFmtBF16);
    case Type::kTF32:
      return as_f32(bits & 0xffffe000u);
    case Type::kF64:
      return as_f64(bits);
    default:
      return as_f32(bits);
  }
}

int64_t load_int(uint64_t bits, Type t) {
  switch (t) {
    case Type::kS8:
      return static_cast<int8_t>(bits);
    case Type::kU8:
      return static_cast<uint8_t>(bits);
    default:
      return static_cast<int32_t>(bits);
  }
}

// acc + p rounded once to nearest-even f32 (p exact in double).
double add_f32(double acc, double p) {
  if (!std::isfinite(acc) || !std::isfinite(p)) return static_cast<float>(acc + p);
  return static_cast<float>(detail::sum_to_odd(acc, p));
}

uint64_t store_float(double v, Type t) {
  switch (t) {
    case Type::kF16:
      return detail::encode_format(v, detail::kFmtF16, Round::kRn, false);
    case Type::kF64:
      return std::bit_cast<uint64_t>(v);
    default: {
      const float f = static_cast<float>(v);
      return std::isnan(f) ? detail::kCanonicalNanF32 : std::bit_cast<uint32_t>(f);
    }
  }
}

}  // namespace

void Launch::vector_operand(Warp& w, const Operand& v, uint32_t exec, const uint64_t** out) {
  for (int r = 0; r < v.count; ++r) {
    const Operand& e = m_.vec_pool[v.index + r];
    // Registers and constants are read in place; nothing else reaches a matrix operand.
    out[r] = operand(w, e, exec, kSpScratch0);
  }
}

bool Launch::exec_matrix(Block& b, Warp& w, const Instr& in, uint32_t group, uint32_t exec) {
  // .sync.aligned: every thread of the warp executes the same instruction. Lanes wait here
  // for the others, as at a collective; once no live lane is elsewhere, the instruction runs
  // if all 32 execute it, is skipped if none does (a guard false for the whole warp), and any
  // other arrival (a partial warp, lanes exited, a guard true for some lanes) is undefined
  // behaviour that fails the launch instead of computing with missing fragments.
  if (w.live() & ~group) {
    diverge(w);
    w.coll_wait |= group;
    w.runnable &= ~group;
    return false;
  }
  if (exec == 0) return true;
  static constexpr const char* kNames[] = {"mma",       "ldmatrix",   "stmatrix", "movmatrix",
                                           "wmma.load", "wmma.store", "wgmma"};
  const char* name = kNames[static_cast<int>(in.op) - static_cast<int>(Op::kMma)];
  if (exec != 0xffffffffu) {
    char lanes[64];
    std::snprintf(lanes, sizeof lanes, "0x%08x", exec);
    fail(LaunchStatus::kIllegalInstruction,
         std::string(name) + ".sync.aligned executed by lanes " + lanes +
             " only (all 32 threads of the warp must execute it together): " +
             where(b, w, std::countr_zero(exec), in));
    return true;
  }
  switch (in.op) {
    case Op::kMma:
      exec_mma(w, in, exec);
      return true;
    case Op::kWmmaLoad:
    case Op::kWmmaStore:
      exec_wmma_memory(b, w, in, exec);
      return true;
    case Op::kWgmma:
      if (in.sub == 0) exec_wgmma(b, w, in);  // fence, commit_group, wait_group: see exec_wgmma
      return true;
    case Op::kLdmatrix:
    case Op::kStmatrix:
    case Op::kMovmatrix:
      break;
    default:
      return true;
  }
  // 8x8 matrices of b16: lane l's register j holds row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1
  // of matrix j (low half first); .trans holds the transposed matrix the same way. ldmatrix and
  // stmatrix take the 16-byte row r of matrix j at the address of lane 8 j + r.
  const bool trans = in.sub == 1;
  const int count = in.op == Op::kMovmatrix ? 1 : in.vec;
  const uint32_t row_lanes = count == 4 ? 0xffffffffu : (1u << (8 * count)) - 1;
  uint16_t mat[4][8][8];
  uint8_t* rows[kWarpSize];
  if (in.op == Op::kLdmatrix) {
    if (!resolve_lanes(b, w, in, in.ops[1], row_lanes, 16, false, rows)) return true;
    for (int j = 0; j < count; ++j)
      for (int r = 0; r < 8; ++r) std::memcpy(mat[j][r], rows[8 * j + r], 16);
  } else {
    const uint64_t* regs[4];
    if (in.op == Op::kStmatrix)
      vector_operand(w, in.ops[1], exec, regs);
    else
      regs[0] = operand(w, in.ops[1], exec, kSpScratch0);
    for (int j = 0; j < count; ++j)
      for (int lane = 0; lane < kWarpSize; ++lane) {
        const int g = lane >> 2, t = lane & 3;
        mat[j][g][2 * t] = static_cast<uint16_t>(regs[j][lane]);
        mat[j][g][2 * t + 1] = static_cast<uint16_t>(regs[j][lane] >> 16);
      }
  }
  if (in.op == Op::kStmatrix) {
    // The fragments are the transposed matrices under .trans: write the rows of the transpose.
    if (!resolve_lanes(b, w, in, in.ops[0], row_lanes, 16, true, rows)) return true;
    for (int j = 0; j < count; ++j)
      for (int r = 0; r < 8; ++r) {
        uint16_t row[8];
        for (int c = 0; c < 8; ++c) row[c] = trans ? mat[j][c][r] : mat[j][r][c];
        std::memcpy(rows[8 * j + r], row, 16);
      }
    return true;
  }
  const bool t_out = in.op == Op::kMovmatrix || trans;
  for (int j = 0; j < count; ++j) {
    uint64_t* d = dest(w, in.op == Op::kMovmatrix ? in.ops[0] : m_.vec_pool[in.ops[0].index + j]);
    for (int lane = 0; lane < kWarpSize; ++lane) {
      const int g = lane >> 2, t = lane & 3;
      const uint16_t lo = t_out ? mat[j][2 * t][g] : mat[j][g][2 * t];
      const uint16_t hi = t_out ? mat[j][2 * t + 1][g] : mat[j][g][2 * t + 1];
      d[lane] = lo | uint64_t{hi} << 16;
    }
  }
  return true;
}

void Launch::exec_wmma_memory(Block& b, Warp& w, const Instr& in, uint32_t exec) {
  const MatrixOp& mo = m_.matrix_ops[in.matrix];
  const bool load = in.op == Op::kWmmaLoad;
  const Operand& a = in.ops[load ? 1 : 0];
  // The ISA requires one address and stride for the whole warp: lane 0's, checked against all.
  const uint64_t* base = a.base_is_reg ? w.slot(a.index) : nullptr;
  const uint64_t* stride =
      in.ops[2].kind != Operand::kNone ? operand(w, in.ops[2], exec, kSpScratch1) : nullptr;
  for (int l = 1; l < kWarpSize; ++l)
    if ((base && base[l] != base[0]) || (stride && stride[l] != stride[0])) {
      fail(LaunchStatus::kIllegalInstruction,
           std::string(load ? "wmma.load" : "wmma.store") +
               ": the lanes of the warp give different addresses or strides (the ISA requires "
               "one for the whole warp): " +
               where(b, w, l, in));
      return;
    }
  const uint32_t es = static_cast<uint32_t>(type_bits(mo.elem) / 8);
  const uint64_t ld =
      stride ? static_cast<uint32_t>(stride[0]) : (mo.col_major ? mo.rows : mo.cols);
  const uint64_t addr0 = (base ? base[0] : 0) + static_cast<uint64_t>(a.offset) +
                         (a.has_symbol ? symbol_value(w, 0, a.symbol) : 0);
  const Space space = effective_space(in, a);
  const int total = mo.rows * mo.cols;
  uint64_t values[kMaxElems];
  const int bits = element_bits(mo.elem);
  const int per = bits == 64 ? 1 : 32 / bits;
  const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  if (!load) {
    const uint64_t* regs[16];
    vector_operand(w, in.ops[1], exec, regs);
    for (int lane = 0; lane < kWarpSize; ++lane)
      for (int i = 0; i < mo.c_frag; ++i)
        values[mo.c_map[lane * mo.c_frag + i]] = (regs[i / per][lane] >> ((i % per) * bits)) & mask;
  }
  // Every element is checked like an access of its own size (lane 0's view of memory).
  for (int e = 0; e < total; ++e) {
    const int r = e / mo.cols, c = e % mo.cols;
    const uint64_t offset =
        mo.col_major ? static_cast<uint64_t>(c) * ld + r : static_cast<uint64_t>(r) * ld + c;
    uint8_t* p = translate(b, w, 0, space, addr0 + offset * es, es, !load, in);
    if (!p) return;
    if (tracking_) [[unlikely]]
      track(b, p, es, load, !load);
    if (load) {
      values[e] = 0;
      std::memcpy(&values[e], p, es);
    } else {
      std::memcpy(p, &values[e], es);
    }
  }
  if (!load) return;
  for (int r = 0; r < in.ops[0].count; ++r) {
    uint64_t* d = dest(w, m_.vec_pool[in.ops[0].index + r]);
    for (int lane = 0; lane < kWarpSize; ++lane) {
      uint64_t word = 0;
      for (int s = 0; s < per; ++s)
        word |= values[mo.c_map[lane * mo.c_frag + r * per + s]] << (s * bits);
      d[lane] = word;
    }
  }
}

void Launch::exec_mma(Warp& w, const Instr& in, uint32_t exec) {
  const MatrixOp& mo = m_.matrix_ops[in.matrix];
  const uint64_t* a_regs[16];
  const uint64_t* b_regs[16];
  const uint64_t* c_regs[16];
  vector_operand(w, in.ops[1], exec, a_regs);
  vector_operand(w, in.ops[2], exec, b_regs);
  vector_operand(w, in.ops[3], exec, c_regs);
  const int m = mo.m, n = mo.n, k = mo.k;
  uint64_t d_bits[kMaxElems];
  if (mo.c == Type::kS32) {
    int64_t av[kMaxElems], bv[kMaxElems], cv[kMaxElems];
    gather(a_regs, mo.a_map, mo.a_frag, mo.a, av, [&](uint64_t x) { return load_int(x, mo.a); });
    gather(b_regs, mo.b_map, mo.b_frag, mo.b, bv, [&](uint64_t x) { return load_int(x, mo.b); });
    gather(c_regs, mo.c_map, mo.c_frag, mo.c, cv, [&](uint64_t x) { return load_int(x, mo.c); });
    for (int r = 0; r < m; ++r) {
      for (int c = 0; c < n; ++c) {
        int64_t acc = cv[r * n + c];
        for (int kk = 0; kk < k; ++kk) acc += av[r * k + kk] * bv[kk * n + c];
        if (mo.satfinite) acc = std::clamp<int64_t>(acc, INT32_MIN, INT32_MAX);
        d_bits[r * n + c] = static_cast<uint32_t>(acc);
      }
    }
  } else {
    double av[kMaxElems], bv[kMaxElems], cv[kMaxElems];
    gather(a_regs, mo.a_map, mo.a_frag, mo.a, av, [&](uint64_t x) { return load_float(x, mo.a); });
    gather(b_regs, mo.b_map, mo.b_frag, mo.b, bv, [&](uint64_t x) { return load_float(x, mo.b); });
    gather(c_regs, mo.c_map, mo.c_frag, mo.c, cv, [&](uint64_t x) { return load_float(x, mo.c); });
    detail::RoundingScope nearest(FE_TONEAREST);
    const bool f64 = mo.d == Type::kF64;
    for (int r = 0; r < m; ++r) {
      for (int c = 0; c < n; ++c) {
        double acc = cv[r * n + c];
        const double* arow = av + r * k;
        if (f64) {
          for (int kk = 0; kk < k; ++kk) acc = std::fma(arow[kk], bv[kk * n + c], acc);
        } else {
          acc = static_cast<float>(acc);  // an f16 C is exact in f32
          for (int kk = 0; kk < k; ++kk) acc = add_f32(acc, arow[kk] * bv[kk * n + c]);
        }
        d_bits[r * n + c] = store_float(acc, mo.d);
      }
    }
  }
  // Scatter D: register r of lane l packs fragment elements r * per .. r * per + per - 1.
  const int bits = element_bits(mo.d);
  const int per = bits == 64 ? 1 : 32 / bits;
  const Operand& dv = in.ops[0];
  for (int r = 0; r < dv.count; ++r) {
    uint64_t* d = dest(w, m_.vec_pool[dv.index + r]);
    for (int lane = 0; lane < kWarpSize; ++lane) {
      uint64_t word = 0;
      for (int s = 0; s < per; ++s)
        word |= d_bits[mo.c_map[lane * mo.c_frag + r * per + s]] << (s * bits);
      d[lane] = word;
    }
  }
}

// wgmma.mma_async.sync.aligned.m64nNkK (f16/bf16 K = 16, tf32 K = 8, s8/u8 K = 32). Each warp of
// the warpgroup computes its own 16 rows of D (warp w % 4 owns rows 16 (w % 4) .. + 15) when it
// issues the instruction: those rows depend only on its rows of A (its registers, or shared memory)
// and on B (shared memory), and the ISA makes reading D before wgmma.wait_group, or changing A/B's
// shared memory before it, undefined, so writing D at issue is one of the executions the ISA
// allows. Hence wgmma.fence, commit_group and wait_group have nothing left to do. Shared-memory
// operands are read through their matrix descriptors: the canonical layouts of the ISA's "Shared
// Memory Matrix Layout" (CuTe form), the swizzle of swizzle.h on the absolute shared address.
void Launch::exec_wgmma(Block& b, Warp& w, const Instr& in) {
  const MatrixOp& mo = m_.matrix_ops[in.matrix];
  const int n = mo.wg_n, kdim = mo.k;
  const int rows0 = 16 * static_cast<int>(w.index % 4);  // this warp's first row of A and D
  const bool integer = mo.d == Type::kS32;
  const int eb = element_bits(mo.a) / 8;  // bytes per element of A and B
  // The descriptors and scale-d must be the same in every lane (the ISA: same across the
  // warpgroup; each warp checks its own lanes).
  const uint64_t* a_desc = mo.a_regs ? nullptr : operand(w, in.ops[1], ~0u, kSpScratch0);
  const uint64_t* b_desc = operand(w, in.ops[2], ~0u, kSpScratch1);
  const uint64_t* scale_d = operand(w, in.ops[3], ~0u, kSpScratch2);
  for (int l = 1; l < kWarpSize; ++l)
    if ((a_desc && a_desc[l] != a_desc[0]) || b_desc[l] != b_desc[0] ||
        (scale_d[l] & 1) != (scale_d[0] & 1))
      return fail(LaunchStatus::kIllegalInstruction,
                  "wgmma.mma_async: the lanes give different matrix descriptors or scale-d (the "
                  "ISA requires the same for the whole warpgroup): " +
                      where(b, w, l, in));
  // Element (row, k) of a matrix read through a descriptor: `row` is M (A) or N (B). A core
  // matrix is 8 rows of 16 bytes, T = 16 / eb elements of K each; MN-major layouts exist for
  // 16-bit types only (the forms give the other types no transpose).
  auto reader = [&](uint64_t desc, bool mn_major, const char* which) {
    struct Reader {
      uint64_t start, lbo, sbo;
      Swizzle swizzle;
      bool mn_major;
      uint64_t eb, per_row;
      bool ok;
      std::string why;
      uint64_t offset(int row, int k) const {
        const uint64_t r = static_cast<uint64_t>(row), kk = static_cast<uint64_t>(k);
        if (swizzle == Swizzle::kNone) {
          // K-major ((8,m),(T,2k)):((1T,SBO),(1,LBO)); MN-major
          // ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))
          if (!mn_major)
            return (r % 8) * 16 + (r / 8) * sbo + (kk % per_row) * eb + (kk / per_row) * lbo;
          return (r % 8) * 2 + (r / 8) * sbo + (kk % 8) * 16 + (kk / 8) * lbo;
        }
        const uint64_t span = swizzle_span(swizzle), chunks = span / 16;
        // K-major ((8,m),(T,2k)):((W T,SBO),(1,T)); MN-major ((T,W,m),(8,k)):((1,T,LBO),(W T,SBO))
        if (!mn_major) return (r % 8) * span + (r / 8) * sbo + kk * eb;
        return (r % 8) * 2 + ((r / 8) % chunks) * 16 + (r / (8 * chunks)) * lbo + (kk % 8) * span +
               (kk / 8) * sbo;
      }
    } rd;
    rd.start = (desc & 0x3fff) << 4;
    rd.lbo = ((desc >> 16) & 0x3fff) << 4;
    rd.sbo = ((desc >> 32) & 0x3fff) << 4;
    static constexpr Swizzle kModes[] = {Swizzle::kNone, Swizzle::k128B, Swizzle::k64B,
                                         Swizzle::k32B};
    rd.swizzle = kModes[desc >> 62];
    rd.mn_major = mn_major;
    rd.eb = static_cast<uint64_t>(eb);
    rd.per_row = 16 / rd.eb;
    rd.ok = true;
    if (rd.swizzle != Swizzle::kNone && ((desc >> 49) & 7) != 0) {
      rd.ok = false;
      rd.why = std::string("the ") + which +
               " descriptor's matrix base offset is not 0 (a swizzle pattern that does not start "
               "at its repeat boundary is not emulated)";
    }
    return rd;
  };
  auto load = [&](const auto& rd, int row, int k, uint64_t* bits) -> bool {
    const uint64_t at = swizzle_address(rd.start + rd.offset(row, k), rd.swizzle);
    if (at + static_cast<uint64_t>(eb) > b.shared_size) {
      char buf[240];
      std::snprintf(buf, sizeof buf,
                    "illegal address: wgmma.mma_async reads shared address 0x%llx (row %d, k %d "
                    "of a matrix descriptor) outside the block's %llu bytes of shared memory, ",
                    static_cast<unsigned long long>(at), row, k,
                    static_cast<unsigned long long>(b.shared_size));
      fail(LaunchStatus::kIllegalAddress, buf + where(b, w, 0, in));
      return false;
    }
    uint32_t v = 0;
    std::memcpy(&v, b.shared + at, static_cast<size_t>(eb));
    *bits = v;
    return true;
  };
  // A: this warp's 16 rows x K (at most 16 x 32: kMaxElems, on the stack), B: K x N, as raw
  // element bits.
  const size_t a_count = 16 * static_cast<size_t>(kdim);
  static_assert(16 * 32 <= kMaxElems);
  uint64_t a_bits[kMaxElems];
  std::vector<uint64_t> b_bits(static_cast<size_t>(kdim) * n);
  if (mo.a_regs) {
    // The ISA's register fragment of A (as mma.m16n8kK's, lower_wgmma's a_map): element i of a
    // lane, packed low first, 32 / (8 eb) to a .b32 register.
    const uint64_t* regs[4];
    vector_operand(w, in.ops[1], ~0u, regs);
    const int per = 4 / eb, bits = 8 * eb;
    const uint64_t mask = bits == 32 ? 0xffffffffu : (uint64_t{1} << bits) - 1;
    for (int lane = 0; lane < kWarpSize; ++lane)
      for (int i = 0; i < mo.a_frag; ++i)
        a_bits[mo.a_map[lane * mo.a_frag + i]] = (regs[i / per][lane] >> (bits * (i % per))) & mask;
  } else {
    auto rd = reader(a_desc[0], mo.trans_a, "A");
    if (!rd.ok)
      return fail(LaunchStatus::kIllegalInstruction,
                  "wgmma.mma_async: " + rd.why + ": " + where(b, w, 0, in));
    for (int r = 0; r < 16; ++r)
      for (int k = 0; k < kdim; ++k)
        if (!load(rd, rows0 + r, k, &a_bits[r * kdim + k])) return;
  }
  {
    auto rd = reader(b_desc[0], mo.trans_b, "B");
    if (!rd.ok)
      return fail(LaunchStatus::kIllegalInstruction,
                  "wgmma.mma_async: " + rd.why + ": " + where(b, w, 0, in));
    for (int c = 0; c < n; ++c)
      for (int k = 0; k < kdim; ++k)
        if (!load(rd, c, k, &b_bits[static_cast<size_t>(k) * n + c])) return;
  }
  // D (this warp's 16 x N): element i of lane (g, t) is row g + 8 ((i >> 1) & 1), column
  // 8 (i >> 2) + 2 t + (i & 1); f32 and s32: one per register, f16: two per .f16x2 register.
  const bool f16 = mo.d == Type::kF16;
  const Operand& dv = in.ops[0];
  uint64_t* d[128];
  for (int r = 0; r < dv.count; ++r) d[r] = dest(w, m_.vec_pool[dv.index + r]);
  const bool accumulate = scale_d[0] & 1;
  if (integer) {
    // Exact: |a b| < 2^16, K = 32 products and the s32 addend fit an int64; the sum wraps to 32
    // bits (two's complement) or, with .satfinite, clamps.
    int64_t av[kMaxElems];
    std::vector<int64_t> bv(b_bits.size());
    for (size_t i = 0; i < a_count; ++i) av[i] = load_int(a_bits[i], mo.a);
    for (size_t i = 0; i < bv.size(); ++i) bv[i] = load_int(b_bits[i], mo.b);
    for (int lane = 0; lane < kWarpSize; ++lane) {
      const int g = lane >> 2, t = lane & 3;
      for (int i = 0; i < n / 2; ++i) {
        const int r = g + 8 * ((i >> 1) & 1), c = 8 * (i >> 2) + 2 * t + (i & 1);
        uint64_t& reg = d[i][lane];
        int64_t acc = accumulate ? static_cast<int32_t>(reg) : 0;
        for (int k = 0; k < kdim; ++k) acc += av[r * kdim + k] * bv[static_cast<size_t>(k) * n + c];
        if (mo.satfinite) acc = std::clamp<int64_t>(acc, INT32_MIN, INT32_MAX);
        reg = static_cast<uint32_t>(static_cast<uint64_t>(acc));
      }
    }
    return;
  }
  // Floats: the scaled elements as exact doubles (a product of two f16/bf16/tf32 values is exact
  // in a double).
  double av[kMaxElems];
  std::vector<double> bv(b_bits.size());
  for (size_t i = 0; i < a_count; ++i) av[i] = mo.scale_a * load_float(a_bits[i], mo.a);
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = mo.scale_b * load_float(b_bits[i], mo.b);
  detail::RoundingScope nearest(FE_TONEAREST);
  for (int lane = 0; lane < kWarpSize; ++lane) {
    const int g = lane >> 2, t = lane & 3;
    for (int i = 0; i < n / 2; ++i) {
      const int r = g + 8 * ((i >> 1) & 1), c = 8 * (i >> 2) + 2 * t + (i & 1);
      uint64_t& reg = d[f16 ? i / 2 : i][lane];
      const int shift = f16 ? 16 * (i % 2) : 0;
      const double* arow = av + r * kdim;
      // scale-d false: D = A B, the chain starts at the first product rounded to f32 (-0 + p is
      // p exactly, so a sum of -0 products stays -0).
      double acc =
          accumulate
              ? static_cast<float>(load_float((reg >> shift) & (f16 ? 0xffffu : 0xffffffffu), mo.c))
              : add_f32(-0.0, arow[0] * bv[c]);
      for (int k = accumulate ? 0 : 1; k < kdim; ++k)
        acc = add_f32(acc, arow[k] * bv[static_cast<size_t>(k) * n + c]);
      const uint64_t bits = store_float(acc, mo.d);
      if (f16)
        reg = (reg & ~(uint64_t{0xffff} << shift)) | (bits & 0xffff) << shift;
      else
        reg = bits;
    }
  }
}

}  // namespace cusnap::emu::ptx

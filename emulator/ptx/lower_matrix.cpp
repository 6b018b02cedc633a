// Lowering of the warp-level matrix instructions (mma.sync.aligned) into Op::kMma and a
// MatrixOp (ir.h). The fragment layouts are those of the PTX ISA, section "Matrix fragments for
// mma.m*n*k*": with groupID = laneid >> 2 and threadID_in_group (t) = laneid % 4, each lane holds
// fixed elements of A, B and C/D. The modifier forms (modifiers.cpp) have already restricted the
// shapes and types to the ones listed there.
#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

#include "parser_internal.h"

namespace cusnap::emu::ptx {
namespace {

int element_bits(Type t) {
  switch (t) {
    case Type::kS8:
    case Type::kU8:
      return 8;
    case Type::kF16:
    case Type::kBF16:
      return 16;
    case Type::kTF32:
    case Type::kF32:
    case Type::kS32:
      return 32;
    default:
      return 64;  // f64
  }
}

// Elements of one register of the operand vector: sub-word types are packed into .b32 registers.
int per_register(Type t) { return t == Type::kF64 ? 1 : 32 / element_bits(t); }

// (row, col) of element i of lane `lane`'s fragment of A (m x k).
std::pair<int, int> a_position(const MatrixOp& mo, int lane, int i) {
  const int g = lane >> 2, t = lane & 3;
  switch (element_bits(mo.a)) {
    case 16:  // f16 / bf16
      if (mo.k == 16) return {g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)};
      return {g + 8 * (i >> 1), 2 * t + (i & 1)};  // k8
    case 32:                                       // tf32
      if (mo.k == 8) return {g + 8 * (i & 1), t + 4 * (i >> 1)};
      return {g + 8 * i, t};  // k4
    case 8:
      if (mo.m == 8) return {g, 4 * t + i};                              // m8n8k16
      if (mo.k == 16) return {g + 8 * (i >> 2), 4 * t + (i & 3)};        // m16n8k16
      return {g + 8 * ((i >> 2) & 1), 4 * t + (i & 3) + 16 * (i >> 3)};  // m16n8k32
    default:  // f64: m8n8k4, or m16n8k{4,8,16} laid out like tf32 (the ISA's f64 figures)
      if (mo.m == 8) return {g, t};
      return {g + 8 * (i & 1), t + 4 * (i >> 1)};
  }
}

// (row, col) of element i of lane's fragment of B (k x n).
std::pair<int, int> b_position(const MatrixOp& mo, int lane, int i) {
  const int g = lane >> 2, t = lane & 3;
  switch (element_bits(mo.b)) {
    case 16:
      if (mo.k == 16) return {2 * t + (i & 1) + 8 * (i >> 1), g};
      return {2 * t + i, g};
    case 32:
      if (mo.k == 8) return {t + 4 * i, g};
      return {t, g};
    case 8:
      if (mo.k == 32) return {4 * t + (i & 3) + 16 * (i >> 2), g};
      return {4 * t + i, g};
    default:  // f64: b_i at row t + 4 i (m8n8k4: i = 0)
      return {t + 4 * i, g};
  }
}

// (row, col) of element i of lane's fragment of C and D (m x n).
std::pair<int, int> c_position(const MatrixOp& mo, int lane, int i) {
  const int g = lane >> 2, t = lane & 3;
  if (mo.m == 8) return {g, 2 * t + i};
  return {g + 8 * (i >> 1), 2 * t + (i & 1)};
}

// The register type a fragment's registers are read or written as.
Type register_type(Type t) {
  switch (t) {
    case Type::kF32:
      return Type::kF32;
    case Type::kS32:
      return Type::kS32;
    case Type::kF64:
      return Type::kF64;
    default:
      return Type::kB32;  // packed f16/bf16/s8/u8, tf32
  }
}

}  // namespace

void Parser::lower_mma(Instr& in, const std::vector<std::string_view>& mods,
                       const std::vector<Type>& types, std::vector<ParsedOperand>& ops,
                       uint32_t line) {
  MatrixOp mo;
  for (std::string_view m : mods) {
    if (m == ".satfinite") mo.satfinite = true;
    unsigned mm = 0, nn = 0, kk = 0;
    if (m.size() > 2 && m[1] == 'm' &&
        std::sscanf(std::string(m).c_str(), ".m%un%uk%u", &mm, &nn, &kk) == 3) {
      mo.m = static_cast<uint8_t>(mm);
      mo.n = static_cast<uint8_t>(nn);
      mo.k = static_cast<uint8_t>(kk);
    }
  }
  if (types.size() != 4 || mo.m == 0) fail_at(line, "mma needs a shape and four types");
  mo.d = types[0];
  mo.a = types[1];
  mo.b = types[2];
  mo.c = types[3];
  if (ops.size() != 4) fail_at(line, "mma expects 4 operands, found " + std::to_string(ops.size()));
  mo.a_frag = static_cast<uint8_t>(mo.m * mo.k / 32);
  mo.b_frag = static_cast<uint8_t>(mo.k * mo.n / 32);
  mo.c_frag = static_cast<uint8_t>(mo.m * mo.n / 32);
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < mo.a_frag; ++i) {
      auto [r, c] = a_position(mo, lane, i);
      mo.a_map.push_back(static_cast<uint16_t>(r * mo.k + c));
    }
    for (int i = 0; i < mo.b_frag; ++i) {
      auto [r, c] = b_position(mo, lane, i);
      mo.b_map.push_back(static_cast<uint16_t>(r * mo.n + c));
    }
    for (int i = 0; i < mo.c_frag; ++i) {
      auto [r, c] = c_position(mo, lane, i);
      mo.c_map.push_back(static_cast<uint16_t>(r * mo.n + c));
    }
  }
  in.op = Op::kMma;
  in.type = mo.d;
  in.type2 = mo.a;
  in.nops = 4;
  in.ops[0] = dst_vector(ops[0], mo.c_frag / per_register(mo.d));
  in.ops[1] = src_vector(ops[1], register_type(mo.a), mo.a_frag / per_register(mo.a));
  in.ops[2] = src_vector(ops[2], register_type(mo.b), mo.b_frag / per_register(mo.b));
  in.ops[3] = src_vector(ops[3], register_type(mo.c), mo.c_frag / per_register(mo.c));
  in.matrix = static_cast<uint32_t>(m_.matrix_ops.size());
  m_.matrix_ops.push_back(std::move(mo));
}

namespace {

// WMMA fragments are opaque in the ISA; the emulator's layout: lane l's fragment element i is the
// element l * E + i (mod rows * cols) of the matrix in row-major order, E the elements per lane.
// The ISA's register counts give E = rows * cols / 32, except f16 A and B, whose 8 registers hold
// 16 elements: the matrix is then held twice (m16n16k16) or four times (the 128-element B of
// m32n8k16, A of m8n32k16), the later lanes repeating the first copy; mma reads every copy (the
// last wins, which makes no difference while they are equal, as wmma.load makes them).
int wmma_elements(Type t, char which, int rows, int cols) {
  if (t == Type::kF16 && which != 'c') return 16;
  return rows * cols / 32;
}

void wmma_map(std::vector<uint16_t>& map, int elements, int rows, int cols) {
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < elements; ++i)
      map.push_back(static_cast<uint16_t>((lane * elements + i) % (rows * cols)));
}

}  // namespace

void Parser::lower_wmma(Instr& in, const std::vector<std::string_view>& mods,
                        const std::vector<Type>& types, std::vector<ParsedOperand>& ops,
                        uint32_t line) {
  MatrixOp mo;
  std::vector<bool> layouts;  // true: .col
  bool load = false, store = false;
  for (std::string_view m : mods) {
    if (m == ".load") load = true;
    if (m == ".store") store = true;
    if (m == ".a" || m == ".b" || m == ".c" || m == ".d") mo.which = m[1] == 'd' ? 'c' : m[1];
    if (m == ".row" || m == ".col") layouts.push_back(m == ".col");
    if (m == ".satfinite") mo.satfinite = true;
    if (m == ".global") in.space = Space::kGlobal;
    if (m == ".shared" || m == ".shared::cta") in.space = Space::kShared;
    unsigned mm = 0, nn = 0, kk = 0;
    if (m.size() > 2 && m[1] == 'm' &&
        std::sscanf(std::string(m).c_str(), ".m%un%uk%u", &mm, &nn, &kk) == 3) {
      mo.m = static_cast<uint8_t>(mm);
      mo.n = static_cast<uint8_t>(nn);
      mo.k = static_cast<uint8_t>(kk);
    }
  }
  if (mo.m == 0 || types.empty() || layouts.empty())
    fail_at(line, "wmma needs a shape, a layout and a type");
  if (load || store) {
    if (in.space == Space::kNone) in.space = Space::kGeneric;
    mo.elem = types[0];
    mo.col_major = layouts[0];
    mo.rows = mo.which == 'b' ? mo.k : mo.m;
    mo.cols = mo.which == 'a' ? mo.k : mo.n;
    const int e = wmma_elements(mo.elem, mo.which, mo.rows, mo.cols);
    mo.c_frag = static_cast<uint8_t>(e);
    wmma_map(mo.c_map, e, mo.rows, mo.cols);
    if (ops.size() != 2 && ops.size() != 3)
      fail_at(line, "wmma." + std::string(load ? "load" : "store") + " expects 2 or 3 operands");
    const int regs = e / per_register(mo.elem);
    in.op = load ? Op::kWmmaLoad : Op::kWmmaStore;
    in.nops = static_cast<uint8_t>(ops.size());
    if (load) {
      in.ops[0] = dst_vector(ops[0], regs);
      in.ops[1] = addr(ops[1]);
    } else {
      in.ops[0] = addr(ops[0]);
      in.ops[1] = src_vector(ops[1], register_type(mo.elem), regs);
    }
    // Without a stride operand the matrix is dense: the leading dimension is its row (or, in
    // column-major order, column) length.
    in.ops[2] = ops.size() == 3 ? src(ops[2], Type::kU32) : Operand{};
    in.type = mo.elem;
  } else {
    // wmma.mma: .f16 inputs name only D and C types; every other form names d, a, b, c.
    if (types.size() == 2) {
      mo.d = types[0];
      mo.c = types[1];
      mo.a = mo.b = Type::kF16;
    } else if (types.size() == 4) {
      mo.d = types[0];
      mo.a = types[1];
      mo.b = types[2];
      mo.c = types[3];
    } else {
      fail_at(line, "wmma.mma takes 2 or 4 types");
    }
    if (ops.size() != 4)
      fail_at(line, "wmma.mma expects 4 operands, found " + std::to_string(ops.size()));
    const int ea = wmma_elements(mo.a, 'a', mo.m, mo.k);
    const int eb = wmma_elements(mo.b, 'b', mo.k, mo.n);
    const int ec = wmma_elements(mo.c, 'c', mo.m, mo.n);
    mo.a_frag = static_cast<uint8_t>(ea);
    mo.b_frag = static_cast<uint8_t>(eb);
    mo.c_frag = static_cast<uint8_t>(ec);
    wmma_map(mo.a_map, ea, mo.m, mo.k);
    wmma_map(mo.b_map, eb, mo.k, mo.n);
    wmma_map(mo.c_map, ec, mo.m, mo.n);
    in.op = Op::kMma;
    in.type = mo.d;
    in.type2 = mo.a;
    in.nops = 4;
    in.ops[0] = dst_vector(ops[0], ec / per_register(mo.d));
    in.ops[1] = src_vector(ops[1], register_type(mo.a), ea / per_register(mo.a));
    in.ops[2] = src_vector(ops[2], register_type(mo.b), eb / per_register(mo.b));
    in.ops[3] = src_vector(ops[3], register_type(mo.c), ec / per_register(mo.c));
  }
  in.matrix = static_cast<uint32_t>(m_.matrix_ops.size());
  m_.matrix_ops.push_back(std::move(mo));
}

// wgmma (warpgroup MMA, sm_90a). The forms (modifiers.cpp) admit m64nNk16 with f16 or bf16 A
// and B and an f32 (or, for f16, f16) accumulator, m64nNk8 tf32 -> f32 and m64nNk32 s8/u8 ->
// s32 (optionally .satfinite); fp8 and b1 are refused before (not_emulated).
// Operands: d, a-desc or {a0..a3}, b-desc, scale-d, then for floats imm-scale-a, imm-scale-b
// and, for f16/bf16 only, imm-trans-a (descriptor A only) and imm-trans-b; the immediates go
// into the MatrixOp. Integer forms have no immediates (the scales are 1, both K-major).
void Parser::lower_wgmma(Instr& in, const std::vector<std::string_view>& mods,
                         const std::vector<Type>& types, std::vector<ParsedOperand>& ops,
                         uint32_t line) {
  in.op = Op::kWgmma;
  auto named = [&](std::string_view m) {
    return std::find(mods.begin(), mods.end(), m) != mods.end();
  };
  const bool fence = named(".fence"), commit = named(".commit_group"), wait = named(".wait_group");
  if (fence || commit || wait) {
    in.sub = fence ? 1 : commit ? 2 : 3;
    if (ops.size() != (wait ? 1u : 0u))
      fail_at(line, std::string("wgmma.") +
                        (fence    ? "fence"
                         : commit ? "commit_group"
                                  : "wait_group") +
                        " expects " + (wait ? "1 operand" : "no operands"));
    if (wait) {
      if (ops[0].kind != ParsedOperand::kImm || ops[0].number.kind != NumberValue::kInt)
        fail_at(line, "wgmma.wait_group takes an integer constant");
      in.nops = 1;
      in.ops[0] = src(ops[0], Type::kU32);
    }
    return;
  }
  MatrixOp mo;
  unsigned n = 0, k = 0;
  for (std::string_view m : mods) {
    if (m.size() > 4 && m.substr(0, 4) == ".m64")
      std::sscanf(std::string(m).c_str(), ".m64n%uk%u", &n, &k);
    if (m == ".satfinite") mo.satfinite = true;
  }
  if (n < 8 || n > 256 || n % 8 != 0 || types.size() != 3)
    fail_at(line, "wgmma.mma_async needs a shape m64nNk (N = 8..256) and three types");
  mo.d = mo.c = types[0];
  mo.a = types[1];
  mo.b = types[2];
  // K is 256 bits of A's row: 16 f16/bf16, 8 tf32, 32 s8/u8 (the forms pair shapes and types).
  const unsigned want_k = 256 / static_cast<unsigned>(element_bits(mo.a));
  if (k != want_k)
    fail_at(line, "wgmma.mma_async with " + std::string(type_name(mo.a)) +
                      " inputs needs K = " + std::to_string(want_k));
  mo.m = 64;
  mo.k = static_cast<uint8_t>(k);
  mo.wg_n = static_cast<uint16_t>(n);
  mo.a_regs = ops.size() >= 2 && ops[1].kind == ParsedOperand::kVector;
  const bool integer = mo.d == Type::kS32;
  const bool transposable = element_bits(mo.a) == 16;
  const size_t want = integer ? 4 : !transposable ? 6 : mo.a_regs ? 7 : 8;
  if (ops.size() != want)
    fail_at(line, "wgmma.mma_async with A from " +
                      std::string(mo.a_regs ? "registers" : "a descriptor") + " expects " +
                      std::to_string(want) + " operands, found " + std::to_string(ops.size()));
  // The immediates: imm-scale-a/b are 1 or -1, imm-trans-a/b 0 or 1.
  auto imm = [&](size_t i, const char* what, bool scale) -> int {
    const ParsedOperand& p = ops[i];
    const int64_t v = p.kind == ParsedOperand::kImm && p.number.kind == NumberValue::kInt
                          ? static_cast<int64_t>(p.number.bits)
                          : 2;
    if (scale ? (v != 1 && v != -1) : (v != 0 && v != 1))
      fail_at(line, std::string("wgmma.mma_async: ") + what + " must be the constant " +
                        (scale ? "1 or -1" : "0 or 1"));
    return static_cast<int>(v);
  };
  if (!integer) {
    mo.scale_a = static_cast<int8_t>(imm(4, "imm-scale-a", true));
    mo.scale_b = static_cast<int8_t>(imm(5, "imm-scale-b", true));
  }
  if (transposable) {
    if (!mo.a_regs) mo.trans_a = imm(6, "imm-trans-a", false) == 1;
    mo.trans_b = imm(want - 1, "imm-trans-b", false) == 1;
  }
  if (mo.a_regs) {
    // Each warp's 16 rows of A from registers are laid out as mma.m16n8kK's A fragment.
    MatrixOp fragment;
    fragment.m = 16;
    fragment.k = mo.k;
    fragment.a = mo.a;
    mo.a_frag = static_cast<uint8_t>(16 * mo.k / 32);
    for (int lane = 0; lane < 32; ++lane)
      for (int i = 0; i < mo.a_frag; ++i) {
        auto [r, c] = a_position(fragment, lane, i);
        mo.a_map.push_back(static_cast<uint16_t>(r * mo.k + c));
      }
  }
  const size_t d_regs = mo.d == Type::kF16 ? n / 4 : n / 2;
  if (ops[0].kind == ParsedOperand::kVector)
    for (const ParsedOperand& e : ops[0].elems)
      if (e.kind != ParsedOperand::kReg)
        fail_at(line, "wgmma.mma_async: the accumulator D must be registers (it is also read)");
  in.type = mo.d;
  in.type2 = mo.a;
  in.nops = 4;
  in.ops[0] = dst_vector(ops[0], d_regs);
  in.ops[1] = mo.a_regs ? src_vector(ops[1], Type::kB32, 4) : src(ops[1], Type::kU64);
  in.ops[2] = src(ops[2], Type::kU64);
  in.ops[3] = src(ops[3], Type::kPred);
  in.matrix = static_cast<uint32_t>(m_.matrix_ops.size());
  m_.matrix_ops.push_back(std::move(mo));
}

void Parser::lower_ldmatrix(Instr& in, std::string_view op,
                            const std::vector<std::string_view>& mods,
                            std::vector<ParsedOperand>& ops, uint32_t line) {
  in.type = Type::kB16;
  in.vec = 1;
  for (std::string_view m : mods) {
    if (m == ".x2") in.vec = 2;
    if (m == ".x4") in.vec = 4;
    if (m == ".trans") in.sub = 1;
  }
  if (ops.size() != 2)
    fail_at(line, std::string(op) + " expects 2 operands, found " + std::to_string(ops.size()));
  in.nops = 2;
  in.space = Space::kShared;  // the forms admit .shared and .shared::cta only
  if (op == "ldmatrix") {
    in.op = Op::kLdmatrix;
    in.ops[0] = dst_vector(ops[0], in.vec);
    in.ops[1] = addr(ops[1]);
  } else if (op == "stmatrix") {
    in.op = Op::kStmatrix;
    in.ops[0] = addr(ops[0]);
    in.ops[1] = src_vector(ops[1], Type::kB32, in.vec);
  } else {
    in.op = Op::kMovmatrix;
    in.space = Space::kNone;
    in.ops[0] = dst(ops[0]);
    in.ops[1] = src(ops[1], Type::kB32);
  }
}

}  // namespace cusnap::emu::ptx

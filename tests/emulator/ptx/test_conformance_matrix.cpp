// Conformance of mma.sync.aligned: every shape and type the emulator executes, one warp per
// case, every lane's D fragment compared bit for bit with a host GEMM. The fragment layouts below
// are written from the PTX ISA's "Matrix fragments for mma.m*n*k*" text (row/col formulas with
// groupID = laneid >> 2, threadID_in_group = laneid % 4), independently of the emulator's
// lower_matrix.cpp; the float reference follows the accumulation docs/emulator.md documents
// (C, then each product in increasing k, one f32 fma each; f64 fma chain).
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "harness.h"

using namespace cusnap::emu::ptx;
using namespace cusnap::emu::ptx::test;

namespace {

enum class Kind { kF16, kBF16, kTF32, kF32, kF64, kS8, kU8, kS32 };

const char* name(Kind k) {
  switch (k) {
    case Kind::kF16:
      return "f16";
    case Kind::kBF16:
      return "bf16";
    case Kind::kTF32:
      return "tf32";
    case Kind::kF32:
      return "f32";
    case Kind::kF64:
      return "f64";
    case Kind::kS8:
      return "s8";
    case Kind::kU8:
      return "u8";
    case Kind::kS32:
      return "s32";
  }
  return "";
}

int bits(Kind k) {
  switch (k) {
    case Kind::kS8:
    case Kind::kU8:
      return 8;
    case Kind::kF16:
    case Kind::kBF16:
      return 16;
    case Kind::kF64:
      return 64;
    default:
      return 32;
  }
}

struct Pos {
  int row, col;
};
using Layout = std::function<Pos(int g, int t, int i)>;

struct Case {
  int m, n, k;
  Kind d, a, b, c;
  bool satfinite;
  Layout la, lb, lc;  // per ISA figure: element i of a lane
};

// --- layouts as the ISA states them
Pos c_m16n8(int g, int t, int i) { return {i < 2 ? g : g + 8, t * 2 + (i & 0x1)}; }
Pos c_m8n8(int g, int t, int i) { return {g, t * 2 + i}; }

Pos a_16816_f16(int g, int t, int i) {
  const int row = ((i < 2) || (i >= 4 && i < 6)) ? g : g + 8;
  const int col = i < 4 ? (t * 2) + (i & 0x1) : (t * 2) + (i & 0x1) + 8;
  return {row, col};
}
Pos b_16816_f16(int g, int t, int i) {
  return {i < 2 ? (t * 2) + (i & 0x1) : (t * 2) + (i & 0x1) + 8, g};
}
Pos a_1688_f16(int g, int t, int i) { return {i < 2 ? g : g + 8, t * 2 + (i & 0x1)}; }
Pos b_1688_f16(int g, int t, int i) { return {t * 2 + i, g}; }
Pos a_1688_tf32(int g, int t, int i) {
  return {(i == 0 || i == 2) ? g : g + 8, (i == 0 || i == 1) ? t : t + 4};
}
Pos b_1688_tf32(int g, int t, int i) { return {i == 0 ? t : t + 4, g}; }
Pos a_1684_tf32(int g, int t, int i) { return {i == 0 ? g : g + 8, t}; }
Pos b_1684_tf32(int g, int t, int) { return {t, g}; }
Pos a_884_f64(int g, int t, int) { return {g, t}; }
Pos a_1684_f64(int g, int t, int i) { return {i == 0 ? g : g + 8, t}; }
Pos b_1684_f64(int g, int t, int) { return {t, g}; }
Pos a_1688_f64(int g, int t, int i) {
  return {(i == 0 || i == 2) ? g : g + 8, (i == 0 || i == 1) ? t : t + 4};
}
Pos b_1688_f64(int g, int t, int i) { return {i == 0 ? t : t + 4, g}; }
Pos a_16816_f64(int g, int t, int i) {
  return {i % 2 == 0 ? g : g + 8, i % 2 == 0 ? (i * 2) + t : (i * 2) - 2 + t};
}
Pos b_16816_f64(int g, int t, int i) { return {t + (i * 4), g}; }
Pos b_884_f64(int g, int t, int) { return {t, g}; }
Pos a_8816_i8(int g, int t, int i) { return {g, t * 4 + i}; }
Pos b_i8_k16(int g, int t, int i) { return {t * 4 + i, g}; }
Pos a_16816_i8(int g, int t, int i) { return {i < 4 ? g : g + 8, t * 4 + (i & 0x3)}; }
Pos a_16832_i8(int g, int t, int i) {
  const int row = ((i < 4) || (i >= 8 && i < 12)) ? g : g + 8;
  const int col = i < 8 ? (t * 4) + (i & 0x3) : (t * 4) + (i & 0x3) + 16;
  return {row, col};
}
Pos b_16832_i8(int g, int t, int i) {
  return {i < 4 ? (t * 4) + (i & 0x3) : (t * 4) + (i & 0x3) + 16, g};
}

// --- host number formats (no emulator code)
float f16_value(uint32_t h) { return static_cast<float>(std::bit_cast<_Float16>(uint16_t(h))); }
uint32_t f16_bits(float f) {
  if (std::isnan(f)) return 0x7fff;
  return std::bit_cast<uint16_t>(static_cast<_Float16>(f));
}
float bf16_value(uint32_t h) { return std::bit_cast<float>(h << 16); }
uint32_t f32_bits(float f) { return std::isnan(f) ? 0x7fffffffu : std::bit_cast<uint32_t>(f); }

// Random element encodings, some of them edge values.
uint64_t random_element(Kind k, Rng& rng, bool edges) {
  const uint32_t r = rng.next();
  const bool edge = edges && (r % 23 == 0);
  switch (k) {
    case Kind::kF16: {
      if (edge) {
        const uint32_t e[] = {0x7c00, 0xfc00, 0x7e00, 0x0001, 0x83ff, 0x7bff, 0x8000};
        return e[(r >> 8) % 7];
      }
      // Exponents 2^-6 .. 2^5 with full mantissas; sometimes a subnormal
      if (r % 11 == 0) return (r >> 8) & 0x83ff;
      return ((r >> 8) & 0x8000) | ((9 + (r >> 16) % 12) << 10) | (r & 0x3ff);
    }
    case Kind::kBF16: {
      if (edge) {
        const uint32_t e[] = {0x7f80, 0xff80, 0x7fc0, 0x0001, 0x7f7f, 0x8000};
        return e[(r >> 8) % 6];
      }
      return ((r >> 8) & 0x8000) | ((120 + (r >> 16) % 14) << 7) | (r & 0x7f);
    }
    case Kind::kTF32:
    case Kind::kF32: {
      if (edge) {
        const uint32_t e[] = {0x7f800000, 0xff800000, 0x7fc00000,
                              0x00000001, 0x7f7fffff, 0x80000000};
        return e[(r >> 8) % 6];
      }
      // Low mantissa bits set on purpose: tf32 ignores them.
      return ((rng.next() & 1u) << 31) | ((120 + r % 14) << 23) | (rng.next() & 0x7fffff);
    }
    case Kind::kF64: {
      if (edge) {
        const uint64_t e[] = {0x7ff0000000000000, 0xfff0000000000000, 0x7ff8000000000000, 1,
                              0x7fefffffffffffff};
        return e[(r >> 8) % 5];
      }
      const uint64_t man = (uint64_t{rng.next()} << 20) ^ rng.next();
      return (uint64_t{r & 1} << 63) | (uint64_t{1000 + (r >> 4) % 40} << 52) |
             (man & 0xfffffffffffff);
    }
    case Kind::kS8:
    case Kind::kU8:
      return r & 0xff;
    case Kind::kS32:
      if (edge) return (r & 1) ? 0x7ffff000u + (r >> 20) : 0x80000fffu - (r >> 20);
      return r;
  }
  return 0;
}

std::string reg_type(Kind k) {
  switch (k) {
    case Kind::kF32:
      return ".f32";
    case Kind::kF64:
      return ".f64";
    case Kind::kS32:
      return ".s32";
    default:
      return ".b32";
  }
}

// Registers per fragment and bytes per register.
int per_reg(Kind k) { return bits(k) == 64 ? 1 : 32 / bits(k); }
int reg_bytes(Kind k) { return bits(k) == 64 ? 8 : 4; }

std::string vec(const char* prefix, int n) {
  std::string s = "{";
  for (int i = 0; i < n; ++i) {
    s += i ? ", %" : "%";
    s += prefix;
    s += std::to_string(i);
  }
  return s + "}";
}

// A kernel: each lane loads its A, B, C registers from pa/pb/pc (lane-major), runs the mma and
// stores D to pd.
std::string kernel(const Case& cs, int na, int nb, int nc, int nd) {
  std::string t =
      ".version 8.0\n.target sm_80\n.address_size 64\n"
      ".visible .entry k(.param .u64 pa, .param .u64 pb, .param .u64 pc, "
      ".param .u64 pd)\n{\n  .reg .b64 %p<12>;\n  .reg .b32 %lane;\n";
  t += "  .reg " + reg_type(cs.a) + " %a<" + std::to_string(na) + ">;\n";
  t += "  .reg " + reg_type(cs.b) + " %b<" + std::to_string(nb) + ">;\n";
  t += "  .reg " + reg_type(cs.c) + " %c<" + std::to_string(nc) + ">;\n";
  t += "  .reg " + reg_type(cs.d) + " %d<" + std::to_string(nd) + ">;\n";
  t += "  mov.u32 %lane, %tid.x;\n";
  const char* params[] = {"pa", "pb", "pc", "pd"};
  const Kind kinds[] = {cs.a, cs.b, cs.c, cs.d};
  const int counts[] = {na, nb, nc, nd};
  const char* regs[] = {"a", "b", "c", "d"};
  for (int o = 0; o < 4; ++o) {
    const int stride = counts[o] * reg_bytes(kinds[o]);
    t += "  ld.param.u64 %p" + std::to_string(o) + ", [" + params[o] + "];\n";
    t += "  mul.wide.u32 %p" + std::to_string(o + 4) + ", %lane, " + std::to_string(stride) + ";\n";
    t += "  add.u64 %p" + std::to_string(o + 8) + ", %p" + std::to_string(o) + ", %p" +
         std::to_string(o + 4) + ";\n";
    if (o == 3) break;
    for (int r = 0; r < counts[o]; ++r)
      t += "  ld.global" + reg_type(kinds[o]) + " %" + regs[o] + std::to_string(r) + ", [%p" +
           std::to_string(o + 8) + "+" + std::to_string(r * reg_bytes(kinds[o])) + "];\n";
  }
  t += "  mma.sync.aligned.m" + std::to_string(cs.m) + "n" + std::to_string(cs.n) + "k" +
       std::to_string(cs.k) + ".row.col" + (cs.satfinite ? ".satfinite" : "") + "." + name(cs.d) +
       "." + name(cs.a) + "." + name(cs.b) + "." + name(cs.c) + " " + vec("d", nd) + ", " +
       vec("a", na) + ", " + vec("b", nb) + ", " + vec("c", nc) + ";\n";
  for (int r = 0; r < nd; ++r)
    t += "  st.global" + reg_type(cs.d) + " [%p11+" + std::to_string(r * reg_bytes(cs.d)) +
         "], %d" + std::to_string(r) + ";\n";
  return t + "  ret;\n}\n";
}

double float_value(Kind k, uint64_t e) {
  switch (k) {
    case Kind::kF16:
      return f16_value(static_cast<uint32_t>(e));
    case Kind::kBF16:
      return bf16_value(static_cast<uint32_t>(e));
    case Kind::kTF32:
      return std::bit_cast<float>(static_cast<uint32_t>(e) & 0xffffe000u);
    case Kind::kF32:
      return std::bit_cast<float>(static_cast<uint32_t>(e));
    case Kind::kF64:
      return std::bit_cast<double>(e);
    default:
      return 0;
  }
}

int64_t int_value(Kind k, uint64_t e) {
  if (k == Kind::kS8) return static_cast<int8_t>(e);
  if (k == Kind::kU8) return static_cast<uint8_t>(e);
  return static_cast<int32_t>(e);
}

std::string label(const Case& cs);

void run_case(const Case& cs, uint32_t seed, bool edges) {
  const int fa = cs.m * cs.k / 32, fb = cs.k * cs.n / 32, fc = cs.m * cs.n / 32;
  const int na = fa / per_reg(cs.a), nb = fb / per_reg(cs.b), nc = fc / per_reg(cs.c),
            nd = fc / per_reg(cs.d);
  Rng rng(seed);
  std::vector<uint64_t> A(cs.m * cs.k), B(cs.k * cs.n), C(cs.m * cs.n);
  for (auto& e : A) e = random_element(cs.a, rng, edges);
  for (auto& e : B) e = random_element(cs.b, rng, edges);
  for (auto& e : C) e = random_element(cs.c, rng, edges);
  // Pack per-lane registers from the matrices by the ISA layouts.
  auto pack = [&](const std::vector<uint64_t>& M, int cols, const Layout& l, int frag, Kind kd) {
    const int per = per_reg(kd), w = bits(kd);
    std::vector<uint8_t> bytes(32 * (frag / per) * reg_bytes(kd));
    for (int lane = 0; lane < 32; ++lane) {
      for (int r = 0; r < frag / per; ++r) {
        uint64_t word = 0;
        for (int s = 0; s < per; ++s) {
          Pos p = l(lane >> 2, lane % 4, r * per + s);
          word |= M[p.row * cols + p.col] << (s * w);
        }
        std::memcpy(bytes.data() + (lane * (frag / per) + r) * reg_bytes(kd), &word, reg_bytes(kd));
      }
    }
    return bytes;
  };
  HostMemory mem;
  auto* pa = mem.upload(pack(A, cs.k, cs.la, fa, cs.a));
  auto* pb = mem.upload(pack(B, cs.n, cs.lb, fb, cs.b));
  auto* pc = mem.upload(pack(C, cs.n, cs.lc, fc, cs.c));
  auto* pd = mem.zeros<uint8_t>(32 * nd * reg_bytes(cs.d));
  const std::string text = kernel(cs, na, nb, nc, nd);
  auto prog = compile_or_fail(text);
  require_success(run(*prog, "k", {1}, {32}, Args().add(pa).add(pb).add(pc).add(pd), mem));
  // Host GEMM.
  std::vector<uint64_t> D(cs.m * cs.n);
  for (int r = 0; r < cs.m; ++r) {
    for (int c = 0; c < cs.n; ++c) {
      const uint64_t ce = C[r * cs.n + c];
      if (cs.d == Kind::kS32) {
        int64_t acc = int_value(cs.c, ce);
        for (int kk = 0; kk < cs.k; ++kk)
          acc += int_value(cs.a, A[r * cs.k + kk]) * int_value(cs.b, B[kk * cs.n + c]);
        if (cs.satfinite) acc = std::min<int64_t>(std::max<int64_t>(acc, INT32_MIN), INT32_MAX);
        D[r * cs.n + c] = static_cast<uint32_t>(acc);
      } else if (cs.d == Kind::kF64) {
        double acc = float_value(cs.c, ce);
        for (int kk = 0; kk < cs.k; ++kk)
          acc = std::fma(float_value(cs.a, A[r * cs.k + kk]), float_value(cs.b, B[kk * cs.n + c]),
                         acc);
        D[r * cs.n + c] = std::isnan(acc) ? 0x7ff8000000000000 : std::bit_cast<uint64_t>(acc);
      } else {
        float acc = static_cast<float>(float_value(cs.c, ce));
        for (int kk = 0; kk < cs.k; ++kk)
          acc = std::fmaf(static_cast<float>(float_value(cs.a, A[r * cs.k + kk])),
                          static_cast<float>(float_value(cs.b, B[kk * cs.n + c])), acc);
        D[r * cs.n + c] = cs.d == Kind::kF16 ? f16_bits(acc) : f32_bits(acc);
      }
    }
  }
  // Every lane's D registers against the reference by the ISA's C/D layout.
  const int per = per_reg(cs.d), w = bits(cs.d);
  const uint64_t mask = w == 64 ? ~uint64_t{0} : (uint64_t{1} << w) - 1;
  int mismatches = 0;
  std::vector<uint64_t> got_d(cs.m * cs.n);
  for (int lane = 0; lane < 32; ++lane) {
    for (int r = 0; r < nd; ++r) {
      uint64_t word = 0;
      std::memcpy(&word, pd + (lane * nd + r) * reg_bytes(cs.d), reg_bytes(cs.d));
      for (int s = 0; s < per; ++s) {
        Pos p = cs.lc(lane >> 2, lane % 4, r * per + s);
        uint64_t got = (word >> (s * w)) & mask;
        got_d[p.row * cs.n + p.col] = got;
        uint64_t want = D[p.row * cs.n + p.col];
        // f64 NaN: the payload is the host's; only NaN-ness is specified.
        if (cs.d == Kind::kF64 && std::isnan(std::bit_cast<double>(want)) &&
            std::isnan(std::bit_cast<double>(got)))
          continue;
        if (got != want && ++mismatches <= 8) {
          INFO(text);
          FAIL_CHECK("lane " << lane << " reg " << r << " element (" << p.row << "," << p.col
                             << "): got 0x" << std::hex << got << ", want 0x" << want);
        }
      }
    }
  }
  CHECK(mismatches == 0);
  // The conformance dump (harness.h) "mma": a failing case's A, B, C and the D it got, as
  // element bit patterns in row-major order, so the accumulation can be fitted to silicon.
  if (mismatches > 0) {
    if (std::FILE* f = open_conformance_dump("mma"); f != nullptr) {
      auto row = [&](const char* what, const std::vector<uint64_t>& v) {
        std::fprintf(f, "%s", what);
        for (uint64_t e : v) std::fprintf(f, " %llx", static_cast<unsigned long long>(e));
        std::fprintf(f, "\n");
      };
      std::fprintf(f, "case %s m%dn%dk%d seed %u edges %d\n", label(cs).c_str(), cs.m, cs.n, cs.k,
                   seed, edges ? 1 : 0);
      row("A", A), row("B", B), row("C", C), row("D", got_d);
      std::fclose(f);
    }
  }
}

std::vector<Case> cases() {
  std::vector<Case> v;
  for (Kind d : {Kind::kF32, Kind::kF16})
    for (Kind c : {Kind::kF32, Kind::kF16}) {
      v.push_back(
          {16, 8, 16, d, Kind::kF16, Kind::kF16, c, false, a_16816_f16, b_16816_f16, c_m16n8});
      v.push_back({16, 8, 8, d, Kind::kF16, Kind::kF16, c, false, a_1688_f16, b_1688_f16, c_m16n8});
    }
  v.push_back({16, 8, 16, Kind::kF32, Kind::kBF16, Kind::kBF16, Kind::kF32, false, a_16816_f16,
               b_16816_f16, c_m16n8});
  v.push_back({16, 8, 8, Kind::kF32, Kind::kBF16, Kind::kBF16, Kind::kF32, false, a_1688_f16,
               b_1688_f16, c_m16n8});
  v.push_back({16, 8, 8, Kind::kF32, Kind::kTF32, Kind::kTF32, Kind::kF32, false, a_1688_tf32,
               b_1688_tf32, c_m16n8});
  v.push_back({16, 8, 4, Kind::kF32, Kind::kTF32, Kind::kTF32, Kind::kF32, false, a_1684_tf32,
               b_1684_tf32, c_m16n8});
  v.push_back({8, 8, 4, Kind::kF64, Kind::kF64, Kind::kF64, Kind::kF64, false, a_884_f64, b_884_f64,
               c_m8n8});
  v.push_back({16, 8, 4, Kind::kF64, Kind::kF64, Kind::kF64, Kind::kF64, false, a_1684_f64,
               b_1684_f64, c_m16n8});
  v.push_back({16, 8, 8, Kind::kF64, Kind::kF64, Kind::kF64, Kind::kF64, false, a_1688_f64,
               b_1688_f64, c_m16n8});
  v.push_back({16, 8, 16, Kind::kF64, Kind::kF64, Kind::kF64, Kind::kF64, false, a_16816_f64,
               b_16816_f64, c_m16n8});
  for (bool sat : {false, true})
    for (Kind a : {Kind::kS8, Kind::kU8})
      for (Kind b : {Kind::kS8, Kind::kU8}) {
        v.push_back({8, 8, 16, Kind::kS32, a, b, Kind::kS32, sat, a_8816_i8, b_i8_k16, c_m8n8});
        v.push_back({16, 8, 16, Kind::kS32, a, b, Kind::kS32, sat, a_16816_i8, b_i8_k16, c_m16n8});
        v.push_back(
            {16, 8, 32, Kind::kS32, a, b, Kind::kS32, sat, a_16832_i8, b_16832_i8, c_m16n8});
      }
  return v;
}

std::string label(const Case& cs) {
  std::string s(1, 'm');  // not "m" + ...: GCC 12 warns falsely (-Wrestrict) on that
  return s + std::to_string(cs.m) + "n" + std::to_string(cs.n) + "k" + std::to_string(cs.k) +
         (cs.satfinite ? ".satfinite." : ".") + name(cs.d) + "." + name(cs.a) + "." + name(cs.b) +
         "." + name(cs.c);
}

}  // namespace

TEST_CASE("mma.sync every shape and type against a host GEMM, every lane", "[conformance][mma]") {
  uint32_t seed = 1;
  for (const Case& cs : cases()) {
    INFO(label(cs));
    for (int rep = 0; rep < 3; ++rep) run_case(cs, seed++, false);
  }
}

TEST_CASE("mma.sync edge values: NaN, Inf, subnormals, overflow, saturation",
          "[conformance][mma]") {
  uint32_t seed = 1000;
  for (const Case& cs : cases()) {
    INFO(label(cs));
    for (int rep = 0; rep < 6; ++rep) run_case(cs, seed++, true);
  }
}

// The emulator's answer to what the ISA leaves undefined: not a question for silicon, and a
// failed launch would end the driver run's context.
#ifndef CUSNAP_TEST_THROUGH_DRIVER
TEST_CASE("mma.sync.aligned executed by part of a warp fails the launch", "[conformance][mma]") {
  const std::string text =
      ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n"
      "  .reg .b32 %r<8>;\n  .reg .f32 %f<8>;\n  .reg .pred %p;\n"
      "  mov.u32 %r0, %tid.x;\n  setp.lt.u32 %p, %r0, 16;\n"
      "  @%p mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%f0,%f1,%f2,%f3}, {%r1,%r2}, "
      "{%r3}, {%f4,%f5,%f6,%f7};\n  ret;\n}\n";
  auto prog = compile_or_fail(text);
  HostMemory mem;
  LaunchResult r = run(*prog, "k", {1}, {32}, Args(), mem);
  CHECK(r.status == LaunchStatus::kIllegalInstruction);
  CHECK(r.message.find("mma.sync.aligned") != std::string::npos);
  // A partial warp cannot execute it either.
  LaunchResult r2 = run(*prog, "k", {1}, {8}, Args(), mem);
  CHECK(r2.status == LaunchStatus::kIllegalInstruction);
}
#endif  // CUSNAP_TEST_THROUGH_DRIVER

namespace {

// ldmatrix / stmatrix / movmatrix on 8x8 b16 matrices. The ISA: row r of matrix j comes from
// (goes to) the 16-byte address given by thread 8j + r; thread l's register j holds the
// elements (l/4, 2(l%4)) and (l/4, 2(l%4)+1) of matrix j, or with .trans of its transpose.
uint16_t fragment_element(const uint16_t (&m)[8][8], int lane, int half, bool trans) {
  const int row = lane / 4, col = (lane % 4) * 2 + half;
  return trans ? m[col][row] : m[row][col];
}

// The kernel: copies 32 x 16 bytes of `in` into shared memory, runs the instruction with row
// addresses sm + offs[lane] (ldmatrix/stmatrix), registers from regs_in, stores the registers to
// regs_out and the shared buffer to sm_out.
std::string matrix_kernel(const std::string& op, int count, bool trans) {
  std::string t =
      ".version 8.0\n.target sm_90\n.address_size 64\n"
      ".visible .entry k(.param .u64 pin, .param .u64 poffs, .param .u64 pregs, .param .u64 pout,"
      " .param .u64 psm)\n{\n"
      "  .shared .align 16 .b8 sm[512];\n"
      "  .reg .b64 %p<16>;\n  .reg .b32 %r<16>;\n  .reg .b32 %x<4>;\n  .reg .b32 %y<4>;\n"
      "  mov.u32 %r0, %tid.x;\n  mul.wide.u32 %p0, %r0, 16;\n"
      "  ld.param.u64 %p1, [pin];\n  add.u64 %p2, %p1, %p0;\n"
      "  ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%p2];\n"
      "  mov.u64 %p3, sm;\n  add.u64 %p4, %p3, %p0;\n"
      "  st.shared.v4.u32 [%p4], {%r1, %r2, %r3, %r4};\n  bar.sync 0;\n"
      "  mul.wide.u32 %p5, %r0, 4;\n  ld.param.u64 %p6, [poffs];\n  add.u64 %p6, %p6, %p5;\n"
      "  ld.global.u32 %r5, [%p6];\n  cvt.u64.u32 %p7, %r5;\n  add.u64 %p8, %p3, %p7;\n"
      "  ld.param.u64 %p9, [pregs];\n  add.u64 %p9, %p9, %p0;\n"
      "  ld.global.v4.u32 {%x0, %x1, %x2, %x3}, [%p9];\n"
      "  mov.b32 %y0, 0;\n  mov.b32 %y1, 0;\n  mov.b32 %y2, 0;\n  mov.b32 %y3, 0;\n";
  std::string regs_x = "{%x0", regs_y = "{%y0";
  for (int j = 1; j < count; ++j) {
    regs_x += ", %x" + std::to_string(j);
    regs_y += ", %y" + std::to_string(j);
  }
  regs_x += "}";
  regs_y += "}";
  const std::string mods = ".sync.aligned.m8n8" +
                           (op == "movmatrix" ? std::string() : ".x" + std::to_string(count)) +
                           (trans ? ".trans" : "") + (op == "movmatrix" ? "" : ".shared") + ".b16";
  if (op == "ldmatrix") t += "  ldmatrix" + mods + " " + regs_y + ", [%p8];\n";
  if (op == "stmatrix") t += "  bar.sync 0;\n  stmatrix" + mods + " [%p8], " + regs_x + ";\n";
  if (op == "movmatrix") t += "  movmatrix" + mods + " %y0, %x0;\n";
  t += "  bar.sync 0;\n  ld.param.u64 %p10, [pout];\n  add.u64 %p10, %p10, %p0;\n"
       "  st.global.v4.u32 [%p10], {%y0, %y1, %y2, %y3};\n"
       "  ld.shared.v4.u32 {%r1, %r2, %r3, %r4}, [%p4];\n"
       "  ld.param.u64 %p11, [psm];\n  add.u64 %p11, %p11, %p0;\n"
       "  st.global.v4.u32 [%p11], {%r1, %r2, %r3, %r4};\n  ret;\n}\n";
  return t;
}

void run_matrix_case(const std::string& op, int count, bool trans, uint32_t seed) {
  Rng rng(seed);
  std::vector<uint16_t> in(256), regs(256);
  for (auto& v : in) v = static_cast<uint16_t>(rng.next());
  for (auto& v : regs) v = static_cast<uint16_t>(rng.next());
  // Row addresses: a permutation of the 32 rows of the buffer (16-byte aligned).
  std::vector<uint32_t> offs(32);
  for (int i = 0; i < 32; ++i) offs[i] = 16 * static_cast<uint32_t>((i * 13 + 5) % 32);
  HostMemory mem;
  auto* pin = mem.upload(in);
  auto* poffs = mem.upload(offs);
  auto* pregs = mem.upload(regs);
  auto* pout = mem.zeros<uint16_t>(256);
  auto* psm = mem.zeros<uint16_t>(256);
  const std::string text = matrix_kernel(op, count, trans);
  INFO(text);
  auto prog = compile_or_fail(text);
  require_success(
      run(*prog, "k", {1}, {32}, Args().add(pin).add(poffs).add(pregs).add(pout).add(psm), mem));
  std::vector<uint16_t> want_sm = in;
  std::vector<uint16_t> want_out(256, 0);
  uint16_t mat[4][8][8];
  if (op == "ldmatrix") {
    for (int j = 0; j < count; ++j)
      for (int r = 0; r < 8; ++r)
        for (int c = 0; c < 8; ++c) mat[j][r][c] = in[offs[8 * j + r] / 2 + c];
    for (int lane = 0; lane < 32; ++lane)
      for (int j = 0; j < count; ++j)
        for (int h = 0; h < 2; ++h)
          want_out[lane * 8 + 2 * j + h] = fragment_element(mat[j], lane, h, trans);
  } else {
    // Registers as fragments: regs[lane * 8 + 2 j + h] is element h of register j.
    for (int j = 0; j < count; ++j)
      for (int lane = 0; lane < 32; ++lane)
        for (int h = 0; h < 2; ++h) {
          const int row = lane / 4, col = (lane % 4) * 2 + h;
          const uint16_t v = regs[lane * 8 + 2 * j + h];
          if (op == "stmatrix" && trans)
            mat[j][col][row] = v;  // the fragment is of the transpose
          else
            mat[j][row][col] = v;
        }
    if (op == "stmatrix") {
      for (int j = 0; j < count; ++j)
        for (int r = 0; r < 8; ++r)
          for (int c = 0; c < 8; ++c) want_sm[offs[8 * j + r] / 2 + c] = mat[j][r][c];
    } else {
      for (int lane = 0; lane < 32; ++lane)
        for (int h = 0; h < 2; ++h)
          want_out[lane * 8 + h] = fragment_element(mat[0], lane, h, true);
    }
  }
  int bad = 0;
  for (int i = 0; i < 256; ++i) {
    if (pout[i] != want_out[i] && ++bad < 6)
      FAIL_CHECK("register word " << i << ": got " << pout[i] << ", want " << want_out[i]);
    if (psm[i] != want_sm[i] && ++bad < 6)
      FAIL_CHECK("shared b16 " << i << ": got " << psm[i] << ", want " << want_sm[i]);
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("ldmatrix and stmatrix x1 x2 x4, with and without .trans, movmatrix",
          "[conformance][ldmatrix]") {
  uint32_t seed = 7;
  for (const char* op : {"ldmatrix", "stmatrix"})
    for (int count : {1, 2, 4})
      for (bool trans : {false, true}) {
        INFO(op << " x" << count << (trans ? " .trans" : ""));
        run_matrix_case(op, count, trans, seed++);
      }
  run_matrix_case("movmatrix", 1, true, 99);
}

// The emulator's answer to what the ISA leaves undefined: not a question for silicon, and a
// failed launch would end the driver run's context.
#ifndef CUSNAP_TEST_THROUGH_DRIVER
TEST_CASE("ldmatrix row addresses must be 16-byte aligned shared addresses",
          "[conformance][ldmatrix]") {
  const std::string text =
      ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n"
      "  .shared .align 16 .b8 sm[512];\n  .reg .b64 %p<4>;\n  .reg .b32 %r<4>;\n"
      "  mov.u32 %r0, %tid.x;\n  mul.wide.u32 %p0, %r0, 8;\n  mov.u64 %p1, sm;\n"
      "  add.u64 %p2, %p1, %p0;\n"
      "  ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r1}, [%p2];\n  ret;\n}\n";
  auto prog = compile_or_fail(text);
  HostMemory mem;
  LaunchResult r = run(*prog, "k", {1}, {32}, Args(), mem);
  CHECK(r.status == LaunchStatus::kMisalignedAddress);
}
#endif  // CUSNAP_TEST_THROUGH_DRIVER

TEST_CASE("mma.sync waits for lanes that arrive late on a diverged path", "[conformance][mma]") {
  // Lanes 16-31 spin 3000 times first: the scheduler's fairness rule runs lanes 0-15 ahead to the
  // mma, where they must wait for the others instead of failing or computing without them.
  const std::string text =
      ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 out)\n{\n"
      "  .reg .b32 %r<8>;\n  .reg .f32 %f<8>;\n  .reg .pred %p;\n  .reg .b64 %rd<4>;\n"
      "  mov.u32 %r0, %tid.x;\n  setp.lt.u32 %p, %r0, 16;\n  @%p bra MMA;\n"
      "  mov.u32 %r5, 0;\nLOOP:\n  add.u32 %r5, %r5, 1;\n  setp.lt.u32 %p, %r5, 3000;\n"
      "  @%p bra LOOP;\nMMA:\n"
      "  mov.b32 %r1, 0x3c003c00;\n  mov.b32 %r2, 0x3c003c00;\n  mov.b32 %r3, 0x40004000;\n"
      "  mov.f32 %f4, 0f3F800000;\n  mov.f32 %f5, 0f3F800000;\n  mov.f32 %f6, 0f3F800000;\n"
      "  mov.f32 %f7, 0f3F800000;\n"
      "  mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%f0,%f1,%f2,%f3}, {%r1,%r2}, "
      "{%r3}, {%f4,%f5,%f6,%f7};\n"
      "  ld.param.u64 %rd1, [out];\n  mul.wide.u32 %rd2, %r0, 16;\n  add.u64 %rd3, %rd1, %rd2;\n"
      "  st.global.v4.f32 [%rd3], {%f0,%f1,%f2,%f3};\n  ret;\n}\n";
  auto prog = compile_or_fail(text);
  HostMemory mem;
  float* out = mem.zeros<float>(128);
  require_success(run(*prog, "k", {1}, {32}, Args().add(out), mem));
  for (int i = 0; i < 128; ++i) REQUIRE(out[i] == 17.0f);  // 1 + 8 products of 1 * 2
}

// Per-instruction conformance harness: one PTX instruction in a small kernel, run through the whole
// engine (parse -> lower -> interpret) on one lane per input case, each lane compared with a host
// reference the test computes independently (<cmath>, <cfenv> rounding modes, integer formulas;
// never the ALU's own functions).
//
// The kernel loads three 64-bit input slots per lane into %a, %b, %c (declared at the widths the
// case names; 1 = predicate, read as "slot != 0"), executes the instruction, and stores %d (and
// the optional second destination %q) into two 64-bit output slots.
#pragma once

#include <array>
#include <bit>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"

namespace cusnap::emu::ptx::conformance {

using Triple = std::array<uint64_t, 3>;
using Inputs = std::vector<Triple>;

// Register widths of the operands: 1 = .pred, 16/32/64 = .bN, 0 = unused.
struct Shape {
  int d = 32, a = 32, b = 0, c = 0, q = 0;
};

inline uint64_t width_mask(int bits) {
  return bits >= 64 ? ~0ull : bits <= 1 ? 1 : ((1ull << bits) - 1);
}

inline std::string reg_decl(int bits, const char* name) {
  if (bits == 0) return "";
  std::string t = bits == 1 ? ".pred" : ".b" + std::to_string(bits);
  return "  .reg " + t + " " + name + ";\n";
}

inline std::string load_slot(int bits, const char* reg, int offset) {
  if (bits == 0) return "";
  const std::string at = "[%pa+" + std::to_string(offset) + "]";
  if (bits == 1)
    return "  { .reg .b64 t; ld.global.b64 t, " + at + "; setp.ne.b64 " + reg + ", t, 0; }\n";
  return "  ld.global.b" + std::to_string(bits) + " " + reg + ", " + at + ";\n";
}

inline std::string store_slot(int bits, const char* reg, int offset) {
  if (bits == 0) return "";
  const std::string at = "[%po+" + std::to_string(offset) + "]";
  if (bits == 1)
    return "  { .reg .b32 t; selp.u32 t, 1, 0, " + std::string(reg) + "; st.global.b32 " + at +
           ", t; }\n";
  return "  st.global.b" + std::to_string(bits) + " " + at + ", " + reg + ";\n";
}

inline std::string conformance_module(const std::string& instruction, const Shape& s) {
  std::string m =
      ".version 9.0\n.target sm_90\n.address_size 64\n"
      ".visible .entry k(.param .u64 pin, .param .u64 pout, .param .u32 n)\n{\n"
      "  .reg .b64 %pa, %po, %off;\n  .reg .b32 %i, %nt, %cta, %n;\n  .reg .pred %past;\n";
  m += reg_decl(s.d, "%d") + reg_decl(s.q, "%q") + reg_decl(s.a, "%a") + reg_decl(s.b, "%b") +
       reg_decl(s.c, "%c");
  m += "  ld.param.u64 %pa, [pin];\n  ld.param.u64 %po, [pout];\n  ld.param.u32 %n, [n];\n"
       "  mov.u32 %i, %tid.x;\n  mov.u32 %nt, %ntid.x;\n  mov.u32 %cta, %ctaid.x;\n"
       "  mad.lo.u32 %i, %cta, %nt, %i;\n  setp.ge.u32 %past, %i, %n;\n  @%past bra DONE;\n"
       "  mul.wide.u32 %off, %i, 24;\n  add.s64 %pa, %pa, %off;\n"
       "  mul.wide.u32 %off, %i, 16;\n  add.s64 %po, %po, %off;\n";
  m += load_slot(s.a, "%a", 0) + load_slot(s.b, "%b", 8) + load_slot(s.c, "%c", 16);
  m += "  " + instruction + (instruction.back() == '}' ? "\n" : ";\n");  // a { block } needs no ';'
  m += store_slot(s.d, "%d", 0) + store_slot(s.q, "%q", 8);
  m += "DONE:\n  ret;\n}\n";
  return m;
}

// Runs `instruction` once per input triple; returns {d, q} per lane (masked to their widths).
inline std::vector<std::array<uint64_t, 2>> run_lanes(const std::string& instruction,
                                                      const Shape& s, const Inputs& in) {
  auto prog = test::compile_or_fail(conformance_module(instruction, s));
  test::HostMemory mem;
  const uint32_t n = static_cast<uint32_t>(in.size());
  auto* din = static_cast<uint64_t*>(mem.alloc(in.size() * 24));
  for (size_t i = 0; i < in.size(); ++i)
    for (int k = 0; k < 3; ++k) din[i * 3 + k] = in[i][k];
  auto* dout = static_cast<uint64_t*>(mem.alloc(in.size() * 16));
  constexpr uint32_t kThreads = 128;
  test::require_success(test::run(*prog, "k", {(n + kThreads - 1) / kThreads}, {kThreads},
                                  test::Args().add(din).add(dout).add(n), mem));
  std::vector<std::array<uint64_t, 2>> out(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    out[i][0] = dout[i * 2] & width_mask(s.d == 1 ? 32 : s.d);
    out[i][1] = dout[i * 2 + 1] & width_mask(s.q == 1 ? 32 : s.q);
  }
  return out;
}

// Every lane of an instruction that failed, to the conformance dump (harness.h) "lanes", one line
// each: instruction, a, b, c, d, q (tab-separated, hex).
inline void dump_lanes(const std::string& instruction, const Inputs& in,
                       const std::vector<std::array<uint64_t, 2>>& out) {
  std::FILE* f = test::open_conformance_dump("lanes");
  if (f == nullptr) return;
  for (size_t i = 0; i < in.size(); ++i)
    std::fprintf(
        f, "%s\t%llx\t%llx\t%llx\t%llx\t%llx\n", instruction.c_str(),
        static_cast<unsigned long long>(in[i][0]), static_cast<unsigned long long>(in[i][1]),
        static_cast<unsigned long long>(in[i][2]), static_cast<unsigned long long>(out[i][0]),
        static_cast<unsigned long long>(out[i][1]));
  std::fclose(f);
}

// A lane's verdict: empty when the result is acceptable, else what was expected.
using Judge = std::function<std::string(const Triple& in, uint64_t d, uint64_t q)>;

// Runs the instruction and reports the first few lanes the judge rejects (one failed CHECK per
// instruction keeps thousands of lanes cheap).
inline void check_lanes(const std::string& instruction, const Shape& s, const Inputs& in,
                        const Judge& judge) {
  const auto out = run_lanes(instruction, s, in);
  std::ostringstream failures;
  int failed = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    std::string why = judge(in[i], out[i][0], out[i][1]);
    if (why.empty()) continue;
    if (++failed <= 8)
      failures << "  lane " << i << ": a=0x" << std::hex << in[i][0] << " b=0x" << in[i][1]
               << " c=0x" << in[i][2] << " -> d=0x" << out[i][0] << " q=0x" << out[i][1] << std::dec
               << ": " << why << "\n";
  }
  INFO(instruction << ": " << failed << " of " << in.size() << " lanes wrong\n" << failures.str());
  CHECK(failed == 0);
  if (failed > 0) dump_lanes(instruction, in, out);
}

inline std::string hex(uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

// Exact comparison against a reference of (a, b, c) for d (and optionally q).
using Ref = std::function<uint64_t(uint64_t, uint64_t, uint64_t)>;
inline void check_exact(const std::string& instruction, const Shape& s, const Inputs& in,
                        const Ref& ref, const Ref& qref = nullptr) {
  const uint64_t dm = width_mask(s.d == 1 ? 32 : s.d), qm = width_mask(s.q == 1 ? 32 : s.q);
  check_lanes(instruction, s, in, [&](const Triple& t, uint64_t d, uint64_t q) -> std::string {
    uint64_t e = ref(t[0], t[1], t[2]) & dm;
    if (d != e) return "expected d=" + hex(e);
    if (qref) {
      uint64_t eq = qref(t[0], t[1], t[2]) & qm;
      if (q != eq) return "expected q=" + hex(eq);
    }
    return {};
  });
}

// --- input sets -------------------------------------------------------------------------------

inline Inputs each(const std::vector<uint64_t>& a) {
  Inputs r;
  for (uint64_t x : a) r.push_back({x, 0, 0});
  return r;
}
inline Inputs cross(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  Inputs r;
  for (uint64_t x : a)
    for (uint64_t y : b) r.push_back({x, y, 0});
  return r;
}
inline Inputs cross3(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b,
                     const std::vector<uint64_t>& c) {
  Inputs r;
  for (uint64_t x : a)
    for (uint64_t y : b)
      for (uint64_t z : c) r.push_back({x, y, z});
  return r;
}
// Adds `count` pseudo-random triples whose slots are drawn from `pool` or are random bits (masked).
inline void add_random(Inputs& r, size_t count, uint32_t seed, const std::vector<uint64_t>& pool,
                       int bits) {
  test::Rng rng(seed);
  for (size_t i = 0; i < count; ++i) {
    Triple t;
    for (auto& v : t) {
      uint64_t raw = (uint64_t{rng.next()} << 32) | rng.next();
      v = (rng.next() % 3 == 0 ? pool[rng.next() % pool.size()] : raw) & width_mask(bits);
    }
    r.push_back(t);
  }
}

inline std::vector<uint64_t> int32_edges() {
  return {0,          1,          2,          3,          7,          31,         32,
          33,         63,         64,         255,        256,        0x7fff,     0x8000,
          0xffff,     0x10000,    0x12345678, 0x7ffffffe, 0x7fffffff, 0x80000000, 0x80000001,
          0xdeadbeef, 0xfffffffe, 0xffffffff, 0xffff8000};
}
inline std::vector<uint64_t> int64_edges() {
  return {0,
          1,
          2,
          3,
          63,
          64,
          65,
          0xffffffff,
          0x100000000,
          0x123456789abcdef0,
          0x7ffffffffffffffe,
          0x7fffffffffffffff,
          0x8000000000000000,
          0x8000000000000001,
          0xfffffffffffffffe,
          0xffffffffffffffff,
          0xffffffff80000000,
          0xfedcba9876543210};
}
inline std::vector<uint64_t> int16_edges() {
  return {0,     1,      2,      7,      15,     16,     17,     0xff,
          0x100, 0x7ffe, 0x7fff, 0x8000, 0x8001, 0xfffe, 0xffff, 0x1234};
}

inline uint64_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }
inline uint64_t bits_of(double d) { return std::bit_cast<uint64_t>(d); }
inline float as_f32(uint64_t v) { return std::bit_cast<float>(static_cast<uint32_t>(v)); }
inline double as_f64(uint64_t v) { return std::bit_cast<double>(v); }

inline std::vector<uint64_t> f32_edges() {
  std::vector<uint64_t> r = {0x00000000, 0x00000001, 0x00000002, 0x007fffff, 0x00800000,
                             0x00800001, 0x3f800000, 0x3f800001, 0x3f7fffff, 0x3fc00000,
                             0x40000000, 0x40400000, 0x3eaaaaab, 0x3f000000, 0x4b800000,
                             0x4b800001, 0x4f000000, 0x4f800000, 0x5f000000, 0x7f7fffff,
                             0x7f000000, 0x7f800000, 0x7fc00000, 0x7fa00001, 0x0c000000,
                             0x33800000, 0x4effffff, 0x40490fdb, 0x42c80000, 0x3dcccccd};
  const size_t n = r.size();
  for (size_t i = 0; i < n; ++i) r.push_back(r[i] | 0x80000000u);
  return r;
}
inline std::vector<uint64_t> f64_edges() {
  std::vector<uint64_t> r = {
      0x0000000000000000, 0x0000000000000001, 0x000fffffffffffff, 0x0010000000000000,
      0x3ff0000000000000, 0x3ff0000000000001, 0x3fefffffffffffff, 0x3ff8000000000000,
      0x4000000000000000, 0x3fd5555555555555, 0x3fe0000000000000, 0x4340000000000000,
      0x4340000000000001, 0x41e0000000000000, 0x41f0000000000000, 0x43e0000000000000,
      0x43f0000000000000, 0x7fefffffffffffff, 0x7fe0000000000000, 0x7ff0000000000000,
      0x7ff8000000000000, 0x7ff4000000000001, 0x36a0000000000000, 0x3ca0000000000000,
      0x400921fb54442d18, 0x47efffffe0000000, 0x47efffff00000000, 0x41dfffffffc00000};
  const size_t n = r.size();
  for (size_t i = 0; i < n; ++i) r.push_back(r[i] | 0x8000000000000000ull);
  return r;
}

// --- float reference helpers ------------------------------------------------------------------

struct Rounding {
  const char* suffix;  // ".rn" ...
  int fenv;            // FE_TONEAREST ...
};
inline constexpr Rounding kRoundings[] = {
    {".rn", FE_TONEAREST}, {".rz", FE_TOWARDZERO}, {".rm", FE_DOWNWARD}, {".rp", FE_UPWARD}};

// Evaluates f() with the host FPU in rounding mode `mode`. The test is compiled with
// -frounding-math and f reads its operands through volatiles, so nothing is folded or moved
// out of the mode's scope.
template <typename F>
auto under_rounding(int mode, F f) {
  const int old = std::fegetround();
  std::fesetround(mode);
  auto r = f();
  std::fesetround(old);
  return r;
}

inline bool is_subnormal32(uint64_t v) { return (v & 0x7f800000u) == 0 && (v & 0x7fffffu) != 0; }
inline uint64_t flush32(uint64_t v) { return is_subnormal32(v) ? (v & 0x80000000u) : v; }
inline bool is_nan32(uint64_t v) {
  return (v & 0x7f800000u) == 0x7f800000u && (v & 0x7fffffu) != 0;
}
inline bool is_nan64(uint64_t v) {
  return (v & 0x7ff0000000000000ull) == 0x7ff0000000000000ull && (v & 0xfffffffffffffull) != 0;
}
inline constexpr uint64_t kCanonicalNan32 = 0x7fffffff;

// f32 arithmetic result as the GPU delivers it: NaN canonical; with .ftz subnormal results
// flushed; with .sat clamped to [0, 1] (NaN -> +0).
inline uint64_t finish32(float r, bool ftz, bool sat) {
  uint64_t v = bits_of(r);
  if (is_nan32(v)) v = sat ? 0 : kCanonicalNan32;
  if (ftz) v = flush32(v);
  if (sat && !is_nan32(v)) {
    float f = as_f32(v);
    if (!(f > 0.0f))
      v = 0;  // negatives and -0 -> +0
    else if (f > 1.0f)
      v = bits_of(1.0f);
  }
  return v;
}

// f64 results: NaN-ness must agree (the payload of f64 NaNs is not pinned down); otherwise bits.
inline std::string same64(uint64_t got, uint64_t expected) {
  if (is_nan64(expected)) return is_nan64(got) ? "" : "expected a NaN";
  return got == expected ? "" : "expected " + hex(expected);
}

}  // namespace cusnap::emu::ptx::conformance

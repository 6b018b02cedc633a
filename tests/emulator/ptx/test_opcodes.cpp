// Opcode sweep: one instruction per module, lowered through the parser and executed on 64
// lanes with varied inputs, compared with a host computation. This checks the mapping from PTX
// syntax (modifiers, operand order, operand types, immediates) to the ALU and the interpreter's
// own plumbing (setp/selp/set/mov/pred logic/carry chains).
#include <bit>
#include <cmath>
#include <functional>

#include "harness.h"

using namespace cusnap::emu::ptx;
using namespace cusnap::emu::ptx::test;

namespace {

struct Case {
  const char* instr;  // uses %d (and %q) for results, %a %b %c %e for inputs
  int dbits;          // register widths: 1 = predicate
  int abits, bbits, cbits;
  std::function<uint64_t(uint64_t, uint64_t, uint64_t)> ref;
  int qbits = 0;  // second result (dual destination)
  std::function<uint64_t(uint64_t, uint64_t, uint64_t)> qref = nullptr;
};

std::string reg_type(int bits) {
  switch (bits) {
    case 1:
      return ".pred";
    case 16:
      return ".b16";
    case 32:
      return ".b32";
    default:
      return ".b64";
  }
}

std::string load(const char* reg, int bits, const char* addr_reg) {
  if (bits == 0) return "";
  if (bits == 1)
    return std::string("{ .reg .b32 t; ld.global.b32 t, [") + addr_reg + "]; setp.ne.b32 " + reg +
           ", t, 0; }\n";
  return std::string("ld.global.b") + std::to_string(bits) + " " + reg + ", [" + addr_reg + "];\n";
}

std::string store(const char* reg, int bits, const char* addr_reg) {
  if (bits == 1)
    return std::string("selp.u32 %tmp, 1, 0, ") + reg + ";\nst.global.b32 [" + addr_reg +
           "], %tmp;\n";
  return std::string("st.global.b") + std::to_string(bits) + " [" + addr_reg + "], " + reg + ";\n";
}

std::string module_for(const Case& c) {
  std::string s =
      ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 pin, .param "
      ".u64 pout)\n{\n";
  s += ".reg .b64 %pa, %pb, %pc, %po, %off, %pq;\n.reg .b32 %tid, %tmp;\n";
  s += ".reg " + reg_type(c.dbits) + " %d;\n";
  if (c.qbits) s += ".reg " + reg_type(c.qbits) + " %q;\n";
  s += ".reg " + reg_type(c.abits ? c.abits : 32) + " %a;\n";
  s += ".reg " + reg_type(c.bbits ? c.bbits : 32) + " %b;\n";
  s += ".reg " + reg_type(c.cbits ? c.cbits : 32) + " %c;\n";
  s += "ld.param.u64 %pa, [pin];\nld.param.u64 %po, [pout];\nmov.u32 %tid, %tid.x;\n";
  s += "mul.wide.u32 %off, %tid, 8;\nadd.s64 %pa, %pa, %off;\nadd.s64 %po, %po, %off;\n";
  s += "add.s64 %pb, %pa, 512;\nadd.s64 %pc, %pb, 512;\nadd.s64 %pq, %po, 512;\n";
  s += load("%a", c.abits, "%pa") + load("%b", c.bbits, "%pb") + load("%c", c.cbits, "%pc");
  s += std::string(c.instr) + ";\n";
  s += store("%d", c.dbits, "%po");
  if (c.qbits) s += store("%q", c.qbits, "%pq");
  s += "ret;\n}\n";
  return s;
}

uint64_t mask(int bits) { return bits >= 64 ? ~0ull : bits == 1 ? 1 : ((1ull << bits) - 1); }
int32_t s32(uint64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v)); }
uint32_t u32(uint64_t v) { return static_cast<uint32_t>(v); }
float f32(uint64_t v) { return std::bit_cast<float>(static_cast<uint32_t>(v)); }
double f64(uint64_t v) { return std::bit_cast<double>(v); }
uint64_t bf(float f) { return std::bit_cast<uint32_t>(f); }
uint64_t bd(double d) { return std::bit_cast<uint64_t>(d); }
float h2f(uint64_t bits16) {
  return static_cast<float>(std::bit_cast<_Float16>(static_cast<uint16_t>(bits16)));
}
float bh2f(uint64_t bits16) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits16 & 0xffff) << 16);
}
uint64_t lo16(uint64_t v) { return v & 0xffff; }
uint64_t hi16(uint64_t v) { return (v >> 16) & 0xffff; }
// cvt.rn{.satfinite}.f16.f32 reference from _Float16's own round-to-nearest conversion.
uint64_t f16_of(float f, bool satfinite) {
  if (std::isnan(f)) return 0x7fff;  // canonical NaN
  uint64_t h = std::bit_cast<uint16_t>(static_cast<_Float16>(f));
  if (satfinite && (h & 0x7fff) == 0x7c00) h = (h & 0x8000) | 0x7bff;  // +-inf -> +-65504
  return h;
}

void run_case(const Case& c) {
  INFO(c.instr);
  auto prog = compile_or_fail(module_for(c));
  HostMemory mem;
  const int lanes = 64;
  std::vector<uint64_t> in(lanes * 3);
  Rng rng(static_cast<uint32_t>(std::hash<std::string>{}(c.instr)));
  auto gen = [&](int bits, int lane) -> uint64_t {
    if (bits == 1) return rng.next() & 1;
    uint64_t v = (uint64_t{rng.next()} << 32) | rng.next();
    if (lane % 4 == 1) v &= 0xff;  // small values
    if (lane % 8 == 2) v = ~uint64_t{0};
    return v & mask(bits);
  };
  for (int l = 0; l < lanes; ++l) {
    in[l] = gen(c.abits, l);
    in[lanes + l] = gen(c.bbits, l);
    in[2 * lanes + l] = gen(c.cbits, l);
  }
  // Float-typed cases get ordinary float inputs (the generator gives raw bits) in the operands
  // whose width matches the float type; predicates and integer operands keep theirs.
  const std::string text = c.instr;
  const int fbits = text.find(".f64") != std::string::npos   ? 64
                    : text.find(".f32") != std::string::npos ? 32
                                                             : 0;
  if (fbits && text.rfind("cvt", 0) != 0) {
    const int widths[3] = {c.abits, c.bbits, c.cbits};
    for (int k = 0; k < 3; ++k) {
      if (widths[k] != fbits) continue;
      for (int l = 0; l < lanes; ++l) {
        double v = static_cast<double>(static_cast<int>(rng.next() % 2000) - 1000) / 7.0;
        in[k * lanes + l] = fbits == 64 ? bd(v) : bf(static_cast<float>(v));
      }
    }
  }
  if (fbits && text.rfind("cvt", 0) == 0 && c.abits == 32 &&
      text.find(".f32 %d") != std::string::npos && text.find(".f32.f16") == std::string::npos) {
    for (int l = 0; l < lanes; ++l)
      in[l] = bf(static_cast<float>(static_cast<int>(rng.next() % 20000) - 10000) / 7.0f);
  }
  uint64_t* din = mem.upload(in);
  uint64_t* out = mem.zeros<uint64_t>(lanes * 2);
  require_success(run(*prog, "k", {1}, {lanes}, Args().add(din).add(out), mem));
  for (int l = 0; l < lanes; ++l) {
    uint64_t a = in[l], b = in[lanes + l], cc = in[2 * lanes + l];
    INFO("lane " << l << " a=" << std::hex << a << " b=" << b << " c=" << cc);
    uint64_t e = c.ref(a, b, cc) & mask(c.dbits == 1 ? 32 : c.dbits);
    REQUIRE(out[l] == e);
    if (c.qbits) REQUIRE(out[lanes + l] == (c.qref(a, b, cc) & mask(c.qbits == 1 ? 32 : c.qbits)));
  }
}

}  // namespace

TEST_CASE("opcode sweep: integer arithmetic", "[ptx][opcodes]") {
  const Case cases[] = {
      {"add.s32 %d, %a, %b", 32, 32, 32, 0,
       [](auto a, auto b, auto) { return uint64_t{u32(a) + u32(b)}; }},
      {"sub.s64 %d, %a, %b", 64, 64, 64, 0, [](auto a, auto b, auto) { return a - b; }},
      {"add.s32 %d, %a, -5", 32, 32, 0, 0,
       [](auto a, auto, auto) { return uint64_t{u32(a) - 5u}; }},
      {"add.sat.s32 %d, %a, %b", 32, 32, 32, 0,
       [](auto a, auto b, auto) {
         int64_t r = int64_t{s32(a)} + s32(b);
         return uint64_t{u32(static_cast<int32_t>(std::clamp<int64_t>(r, INT32_MIN, INT32_MAX)))};
       }},
      {"mul.lo.s32 %d, %a, %b", 32, 32, 32, 0,
       [](auto a, auto b, auto) { return uint64_t{u32(a) * u32(b)}; }},
      {"mul.hi.u32 %d, %a, %b", 32, 32, 32, 0,
       [](auto a, auto b, auto) { return (uint64_t{u32(a)} * u32(b)) >> 32; }},
      {"mul.hi.s32 %d, %a, %b", 32, 32, 32, 0,
       [](auto a, auto b, auto) {
         return uint64_t{u32(static_cast<int32_t>((int64_t{s32(a)} * s32(b)) >> 32))};
       }},
      {"mul.wide.s32 %d, %a, %b", 64, 32, 32, 0,
       [](auto a, auto b, auto) { return static_cast<uint64_t>(int64_t{s32(a)} * s32(b)); }},
      {"mul.wide.u16 %d, %a, %b", 32, 16, 16, 0,
       [](auto a, auto b, auto) { return (a & 0xffff) * (b & 0xffff); }},
      {"mul.hi.u64 %d, %a, %b", 64, 64, 64, 0,
       [](auto a, auto b, auto) {
         return static_cast<uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64);
       }},
      {"mad.lo.s32 %d, %a, %b, %c", 32, 32, 32, 32,
       [](auto a, auto b, auto c) { return uint64_t{u32(a) * u32(b) + u32(c)}; }},
      {"mad.wide.u32 %d, %a, %b, %c", 64, 32, 32, 64,
       [](auto a, auto b, auto c) { return uint64_t{u32(a)} * u32(b) + c; }},
      {"mad.hi.u32 %d, %a, %b, %c", 32, 32, 32, 32,
       [](auto a, auto b, auto c) {
         return uint64_t{u32(((uint64_t{u32(a)} * u32(b)) >> 32) + u32(c))};
       }},
      {"div.s32 %d, %a, 7", 32, 32, 0, 0,
       [](auto a, auto, auto) { return uint64_t{u32(s32(a) / 7)}; }},
      {"div.u32 %d, %a, 13", 32, 32, 0, 0,
       [](auto a, auto, auto) { return uint64_t{u32(a) / 13u}; }},
      {"rem.s32 %d, %a, -9", 32, 32, 0, 0,
       [](auto a, auto, auto) { return uint64_t{u32(s32(a) % -9)}; }},
      {"rem.u64 %d, %a, 1000", 64, 64, 0, 0, [](auto a, auto, auto) { return a % 1000; }},
      {"min.s32 %d, %a, %b", 32, 32, 32, 0,
       [](auto a, auto b, auto) { return uint64_t{u32(std::min(s32(a), s32(b)))}; }},
      {"max.u32 %d, %a, %b", 32, 32, 32, 0,
       [](auto a, auto b, auto) { return uint64_t{std::max(u32(a), u32(b))}; }},
      {"abs.s32 %d, %a", 32, 32, 0, 0,
       [](auto a, auto, auto) {
         return uint64_t{u32(s32(a) == INT32_MIN ? INT32_MIN : std::abs(s32(a)))};
       }},
      {"neg.s64 %d, %a", 64, 64, 0, 0, [](auto a, auto, auto) { return ~a + 1; }},
      {"sad.u32 %d, %a, %b, %c", 32, 32, 32, 32,
       [](auto a, auto b, auto c) {
         return uint64_t{u32((u32(a) > u32(b) ? u32(a) - u32(b) : u32(b) - u32(a)) + u32(c))};
       }},
      {"mul24.lo.u32 %d, %a, %b", 32, 32, 32, 0,
       [](auto a, auto b, auto) { return uint64_t{u32((a & 0xffffff) * (b & 0xffffff))}; }},
  };
  for (const Case& c : cases) run_case(c);
}

TEST_CASE("opcode sweep: carry chains", "[ptx][opcodes]") {
  // 64-bit add and sub built from 32-bit halves with .cc / addc / subc.
  const char* text = R"(
.version 9.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p)
{
  .reg .b64 %rd<6>;
  .reg .b32 %r<12>;
  ld.param.u64 %rd1, [p];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 32;
  add.s64 %rd1, %rd1, %rd2;
  ld.global.v2.u32 {%r2, %r3}, [%rd1];
  ld.global.v2.u32 {%r4, %r5}, [%rd1+8];
  add.cc.u32 %r6, %r2, %r4;
  addc.u32 %r7, %r3, %r5;
  sub.cc.u32 %r8, %r2, %r4;
  subc.u32 %r9, %r3, %r5;
  st.global.v2.u32 [%rd1+16], {%r6, %r7};
  st.global.v2.u32 [%rd1+24], {%r8, %r9};
  ret;
}
)";
  auto prog = compile_or_fail(text);
  HostMemory mem;
  const int lanes = 48;
  uint64_t* buf = mem.zeros<uint64_t>(lanes * 4);
  Rng rng(77);
  for (int l = 0; l < lanes; ++l) {
    buf[l * 4] = (uint64_t{rng.next()} << 32) | rng.next();
    buf[l * 4 + 1] = (uint64_t{rng.next()} << 32) | rng.next();
    if (l % 3 == 0) buf[l * 4 + 1] |= 0xffffffffull;  // force carries
  }
  require_success(run(*prog, "k", {1}, {lanes}, Args().add(buf), mem));
  for (int l = 0; l < lanes; ++l) {
    REQUIRE(buf[l * 4 + 2] == buf[l * 4] + buf[l * 4 + 1]);
    REQUIRE(buf[l * 4 + 3] == buf[l * 4] - buf[l * 4 + 1]);
  }
}

TEST_CASE("opcode sweep: bit manipulation and logic", "[ptx][opcodes]") {
  const Case cases[] = {
      {"and.b32 %d, %a, %b", 32, 32, 32, 0, [](auto a, auto b, auto) { return a & b; }},
      {"or.b64 %d, %a, %b", 64, 64, 64, 0, [](auto a, auto b, auto) { return a | b; }},
      {"xor.b32 %d, %a, 0xff00ff00", 32, 32, 0, 0,
       [](auto a, auto, auto) { return a ^ 0xff00ff00u; }},
      {"not.b32 %d, %a", 32, 32, 0, 0, [](auto a, auto, auto) { return ~a; }},
      {"cnot.b32 %d, %a", 32, 32, 0, 0, [](auto a, auto, auto) { return uint64_t{u32(a) == 0}; }},
      {"shl.b32 %d, %a, %b", 32, 32, 32, 0,
       [](auto a, auto b, auto) { return u32(b) >= 32 ? 0 : uint64_t{u32(a) << u32(b)}; }},
      {"shr.s32 %d, %a, 5", 32, 32, 0, 0,
       [](auto a, auto, auto) { return uint64_t{u32(s32(a) >> 5)}; }},
      {"shr.u64 %d, %a, 17", 64, 64, 0, 0, [](auto a, auto, auto) { return a >> 17; }},
      {"bfe.u32 %d, %a, 8, 12", 32, 32, 0, 0, [](auto a, auto, auto) { return (a >> 8) & 0xfff; }},
      {"bfe.s32 %d, %a, 4, 8", 32, 32, 0, 0,
       [](auto a, auto, auto) { return uint64_t{u32(static_cast<int8_t>((a >> 4) & 0xff))}; }},
      {"bfi.b32 %d, %a, %b, 8, 4", 32, 32, 32, 0,
       [](auto a, auto b, auto) { return (b & ~0xf00ull) | ((a & 0xf) << 8); }},
      {"bfi.b64 %d, %a, %b, 32, 32", 64, 64, 64, 0,
       [](auto a, auto b, auto) { return (b & 0xffffffffull) | (a << 32); }},
      {"brev.b32 %d, %a", 32, 32, 0, 0,
       [](auto a, auto, auto) {
         uint32_t r = 0, v = u32(a);
         for (int i = 0; i < 32; ++i) r |= ((v >> i) & 1u) << (31 - i);
         return uint64_t{r};
       }},
      {"clz.b64 %d, %a", 32, 64, 0, 0,
       [](auto a, auto, auto) { return uint64_t(std::countl_zero(a)); }},
      {"popc.b64 %d, %a", 32, 64, 0, 0,
       [](auto a, auto, auto) { return uint64_t(std::popcount(a)); }},
      {"bfind.u32 %d, %a", 32, 32, 0, 0,
       [](auto a, auto, auto) {
         return u32(a) == 0 ? 0xffffffffull : uint64_t(31 - std::countl_zero(u32(a)));
       }},
      {"prmt.b32 %d, %a, %b, 0x3210", 32, 32, 32, 0, [](auto a, auto, auto) { return a; }},
      {"prmt.b32 %d, %a, %b, 0x7654", 32, 32, 32, 0, [](auto, auto b, auto) { return b; }},
      {"prmt.b32 %d, %a, %b, 0x0819", 32, 32, 32, 0,
       [](auto a, auto b, auto) {
         uint64_t v = (b << 32) | a;
         auto byte = [&](int sel) -> uint64_t {
           uint64_t x = (v >> ((sel & 7) * 8)) & 0xff;
           if (sel & 8) x = (x & 0x80) ? 0xff : 0;
           return x;
         };
         return byte(9) | byte(1) << 8 | byte(8) << 16 | byte(0) << 24;
       }},
      {"lop3.b32 %d, %a, %b, %c, 0x96", 32, 32, 32, 32,
       [](auto a, auto b, auto c) { return a ^ b ^ c; }},
      {"lop3.b32 %d, %a, %b, %c, 0xe8", 32, 32, 32, 32,
       [](auto a, auto b, auto c) { return (a & b) | (a & c) | (b & c); }},
      {"lop3.b32 %d, %a, %b, %c, 0xf0", 32, 32, 32, 32, [](auto a, auto, auto) { return a; }},
      {"lop3.b32 %d, %a, %b, %c, 0xcc", 32, 32, 32, 32, [](auto, auto b, auto) { return b; }},
      {"lop3.b32 %d, %a, %b, %c, 0xaa", 32, 32, 32, 32, [](auto, auto, auto c) { return c; }},
      {"lop3.b32 %d, %a, %b, %c, 0x1", 32, 32, 32, 32,
       [](auto a, auto b, auto c) { return ~(a | b | c); }},
      {"shf.l.wrap.b32 %d, %a, %b, %c", 32, 32, 32, 32,
       [](auto a, auto b, auto c) {
         uint64_t v = (uint64_t{u32(b)} << 32) | u32(a);
         return uint64_t{u32((v << (c & 31)) >> 32)};
       }},
      {"shf.r.clamp.b32 %d, %a, %b, 9", 32, 32, 32, 0,
       [](auto a, auto b, auto) {
         uint64_t v = (uint64_t{u32(b)} << 32) | u32(a);
         return uint64_t{u32(v >> 9)};
       }},
      {"dp4a.u32.u32 %d, %a, %b, %c", 32, 32, 32, 32,
       [](auto a, auto b, auto c) {
         uint32_t r = u32(c);
         for (int i = 0; i < 4; ++i) r += ((a >> (8 * i)) & 0xff) * ((b >> (8 * i)) & 0xff);
         return uint64_t{r};
       }},
      {"bmsk.clamp.b32 %d, %a, %b", 32, 32, 32, 0,
       [](auto a, auto b, auto) {
         uint64_t pos = std::min<uint64_t>(u32(a), 32), len = std::min<uint64_t>(u32(b), 32);
         uint64_t r = 0;
         for (uint64_t i = pos; i < std::min<uint64_t>(pos + len, 32); ++i) r |= uint64_t{1} << i;
         return r;
       }},
      {"bmsk.wrap.b32 %d, %a, 5", 32, 32, 0, 0,
       [](auto a, auto, auto) {
         uint64_t pos = u32(a) & 31, r = 0;
         for (uint64_t i = pos; i < std::min<uint64_t>(pos + 5, 32); ++i) r |= uint64_t{1} << i;
         return r;
       }},
      {"szext.clamp.s32 %d, %a, %b", 32, 32, 32, 0,
       [](auto a, auto b, auto) {
         uint32_t len = std::min(u32(b), 32u);
         if (len == 0) return uint64_t{0};
         if (len == 32) return uint64_t{u32(a)};
         int64_t v = static_cast<int64_t>(u32(a) & ((1u << len) - 1));
         if (v >> (len - 1) & 1) v -= int64_t{1} << len;
         return uint64_t{static_cast<uint32_t>(v)};
       }},
      {"szext.wrap.u32 %d, %a, %b", 32, 32, 32, 0,
       [](auto a, auto b, auto) {
         uint32_t len = u32(b) & 31;
         return uint64_t{len == 0 ? 0u : (u32(a) & ((1u << len) - 1))};
       }},
      {"and.pred %d, %a, %b", 1, 1, 1, 0, [](auto a, auto b, auto) { return a & b; }},
      {"or.pred %d, %a, %b", 1, 1, 1, 0, [](auto a, auto b, auto) { return a | b; }},
      {"xor.pred %d, %a, %b", 1, 1, 1, 0, [](auto a, auto b, auto) { return a ^ b; }},
      {"not.pred %d, %a", 1, 1, 0, 0, [](auto a, auto, auto) { return a ^ 1; }},
      {"mov.b64 %d, %a", 64, 64, 0, 0, [](auto a, auto, auto) { return a; }},
  };
  for (const Case& c : cases) run_case(c);
}

TEST_CASE("opcode sweep: compare, select, set", "[ptx][opcodes]") {
  const Case cases[] = {
      {"setp.lt.s32 %d, %a, %b", 1, 32, 32, 0,
       [](auto a, auto b, auto) { return uint64_t{s32(a) < s32(b)}; }},
      {"setp.ge.u64 %d, %a, %b", 1, 64, 64, 0,
       [](auto a, auto b, auto) { return uint64_t{a >= b}; }},
      {"setp.hi.u32 %d, %a, %b", 1, 32, 32, 0,
       [](auto a, auto b, auto) { return uint64_t{u32(a) > u32(b)}; }},
      {"setp.ne.s32.and %d, %a, %b, %c", 1, 32, 32, 1,
       [](auto a, auto b, auto c) { return uint64_t{u32(a) != u32(b) && c}; }},
      {"setp.eq.s32.or %d|%q, %a, %b, !%c", 1, 32, 32, 1,
       [](auto a, auto b, auto c) { return uint64_t{u32(a) == u32(b) || !c}; }, 1,
       [](auto a, auto b, auto c) { return uint64_t{u32(a) != u32(b) || !c}; }},
      {"setp.gtu.f32 %d, %a, %b", 1, 32, 32, 0,
       [](auto a, auto b, auto) { return uint64_t{!(f32(a) <= f32(b))}; }},
      {"setp.lt.f64 %d, %a, %b", 1, 64, 64, 0,
       [](auto a, auto b, auto) { return uint64_t{f64(a) < f64(b)}; }},
      {"selp.b32 %d, %a, %b, %c", 32, 32, 32, 1, [](auto a, auto b, auto c) { return c ? a : b; }},
      {"selp.f64 %d, %a, 0d3FF8000000000000, %c", 64, 64, 0, 1,
       [](auto a, auto, auto c) { return c ? a : bd(1.5); }},
      {"slct.u32.s32 %d, %a, %b, %c", 32, 32, 32, 32,
       [](auto a, auto b, auto c) { return s32(c) >= 0 ? a : b; }},
      {"set.lt.u32.s32 %d, %a, %b", 32, 32, 32, 0,
       [](auto a, auto b, auto) { return s32(a) < s32(b) ? 0xffffffffull : 0; }},
      {"set.ge.f32.f32 %d, %a, %b", 32, 32, 32, 0,
       [](auto a, auto b, auto) { return f32(a) >= f32(b) ? bf(1.0f) : 0; }},
      // Packed compares: p gets the low halves' result, q the high halves' (setp), or one
      // result per half (set).
      {"setp.lt.f16x2 %d|%q, %a, %b", 1, 32, 32, 0,
       [](auto a, auto b, auto) { return uint64_t{h2f(lo16(a)) < h2f(lo16(b))}; }, 1,
       [](auto a, auto b, auto) { return uint64_t{h2f(hi16(a)) < h2f(hi16(b))}; }},
      {"setp.gtu.bf16x2 %d|%q, %a, %b", 1, 32, 32, 0,
       [](auto a, auto b, auto) { return uint64_t{!(bh2f(lo16(a)) <= bh2f(lo16(b)))}; }, 1,
       [](auto a, auto b, auto) { return uint64_t{!(bh2f(hi16(a)) <= bh2f(hi16(b)))}; }},
      {"setp.ge.f16x2.and %d|%q, %a, %b, %c", 1, 32, 32, 1,
       [](auto a, auto b, auto c) { return uint64_t{h2f(lo16(a)) >= h2f(lo16(b)) && c}; }, 1,
       [](auto a, auto b, auto c) { return uint64_t{h2f(hi16(a)) >= h2f(hi16(b)) && c}; }},
      {"set.lt.u32.f16x2 %d, %a, %b", 32, 32, 32, 0,
       [](auto a, auto b, auto) {
         return (h2f(lo16(a)) < h2f(lo16(b)) ? 0xffffull : 0) |
                (h2f(hi16(a)) < h2f(hi16(b)) ? 0xffff0000ull : 0);
       }},
      {"set.ne.f16x2.f16x2 %d, %a, %b", 32, 32, 32, 0,
       [](auto a, auto b, auto) {  // .ne is ordered
         auto ne = [](float x, float y) { return !std::isnan(x) && !std::isnan(y) && x != y; };
         return (ne(h2f(lo16(a)), h2f(lo16(b))) ? 0x3c00ull : 0) |
                (ne(h2f(hi16(a)), h2f(hi16(b))) ? 0x3c000000ull : 0);
       }},
      {"set.gt.f16.f16 %d, %a, %b", 16, 16, 16, 0,
       [](auto a, auto b, auto) { return h2f(a) > h2f(b) ? 0x3c00ull : 0; }},
  };
  for (const Case& c : cases) run_case(c);
}

TEST_CASE("opcode sweep: floating point and conversions", "[ptx][opcodes]") {
  const Case cases[] = {
      {"add.f32 %d, %a, %b", 32, 32, 32, 0, [](auto a, auto b, auto) { return bf(f32(a) + f32(b)); }},
      {"add.rn.f64 %d, %a, %b", 64, 64, 64, 0, [](auto a, auto b, auto) { return bd(f64(a) + f64(b)); }},
      {"mul.rn.f32 %d, %a, %b", 32, 32, 32, 0, [](auto a, auto b, auto) { return bf(f32(a) * f32(b)); }},
      {"fma.rn.f32 %d, %a, %b, %c", 32, 32, 32, 32, [](auto a, auto b, auto c) { return bf(std::fma(f32(a), f32(b), f32(c))); }},
      {"fma.rn.f64 %d, %a, %b, %c", 64, 64, 64, 64, [](auto a, auto b, auto c) { return bd(std::fma(f64(a), f64(b), f64(c))); }},
      {"sub.f32 %d, %a, 0f3F800000", 32, 32, 0, 0, [](auto a, auto, auto) { return bf(f32(a) - 1.0f); }},
      {"div.rn.f32 %d, %a, %b", 32, 32, 32, 0, [](auto a, auto b, auto) { return bf(f32(a) / f32(b)); }},
      {"div.rn.f64 %d, %a, %b", 64, 64, 64, 0, [](auto a, auto b, auto) { return bd(f64(a) / f64(b)); }},
      {"rcp.rn.f32 %d, %a", 32, 32, 0, 0, [](auto a, auto, auto) { return bf(1.0f / f32(a)); }},
      {"sqrt.rn.f64 %d, %a", 64, 64, 0, 0, [](auto a, auto, auto) { return bd(std::sqrt(f64(a))); }},
      {"sqrt.approx.f32 %d, %a", 32, 32, 0, 0, [](auto a, auto, auto) {  // NaN for negatives
         float r = std::sqrt(f32(a));
         return std::isnan(r) ? uint64_t{0x7fffffff} : bf(r);
       }},
      {"rcp.approx.ftz.f64 %d, %a", 64, 64, 0, 0, [](auto a, auto, auto) { return bd(1.0 / f64(a)); }},
      {"rcp.rz.f32 %d, %a", 32, 32, 0, 0, [](auto a, auto, auto) {
         // 1/a rounded toward zero: the nearest float to 1/a, stepped toward zero if it overshot.
         double exact = 1.0 / f64(bd(static_cast<double>(f32(a))));
         float r = static_cast<float>(exact);
         if (std::fabs(static_cast<double>(r)) > std::fabs(exact)) r = std::nextafter(r, 0.0f);
         return bf(r);
       }},
      {"abs.f32 %d, %a", 32, 32, 0, 0, [](auto a, auto, auto) { return bf(std::fabs(f32(a))); }},
      {"neg.f64 %d, %a", 64, 64, 0, 0, [](auto a, auto, auto) { return bd(-f64(a)); }},
      {"min.f32 %d, %a, %b", 32, 32, 32, 0, [](auto a, auto b, auto) { return bf(std::fmin(f32(a), f32(b))); }},
      {"max.f64 %d, %a, %b", 64, 64, 64, 0, [](auto a, auto b, auto) { return bd(std::fmax(f64(a), f64(b))); }},
      {"copysign.f32 %d, %a, %b", 32, 32, 32, 0, [](auto a, auto b, auto) { return bf(std::copysign(f32(b), f32(a))); }},
      {"cvt.rn.f32.s32 %d, %a", 32, 32, 0, 0, [](auto a, auto, auto) { return bf(static_cast<float>(s32(a))); }},
      {"cvt.rn.f64.u32 %d, %a", 64, 32, 0, 0, [](auto a, auto, auto) { return bd(static_cast<double>(u32(a))); }},
      {"cvt.rn.f64.s64 %d, %a", 64, 64, 0, 0, [](auto a, auto, auto) { return bd(static_cast<double>(static_cast<int64_t>(a))); }},
      {"cvt.rzi.s32.f32 %d, %a", 32, 32, 0, 0, [](auto a, auto, auto) { return uint64_t{u32(static_cast<int32_t>(std::trunc(f32(a))))}; }},
      {"cvt.rni.s32.f32 %d, %a", 32, 32, 0, 0, [](auto a, auto, auto) { return uint64_t{u32(static_cast<int32_t>(std::nearbyint(f32(a))))}; }},
      {"cvt.rmi.f32.f32 %d, %a", 32, 32, 0, 0, [](auto a, auto, auto) { return bf(std::floor(f32(a))); }},
      {"cvt.sat.f32.f32 %d, %a", 32, 32, 0, 0, [](auto a, auto, auto) { return bf(std::clamp(f32(a), 0.0f, 1.0f)); }},
      {"cvt.f64.f32 %d, %a", 64, 32, 0, 0, [](auto a, auto, auto) { return bd(static_cast<double>(f32(a))); }},
      {"cvt.rn.f32.f64 %d, %a", 32, 64, 0, 0, [](auto a, auto, auto) {
         float f = static_cast<float>(f64(a));
         // NaN: sign, quiet bit, the payload's top bits (an H200: tests/emulator/ptx/silicon)
         return std::isnan(f) ? ((a >> 63) << 31 | 0x7fc00000u | ((a >> 29) & 0x3fffffu)) : bf(f);
       }},
      {"cvt.u64.u32 %d, %a", 64, 32, 0, 0, [](auto a, auto, auto) { return uint64_t{u32(a)}; }},
      {"cvt.s64.s32 %d, %a", 64, 32, 0, 0, [](auto a, auto, auto) { return static_cast<uint64_t>(int64_t{s32(a)}); }},
      {"cvt.s16.s8 %d, %a", 16, 16, 0, 0, [](auto a, auto, auto) { return static_cast<uint64_t>(static_cast<int16_t>(static_cast<int8_t>(a & 0xff))) & 0xffff; }},
      {"cvt.u32.u64 %d, %a", 32, 64, 0, 0, [](auto a, auto, auto) { return uint64_t{u32(a)}; }},
      {"cvt.rn.f16.f32 %d, %a", 16, 32, 0, 0, [](auto a, auto, auto) { return uint64_t{std::bit_cast<uint16_t>(static_cast<_Float16>(f32(a)))}; }},
      {"cvt.f32.f16 %d, %a", 32, 16, 0, 0, [](auto a, auto, auto) {
         float f = static_cast<float>(std::bit_cast<_Float16>(static_cast<uint16_t>(a)));
         return std::isnan(f) ? uint64_t{0x7fffffff} : bf(f);  // the GPU returns the canonical NaN
       }},
      // .satfinite saturates to the largest finite f16; .sat clamps to [0, 1] (NaN -> 0).
      {"cvt.rn.satfinite.f16.f32 %d, %a", 16, 32, 0, 0, [](auto a, auto, auto) { return f16_of(f32(a), true); }},
      {"cvt.rn.sat.f16.f32 %d, %a", 16, 32, 0, 0, [](auto a, auto, auto) {
         float f = f32(a);
         return f16_of(std::isnan(f) ? 0.0f : std::clamp(f, 0.0f, 1.0f), false);
       }},
      {"testp.finite.f32 %d, %a", 1, 32, 0, 0, [](auto a, auto, auto) { return uint64_t{std::isfinite(f32(a))}; }},
  };
  for (const Case& c : cases) run_case(c);
}

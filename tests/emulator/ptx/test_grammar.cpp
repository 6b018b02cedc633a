// The PTX operand and directive grammar, form by form: every form either executes exactly as the
// PTX ISA specifies (checked against a host reference) or is refused when the module loads, with
// a message naming its line. Nothing in between: a form the emulator accepted but executed
// differently is the defect these tests exist to catch.
#include <bit>
#include <cmath>
#include <cstring>

#include "harness.h"

using namespace cusnap::emu::ptx;
using namespace cusnap::emu::ptx::test;

namespace {

constexpr int kSlots = 8;  // u64 result slots per thread at %rd30

// A kernel `k(.param .u64 out)` running `body`; %rd30 points at the thread's kSlots u64 results,
// %rd0 at the whole output, %r31 holds %tid.x.
std::string kernel(const std::string& body, const std::string& prelude = "",
                   const std::string& header = ".version 9.0\n.target sm_90\n.address_size 64\n") {
  return header + prelude +
         ".visible .entry k(.param .u64 out)\n{\n"
         "  .reg .b32 %r<32>;\n  .reg .b64 %rd<32>;\n  .reg .f32 %f<16>;\n  .reg .f64 %fd<8>;\n"
         "  .reg .pred %p<8>;\n  .reg .b16 %rs<8>;\n"
         "  ld.param.u64 %rd0, [out];\n  mov.u32 %r31, %tid.x;\n  mul.wide.u32 %rd31, %r31, 64;\n"
         "  add.s64 %rd30, %rd0, %rd31;\n" +
         body + "\n  ret;\n}\n";
}

struct Ran {
  LaunchResult result;
  std::vector<uint64_t> out;  // kSlots per thread
  uint64_t at(uint32_t thread, int slot) const {
    return out[thread * kSlots + static_cast<size_t>(slot)];
  }
};

// Compiles (must succeed) and runs `text` with one block of `threads` threads.
Ran run_text(const std::string& text, uint32_t threads = 1, Dim3 grid = {1, 1, 1},
             uint32_t dyn_shared = 0, Dim3 cluster = {1, 1, 1}) {
  CompileResult c = compile(text);
  INFO(text << "\n-> " << c.error);
  REQUIRE(c.program != nullptr);
  HostMemory mem;
  bind_variables(*c.program, mem);
  const size_t n = static_cast<size_t>(threads) * kSlots * grid.count();
  uint64_t* out = mem.zeros<uint64_t>(n);
  Ran r;
  r.result =
      run(*c.program, "k", grid, {threads}, Args().add(out), mem, dyn_shared, false, cluster);
  r.out.assign(out, out + n);
  return r;
}

Ran run_body(const std::string& body, const std::string& prelude = "", uint32_t threads = 1) {
  Ran r = run_text(kernel(body, prelude), threads);
  INFO(r.result.message);
  REQUIRE(r.result.status == LaunchStatus::kSuccess);
  return r;
}

// The module must fail to load with `status`, an error naming the line of `needle` and containing
// `what` (when given).
void require_refused(const std::string& text, const std::string& needle, CompileStatus status,
                     const std::string& what = "") {
  CompileResult c = compile(text);
  INFO(text << "\n-> " << c.error);
  REQUIRE(c.program == nullptr);
  CHECK(c.status == status);
  CHECK(c.error.rfind("line " + std::to_string(line_of(text, needle)) + ":", 0) == 0);
  if (!what.empty()) CHECK(c.error.find(what) != std::string::npos);
}

void require_invalid(const std::string& body, const std::string& needle,
                     const std::string& what = "", const std::string& prelude = "") {
  require_refused(kernel(body, prelude), needle, CompileStatus::kInvalidPtx, what);
}

void require_unsupported(const std::string& body, const std::string& needle,
                         const std::string& what = "", const std::string& prelude = "") {
  require_refused(kernel(body, prelude), needle, CompileStatus::kNotSupported, what);
}

}  // namespace

TEST_CASE("a one-element vector brace behaves exactly like the scalar (ld, st, mov)",
          "[ptx][grammar]") {
  // Other compilers (Triton's inline PTX, for one) brace single registers: `ld.global.b32 {%r5}`.
  const Ran r = run_body(
      "  mov.u32 %r5, 7;\n"
      "  mov.u32 %r1, 1234;\n"
      "  st.global.b32 [a+4], {%r1};\n"
      "  ld.global.b32 {%r5}, [a];\n"
      "  ld.global.b32 %r6, [a+4];\n"
      "  mov.b32 {%r7}, %r5;\n"
      "  mov.b32 %r8, {%r6};\n"
      "  st.global.u32 [%rd30], {%r5};\n"
      "  st.global.u32 [%rd30+8], %r6;\n"
      "  st.global.u32 [%rd30+16], %r7;\n"
      "  st.global.u32 [%rd30+24], %r8;\n"
      "  ld.global.v2.b32 {%r9, %r10}, [a];\n"
      "  st.global.v2.b32 [%rd30+32], {%r10, %r9};\n",
      ".global .align 8 .b32 a[4] = {11, 22, 33, 44};\n");
  CHECK(r.at(0, 0) == 11);
  CHECK(r.at(0, 1) == 1234);
  CHECK(r.at(0, 2) == 11);
  CHECK(r.at(0, 3) == 1234);
  CHECK(r.at(0, 4) == (uint64_t{11} << 32 | 1234));
}

TEST_CASE("vector operands of every width in ld/st, with sinks, mismatched vectors are refused",
          "[ptx][grammar]") {
  const std::string prelude =
      ".global .align 32 .b32 w[8] = {1, 2, 3, 4, 5, 6, 7, 8};\n"
      ".global .align 32 .b64 d[4] = {0x1111, 0x2222, 0x3333, 0x4444};\n";
  const Ran r = run_body(
      "  ld.global.v2.b32 {%r1, %r2}, [w];\n"
      "  ld.global.v4.b32 {%r3, %r4, %r5, %r6}, [w+16];\n"
      "  ld.global.v8.b32 {%r7, %r8, %r9, %r10, %r11, %r12, %r13, %r14}, [w];\n"
      "  mov.u32 %r20, 99;\n"
      "  ld.global.v4.b32 {%r15, _, %r16, _}, [w];\n"
      "  ld.global.v4.b64 {%rd1, %rd2, _, %rd3}, [d];\n"
      "  st.global.v2.b32 [%rd30], {%r2, %r1};\n"
      "  st.global.v4.b32 [%rd30+16], {%r6, %r5, %r4, %r3};\n"
      "  add.s32 %r17, %r7, %r14;\n"
      "  add.s32 %r18, %r15, %r16;\n"
      "  st.global.v2.b32 [%rd30+8], {%r17, %r18};\n"
      "  st.global.v4.b64 [%rd30+32], {%rd3, %rd2, %rd1, %rd3};\n",
      prelude);
  CHECK(r.at(0, 0) == (uint64_t{1} << 32 | 2));
  CHECK(r.at(0, 1) == (uint64_t{1 + 3} << 32 | (1 + 8)));
  CHECK(r.at(0, 2) == (uint64_t{7} << 32 | 8));
  CHECK(r.at(0, 3) == (uint64_t{5} << 32 | 6));
  CHECK(r.at(0, 4) == 0x4444);
  CHECK(r.at(0, 5) == 0x2222);
  CHECK(r.at(0, 6) == 0x1111);
  CHECK(r.at(0, 7) == 0x4444);

  // A brace vector whose size is not the access's .vN (this one used to leave %r1 unchanged).
  require_invalid("  ld.global.b32 {%r1, %r2}, [w];", "{%r1, %r2}", "vector", prelude);
  require_invalid("  st.global.b32 [w], {%r1, %r2};", "[w], {%r1", "vector", prelude);
  require_invalid("  ld.global.v2.b32 {%r1, %r2, %r3}, [w];", "{%r1, %r2, %r3}", "2 elements",
                  prelude);
  require_invalid("  ld.global.v4.b32 {%r1, %r2}, [w];", "{%r1, %r2}", "4 elements", prelude);
  require_invalid("  ld.global.v2.b32 %rd1, [w];", "%rd1, [w]", "2 elements", prelude);
  require_invalid("  ld.global.v2.b32 {%r1, %r1}, [w];", "{%r1, %r1}", "same register twice",
                  prelude);
  require_invalid("  st.global.v2.b32 [w], {%r1, _};", "{%r1, _}", "sink", prelude);
  require_invalid("  ld.global.v8.b64 {%rd1, %rd2, %rd3, %rd4, %rd5, %rd6, %rd7, %rd8}, [d];",
                  "v8.b64", "256 bits", prelude);
  require_invalid("  ld.global.v2.b32 {%r1, %r2}, [w];\n  ld.global.b32 %r3, [{%r1}];", "[{%r1}]",
                  "", prelude);
}

TEST_CASE("vectors and sinks in mov, ALU operands and dual destinations", "[ptx][grammar]") {
  const Ran r = run_body(
      "  mov.b64 %rd1, 0x1122334455667788;\n"
      "  mov.b64 {%r1, _}, %rd1;\n"
      "  mov.b64 {_, %r2}, %rd1;\n"
      "  mov.b32 {%rs1, %rs2}, %r1;\n"
      "  mov.b32 %r3, {%rs2, %rs1};\n"
      "  mov.b64 %rd2, {%r2, %r1};\n"
      "  { .reg .b8 %b<4>;\n"
      "    mov.b32 {%b0, %b1, %b2, %b3}, %r1;\n"
      "    mov.b32 %r4, {%b3, %b2, %b1, %b0};\n"
      "    mov.b64 {%rs3, %rs4, %rs5, %rs6}, %rd1;\n"
      "    mov.b64 %rd3, {%rs6, %rs5, %rs4, %rs3}; }\n"
      "  add.s32 {%r5}, {%r3}, 1;\n"  // one-element braces as ALU operands are the scalars
      "  setp.lt.s32 %p1|%p2, %r5, 0;\n"
      "  setp.lt.s32 _|%p3, %r5, 0;\n"
      "  setp.lt.s32 %p4|_, %r5, 0;\n"
      "  selp.u32 %r6, 1, 0, %p1;\n"
      "  selp.u32 %r7, 1, 0, %p2;\n"
      "  selp.u32 %r8, 1, 0, %p3;\n"
      "  selp.u32 %r9, 1, 0, !%p4;\n"
      "  add.s32 _, %r1, %r2;\n"  // a sink destination discards the result
      "  st.global.u32 [%rd30], %r1;\n"
      "  st.global.u32 [%rd30+4], %r2;\n"
      "  st.global.u32 [%rd30+8], %r3;\n"
      "  st.global.u32 [%rd30+12], %r4;\n"
      "  st.global.u64 [%rd30+16], %rd2;\n"
      "  st.global.u64 [%rd30+24], %rd3;\n"
      "  st.global.v4.u32 [%rd30+32], {%r6, %r7, %r8, %r9};\n"
      "  st.global.u32 [%rd30+48], %r5;\n");
  const uint32_t lo = 0x55667788u, hi = 0x11223344u, swapped = 0x77885566u;
  CHECK(r.at(0, 0) == (uint64_t{hi} << 32 | lo));
  CHECK(r.at(0, 1) == (uint64_t{0x88776655u} << 32 | swapped));
  CHECK(r.at(0, 2) == (uint64_t{lo} << 32 | hi));
  CHECK(r.at(0, 3) == 0x7788556633441122ull);
  const uint32_t r5 = swapped + 1;               // positive: every "< 0" is false
  CHECK(r.at(0, 4) == (uint64_t{1} << 32 | 0));  // %p1 = 0, %p2 = !%p1 = 1
  CHECK(r.at(0, 5) == (uint64_t{1} << 32 | 1));  // %p3 = 1, !%p4 = 1
  CHECK(r.at(0, 6) == r5);

  require_invalid("  mov.b64 %rd1, {%r1, %r2, %r3};", "{%r1, %r2, %r3}", "cannot pack");
  require_invalid("  mov.u64 %rd1, {%r1, %r2};", "mov.u64", "cannot pack");
  require_invalid("  mov.b64 {%r1, %r2}, {%r3, %r4};", "{%r3, %r4}", "both sides");
  require_unsupported("  mov.v2.b32 {%r1, %r2}, {%r3, %r4};", "mov.v2", "vector registers");
  require_invalid("  add.s32 %r1, {%r2, %r3}, 1;", "{%r2, %r3}", "vector operand of 2 elements");
  require_invalid("  add.s32 {%r1, %r2}, %r3, 1;", "{%r1, %r2}", "vector destination");
  require_invalid("  add.s32 %r1, _, 1;", "_, 1", "sink");
  require_invalid("  add.s32 %r1|%r2, %r3, 1;", "%r1|%r2", "p|q");
  require_invalid("  set.eq.u32.s32 %r1|%r2, %r3, 1;", "%r1|%r2", "p|q");
  require_invalid("  add.s32 %r1, %r2|%r3, 1;", "%r2|%r3", "p|q");
}

TEST_CASE("integer and floating-point immediates in every notation", "[ptx][grammar]") {
  const Ran r = run_body(
      "  mov.u32 %r1, 42;\n"
      "  mov.u32 %r2, 0x2A;\n"
      "  mov.u32 %r3, 0X2a;\n"
      "  mov.u32 %r4, 052;\n"
      "  mov.u32 %r5, 0b101010;\n"
      "  mov.u32 %r6, 42U;\n"
      "  mov.s32 %r7, -42;\n"
      "  mov.u32 %r8, 0;\n"
      "  st.global.v4.u32 [%rd30], {%r1, %r2, %r3, %r4};\n"
      "  st.global.v4.u32 [%rd30+16], {%r5, %r6, %r7, %r8};\n"
      "  mov.f32 %f1, 0f3FC00000;\n"  // 1.5
      "  mov.f32 %f2, 1.5;\n"
      "  mov.f32 %f3, -0f3FC00000;\n"
      "  add.f32 %f4, %f1, 3;\n"  // an integer constant is its value as a float
      "  mov.f32 %f5, 1e-3;\n"
      "  mov.f32 %f6, .25;\n"
      "  st.global.v4.f32 [%rd30+32], {%f2, %f3, %f4, %f5};\n"
      "  st.global.f32 [%rd30+48], %f6;\n"
      "  mov.f64 %fd1, 0d3FF8000000000000;\n"
      "  add.f64 %fd2, %fd1, 2.5e1;\n"
      "  st.global.f64 [%rd30+56], %fd2;\n");
  for (int s = 0; s < 2; ++s) CHECK(r.at(0, s) == (uint64_t{42} << 32 | 42));
  CHECK(r.at(0, 2) == (uint64_t{42} << 32 | 42));
  CHECK(r.at(0, 3) == static_cast<uint32_t>(-42));
  auto f32 = [&](int slot, int half) {
    return std::bit_cast<float>(static_cast<uint32_t>(r.at(0, slot) >> (32 * half)));
  };
  CHECK(f32(4, 0) == 1.5f);
  CHECK(f32(4, 1) == -1.5f);
  CHECK(f32(5, 0) == 4.5f);
  CHECK(f32(5, 1) == 1e-3f);
  CHECK(f32(6, 0) == 0.25f);
  CHECK(std::bit_cast<double>(r.at(0, 7)) == 26.5);

  // Bit-typed operands take floating-point constants of their own width as IEEE bits.
  const Ran b = run_body(
      "  mov.b32 %r1, 0f3F800000;\n"
      "  mov.b64 %rd1, 0d4000000000000000;\n"
      "  mov.b64 %rd2, 1.0;\n"
      "  st.global.u32 [%rd30], %r1;\n"
      "  st.global.u64 [%rd30+8], %rd1;\n"
      "  st.global.u64 [%rd30+16], %rd2;\n");
  CHECK(b.at(0, 0) == 0x3F800000u);
  CHECK(b.at(0, 1) == 0x4000000000000000ull);
  CHECK(b.at(0, 2) == std::bit_cast<uint64_t>(1.0));

  // Constants with no exact meaning for their operand are refused, not truncated or rounded.
  require_invalid("  add.s32 %r1, %r2, 1.5;", "1.5", "floating-point");
  require_invalid("  mov.u32 %r1, 0f3F800000;", "0f3F800000", "single-precision");
  require_invalid("  mov.b64 %rd1, 0f3F800000;", "0f3F800000", "single-precision");
  require_invalid("  mov.b32 %r1, 1.0;", "1.0", "floating-point");
  require_invalid("  selp.u32 %r1, 1, 0, 1.5;", "1.5", "predicate");
  require_unsupported("  { .reg .f16 %h<2>;\n  add.f16 %h0, %h1, 1; }", "add.f16", ".f16");
  // Integer constants are 64-bit and cast to the operand's size (PTX ISA, Integer Constants).
  const Ran fit = run_body(
      "  mov.u16 %rs1, -1;\n  mov.u16 %rs2, 65535;\n  mov.b16 %rs3, -128;\n  mov.u32 %r1, -1U;\n"
      "  cvt.u32.u16 %r2, %rs1;\n  cvt.u32.u16 %r3, %rs2;\n  cvt.s32.s8 %r4, %rs3;\n"
      "  st.global.v4.u32 [%rd30], {%r1, %r2, %r3, %r4};\n"
      "  st.global.u8 [%rd30+16], 255;\n  st.global.s8 [%rd30+17], -128;\n  st.global.u8 "
      "[%rd30+18], -1;\n"
      "  st.global.u8 [%rd30+19], 0x1ff;\n  mov.u16 %rs4, 70000;\n  mov.u32 %r5, 0x100000007;\n"
      "  cvt.u32.u16 %r6, %rs4;\n  st.global.v2.u32 [%rd30+24], {%r5, %r6};\n");
  CHECK(fit.at(0, 0) == (uint64_t{0xffff} << 32 | 0xffffffffu));
  CHECK(fit.at(0, 1) == (uint64_t{0xffffff80u} << 32 | 0xffff));
  CHECK(fit.at(0, 2) == 0xffff80ff);
  CHECK(fit.at(0, 3) == (uint64_t{70000 & 0xffff} << 32 | 7));
}

TEST_CASE("constant expressions follow the PTX ISA's 64-bit rules", "[ptx][grammar]") {
  struct Case {
    const char* expr;
    uint64_t want;
  };
  const Case cases[] = {
      {"1 + 2 * 3", 7},
      {"(1 + 2) * 3", 9},
      {"(1 << 4) | 1", 17},
      {"~0", ~uint64_t{0}},
      {"-1U", ~uint64_t{0}},
      {"7 % 3", 1},
      {"-7 / 2", static_cast<uint64_t>(-3)},   // signed division truncates
      {"-7U / 2", (~uint64_t{0} - 6) / 2},     // unsigned: U makes the whole division unsigned
      {"-8 >> 1", static_cast<uint64_t>(-4)},  // arithmetic shift of a signed value
      {"(.u64)-8 >> 60", 0xf},                 // logical shift of an unsigned one
      {"0x8000000000000000 >> 63", 1},         // too big for .s64: unsigned
      {"-1 < 0", 1},
      {"-1 < 0U", 0},  // unsigned comparison
      {"(.s64)0xffffffffffffffff < 0", 1},
      {"3 > 2 && 2 > 1", 1},
      {"0 || 0", 0},
      {"!5", 0},
      {"!0", 1},
      {"5 == 5", 1},
      {"5 != 5", 0},
      {"1 ? 10 : 20", 10},
      {"0 ? 10 : 20", 20},
      {"WARP_SZ", 32},
      {"WARP_SZ * 2 - 1", 63},
      {"0xf0 & 0x3c ^ 0x01", 0x31},
      {"-(-42)", 42},
      {"+5", 5},
      {"9223372036854775807 + 1", uint64_t{1} << 63},  // wraps, no UB
      {"(-9223372036854775807 - 1) / -1", uint64_t{1} << 63},
  };
  std::string body;
  int i = 0;
  for (const Case& c : cases) {
    body += "  mov.b64 %rd1, " + std::string(c.expr) + ";\n  st.global.u64 [%rd0+" +
            std::to_string(8 * i++) + "], %rd1;\n";
  }
  // Enough output: the test kernel's buffer is 8 slots per thread, so run 4 "threads" worth.
  const Ran r = run_text(kernel(body), 4);
  INFO(r.result.message);
  REQUIRE(r.result.status == LaunchStatus::kSuccess);
  i = 0;
  for (const Case& c : cases) {
    INFO(c.expr);
    CHECK(r.out[i++] == c.want);
  }
  // Floating-point expressions are evaluated in double precision.
  const Ran f = run_body(
      "  mov.f64 %fd1, 1.5 * 2 + 0.25;\n  mov.f32 %f1, 1 / 3.0;\n  mov.f64 %fd2, -(2.5);\n"
      "  st.global.f64 [%rd30], %fd1;\n  st.global.f32 [%rd30+8], %f1;\n  st.global.f64 "
      "[%rd30+16], %fd2;\n");
  CHECK(std::bit_cast<double>(f.at(0, 0)) == 3.25);
  CHECK(static_cast<uint32_t>(f.at(0, 1)) == std::bit_cast<uint32_t>(static_cast<float>(1 / 3.0)));
  CHECK(std::bit_cast<double>(f.at(0, 2)) == -2.5);

  require_invalid("  mov.u32 %r1, 1 / 0;", "1 / 0", "division by zero");
  require_invalid("  mov.u32 %r1, 1 % 0;", "1 % 0", "remainder by zero");
  require_invalid("  mov.f32 %f1, 0f3F800000 + 1;", "0f3F800000 + 1", "0f");
  require_invalid("  mov.u32 %r1, ~1.5;", "~1.5", "'~'");
  require_invalid("  mov.u32 %r1, 1.5 & 1;", "1.5 & 1", "integer operands");
  require_invalid("  mov.u32 %r1, (1 + 2;", "(1 + 2", "')'");
  require_unsupported("  mov.b64 %rd1, 1 << 64;", "1 << 64", "shift");
}

TEST_CASE("malformed numbers are refused naming their line, never an internal error",
          "[ptx][grammar]") {
  const char* const bad[] = {"0x",
                             "0xZZ",
                             "99999999999999999999999",
                             "0f123",
                             "1e999",
                             "08",
                             "0b102",
                             "1.5U",
                             "0d12",
                             "1e",
                             "0f3F800000U",
                             "1..2",
                             "0x1.8",
                             "0b",
                             "1e-400",
                             "0fZZZZZZZZ",
                             "18446744073709551616"};
  for (const char* n : bad) {
    INFO(n);
    const std::string text = std::string(n);
    // As an instruction operand, an address offset, an array size, a register count, an
    // initializer, a directive argument and the .version.
    require_invalid("  mov.b64 %rd1, " + text + ";", "mov.b64 %rd1, " + text,
                    "malformed number '" + text + "'");
    require_invalid("  ld.global.u32 %r1, [%rd0+" + text + "];", "[%rd0+", "malformed number");
    require_invalid("  { .local .b8 buf[" + text + "]; }", "buf[", "malformed number");
    require_invalid("  { .reg .b32 %q<" + text + ">; }", "%q<", "malformed number");
    require_refused(kernel("", ".global .u64 g = " + text + ";\n"), ".global .u64 g",
                    CompileStatus::kInvalidPtx, "malformed number");
    require_refused(
        ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n.maxntid " + text +
            "\n{\n  ret;\n}\n",
        ".maxntid", CompileStatus::kInvalidPtx, "malformed number");
  }
  for (const char* v : {"8.x", "8.", ".5", "99999999999999999999.0", "8.5.1", "8", "8.10", "1e1"}) {
    INFO(v);
    require_refused(".version " + std::string(v) + "\n.target sm_90\n", ".version",
                    CompileStatus::kInvalidPtx, ".version");
  }
  require_refused(".version 9.0\n.target sm_99999999999999999999999\n", ".target",
                  CompileStatus::kInvalidPtx, "target");
}

TEST_CASE(
    "address forms: [reg], [reg+imm], [reg+-imm], [sym], [sym+imm], [imm], sym+imm as a value",
    "[ptx][grammar]") {
  const std::string prelude = ".global .align 8 .u32 a[8] = {10, 11, 12, 13, 14, 15, 16, 17};\n";
  const Ran r = run_body(
      "  .shared .align 16 .b8 sh[32];\n"
      "  mov.u64 %rd1, a;\n"
      "  ld.global.u32 %r1, [%rd1];\n"
      "  ld.global.u32 %r2, [%rd1+8];\n"
      "  add.s64 %rd2, %rd1, 16;\n"
      "  ld.global.u32 %r3, [%rd2+-4];\n"
      "  ld.global.u32 %r4, [a];\n"
      "  ld.global.u32 %r5, [a+20];\n"
      "  ld.global.u32 %r6, [a+(2*3+1)*4];\n"
      "  mov.u64 %rd3, a+24;\n"
      "  ld.global.u32 %r7, [%rd3];\n"
      "  cvta.global.u64 %rd4, a+8;\n"
      "  ld.u32 %r8, [%rd4];\n"
      "  mov.u32 %r9, 777;\n"
      "  st.shared.u32 [8], %r9;\n"  // [imm]: an absolute shared-window address
      "  mov.u32 %r10, sh;\n"
      "  ld.shared.u32 %r11, [%r10+8];\n"
      "  ld.global.u32 %r12, [%rd1+WARP_SZ-4];\n"
      "  st.global.v4.u32 [%rd30], {%r1, %r2, %r3, %r4};\n"
      "  st.global.v4.u32 [%rd30+16], {%r5, %r6, %r7, %r8};\n"
      "  st.global.v2.u32 [%rd30+32], {%r11, %r12};\n",
      prelude);
  CHECK(r.at(0, 0) == (uint64_t{12} << 32 | 10));
  CHECK(r.at(0, 1) == (uint64_t{10} << 32 | 13));
  CHECK(r.at(0, 2) == (uint64_t{17} << 32 | 15));
  CHECK(r.at(0, 3) == (uint64_t{12} << 32 | 16));
  CHECK(r.at(0, 4) == (uint64_t{17} << 32 | 777));

  require_invalid("  ld.global.u32 %r1, [%rd0-4];", "[%rd0-4]", "+-N", prelude);
  require_invalid("  ld.global.u32 %r1, [%rd0+%rd1];", "[%rd0+%rd1]", "constant", prelude);
  require_invalid("  ld.global.u32 %r1, [a+1.5];", "[a+1.5]", "integer", prelude);
  require_invalid("  ld.global.u32 %r1, [4+%rd0];", "[4+%rd0]", "", prelude);
  require_invalid("  mov.u64 %rd1, a+1.5;", "a+1.5", "integer", prelude);
  require_invalid("  mov.u64 %rd1, a+%rd2;", "a+%rd2", "constant", prelude);
  require_invalid("  ld.global.u32 %r1, [nowhere];", "[nowhere]", "nowhere", prelude);
  require_invalid("  add.u64 %rd1, [a], 1;", "[a], 1", "address", prelude);
}

TEST_CASE("labels, guards and predicate operands", "[ptx][grammar]") {
  const Ran r = run_body(
      "  setp.eq.u32 %p1, %r31, 0;\n"
      "  mov.u32 %r1, 0;\n"
      "  @%p1 bra L_ONE;\n"
      "  mov.u32 %r1, 100;\n"
      "L_ONE:\n"
      "  @!%p1 bra $L__two;\n"
      "  add.u32 %r1, %r1, 1;\n"
      "$L__two:\n"
      "  bra.uni L_three;\n"
      "  mov.u32 %r1, 555;\n"
      "L_three:\n"
      "  mov.u32 %r2, 0;\n"
      "  @!%p1 mov.u32 %r2, 5;\n"
      "  setp.ne.and.u32 %p2, %r31, 0, !%p1;\n"
      "  selp.u32 %r3, 1, 0, %p2;\n"
      "  setp.eq.or.u32 %p3, %r31, 7, !%p1;\n"
      "  selp.u32 %r4, 1, 0, !%p3;\n"
      "  st.global.v4.u32 [%rd30], {%r1, %r2, %r3, %r4};\n",
      "", 2);
  CHECK(r.at(0, 0) == 1);                          // thread 0: branched, then +1; %r2 = 0
  CHECK(r.at(1, 0) == (uint64_t{5} << 32 | 100));  // thread 1: did not branch
  CHECK(r.at(0, 1) == (uint64_t{1} << 32 | 0));    // %p2 = false; %p3 = (0 == 7) || !true = false
  CHECK(r.at(1, 1) == (uint64_t{0} << 32 | 1));    // %p2 = true; %p3 = !false = true

  require_invalid("  @%r1 bra DONE;\nDONE:", "@%r1", ".pred");
  require_invalid("  add.s32 %r1, !%r2, 1;", "!%r2", "predicate");
  require_invalid("  add.s32 %r1, -%r2, 1;", "-%r2", "constants");
  require_invalid("  mov.u64 %rd1, !%rd2;", "!%rd2", "predicate");
  require_invalid("  bra %r1;", "bra %r1", "label");
  require_invalid("  bra NOWHERE;", "bra NOWHERE", "NOWHERE");
}

TEST_CASE("register declarations: %name<N>, lists, scopes, vector and 128-bit registers refused",
          "[ptx][grammar]") {
  const Ran r = run_body(
      "  { .reg .b32 %q<100>, x, y;\n"
      "    .reg .u32 %n<2*4>;\n"
      "    mov.u32 %q99, 99;\n  mov.u32 %q0, 1;\n  mov.u32 x, 2;\n  mov.u32 y, 3;\n  mov.u32 %n7, "
      "4;\n"
      "    add.u32 %r1, %q99, %q0;\n  add.u32 %r1, %r1, x;\n  add.u32 %r1, %r1, y;\n  add.u32 %r1, "
      "%r1, %n7; }\n"
      "  st.global.u32 [%rd30], %r1;\n");
  CHECK(r.at(0, 0) == 109);
  require_invalid("  { .reg .b32 %q<100>;\n  mov.u32 %q100, 1; }", "%q100", "q100");
  require_invalid("  { .reg .u32 %n<8>;\n  mov.u32 %n8, 1; }", "%n8", "n8");
  require_unsupported("  { .reg .v2 .b32 %v;\n  mov.b32 %r1, 0; }", ".reg .v2", "vector registers");
  require_unsupported("  { .reg .b128 %big;\n  mov.b32 %r1, 0; }", ".reg .b128", "128-bit");
  require_invalid("  { .reg .b32 %d, %d; }", ".reg .b32 %d, %d", "twice");
}

TEST_CASE("module variables: vectors, arrays, nested and flat initializers, addresses",
          "[ptx][grammar]") {
  const std::string prelude =
      ".global .v4 .u32 gv = {1, 2, 3, 4};\n"
      ".global .v2 .u32 gva[2] = {{5, 6}, {7}};\n"
      ".global .align 4 .u32 m[2][3] = {{1}, {4, 5, 6}};\n"
      ".global .align 4 .u32 flat[2][2] = {1, 2, 3};\n"
      ".global .align 4 .u32 open[] = {1, 2, 3};\n"
      ".global .align 4 .u32 open2[][2] = {{1}, {3, 4}};\n"
      ".const .align 4 .f32 cf[2] = {1.5, 0f40000000};\n"
      ".global .align 4 .s32 ex[3] = {1 + 1, WARP_SZ, -1};\n"
      ".global .align 1 .u8 cut[2] = {0x1ff, -1};\n"
      ".visible .global .align 8 .u64 gp[4] = {generic(m), generic(m)+4, m+8, generic(m+12)};\n"
      ".weak .global .align 4 .u32 weakly = 7;\n"
      ".common .global .align 4 .u32 commonly;\n"
      ".extern .global .align 4 .u32 elsewhere;\n";
  CompileResult c =
      compile(kernel("  ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [gv];\n"
                     "  st.global.v4.u32 [%rd30], {%r1, %r2, %r3, %r4};\n"
                     "  ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [gva];\n"
                     "  st.global.v4.u32 [%rd30+16], {%r1, %r2, %r3, %r4};\n"
                     "  ld.global.u64 %rd1, [gp+8];\n"
                     "  ld.u32 %r5, [%rd1];\n"
                     "  ld.global.u64 %rd1, [gp+16];\n"
                     "  ld.global.u32 %r6, [%rd1];\n"
                     "  ld.global.u64 %rd1, [gp+24];\n"
                     "  ld.u32 %r7, [%rd1];\n"
                     "  ld.const.f32 %f1, [cf+4];\n"
                     "  ld.global.u32 %r8, [weakly];\n"
                     "  st.global.v4.u32 [%rd30+32], {%r5, %r6, %r7, %r8};\n"
                     "  st.global.f32 [%rd30+48], %f1;\n",
                     prelude));
  INFO(c.error);
  REQUIRE(c.program != nullptr);
  const Program& p = *c.program;
  auto init_u32 = [&](const char* name) {
    const VariableDesc& v = p.variables()[p.find_variable(name)];
    std::vector<uint32_t> w(v.size / 4, 0);
    std::memcpy(w.data(), v.initializer.data(), std::min<size_t>(v.initializer.size(), v.size));
    return w;
  };
  CHECK(init_u32("m") == std::vector<uint32_t>{1, 0, 0, 4, 5, 6});  // short rows are zero-filled
  CHECK(init_u32("flat") == std::vector<uint32_t>{1, 2, 3, 0});
  CHECK(init_u32("open") == std::vector<uint32_t>{1, 2, 3});
  CHECK(init_u32("open2") == std::vector<uint32_t>{1, 0, 3, 4});
  CHECK(init_u32("gva") == std::vector<uint32_t>{5, 6, 7, 0});
  CHECK(init_u32("ex") == std::vector<uint32_t>{2, 32, 0xffffffffu});
  {
    const VariableDesc& cut = p.variables()[p.find_variable("cut")];
    REQUIRE(cut.initializer.size() == 2);
    CHECK(cut.initializer[0] == 0xff);  // cast to the element size
    CHECK(cut.initializer[1] == 0xff);
  }
  CHECK(p.variables()[p.find_variable("elsewhere")].is_extern);
  CHECK(p.variables()[p.find_variable("gv")].align == 16);
  HostMemory mem;
  bind_variables(*c.program, mem);
  uint64_t* out = mem.zeros<uint64_t>(kSlots);
  require_success(run(*c.program, "k", {1}, {1}, Args().add(out), mem));
  CHECK(out[0] == (uint64_t{2} << 32 | 1));
  CHECK(out[1] == (uint64_t{4} << 32 | 3));
  CHECK(out[2] == (uint64_t{6} << 32 | 5));
  CHECK(out[3] == (uint64_t{0} << 32 | 7));
  CHECK(out[4] == 0);                        // m[0][1] = 0, m[0][2] = 0
  CHECK(out[5] == (uint64_t{7} << 32 | 4));  // m[1][0] = 4, weakly = 7
  CHECK(std::bit_cast<float>(static_cast<uint32_t>(out[6])) == 2.0f);

  auto refused = [&](const std::string& decl, const std::string& what,
                     CompileStatus status = CompileStatus::kInvalidPtx) {
    const std::string text = kernel("", decl + "\n");
    require_refused(text, decl.substr(0, 12), status, what);
  };
  refused(".global .align 4 .u32 tm[2] = {1, 2, 3};", "too many");
  refused(".global .align 4 .u32 tn[2][2] = {{1, 2, 3}};", "too many");
  refused(".global .align 4 .u32 tf = 1.5;", "floating-point");
  refused(".global .align 4 .u32 ta0 = 1, ta = generic(ta0);", "needs a .u64");
  refused(".global .align 4 .u32 tz[2] = 5;", "'{'");
  refused(".shared .align 4 .u32 ts = 5;", "only .global and .const");
  refused(".extern .global .align 4 .u32 te = 5;", ".extern");
  refused(".global .align 3 .u32 tq;", "power of two");
  refused(".global .u32 .u64 tt;", "two types");
  refused(".global .samplerref smp;", "independent texture mode", CompileStatus::kNotSupported);
  refused(".extern .global .texref tex;", "only as '.global .texref", CompileStatus::kNotSupported);
  refused(".global .texref tarr[4];", "arrays of .texref", CompileStatus::kNotSupported);
  refused(".global .surfref sinit = { width = 4 };", "initializers of .surfref",
          CompileStatus::kNotSupported);
  refused(".global .align 4 .u32 tu[2] = {1, {2}};", "'{'");
}

TEST_CASE("texture and surface references: declared, named by tex/txq/suld, nothing else",
          "[ptx][grammar]") {
  const std::string decls = ".global .texref t0, t1;\n.global .surfref s0;\n";
  // Accepted: 8-byte global variables the driver fills with its reference handle.
  CompileResult c =
      compile(kernel("  tex.2d.v4.f32.f32 {%f0, %f1, %f2, %f3}, [t1, {%f4, %f5}];\n"
                     "  txq.width.b32 %r1, [t0];\n  suld.b.1d.b32.trap {%r2}, [s0, {%r3}];\n"
                     "  sust.b.1d.b32.zero [s0, {%r3}], %r2;\n  suq.width.b32 %r4, [s0];",
                     decls));
  INFO(c.error);
  REQUIRE(c.program != nullptr);
  const Program& p = *c.program;
  for (const char* name : {"t0", "t1", "s0"}) {
    const int v = p.find_variable(name);
    REQUIRE(v >= 0);
    CHECK(p.variables()[v].size == 8);
  }
  CHECK(p.variables()[p.find_variable("t1")].opaque == OpaqueKind::kTexref);
  CHECK(p.variables()[p.find_variable("s0")].opaque == OpaqueKind::kSurfref);
  // Every other use of a reference name is refused, naming it.
  auto unsupported = [&](const std::string& body, const std::string& what,
                         const std::string& header =
                             ".version 9.0\n.target sm_90\n.address_size 64\n") {
    require_refused(kernel(body, decls, header), body.substr(2, 10), CompileStatus::kNotSupported,
                    what);
  };
  unsupported("  mov.u64 %rd1, t0;", "'t0' is a .texref");
  unsupported("  ld.global.u64 %rd1, [t0];", "'t0' is a .texref");
  unsupported("  ld.global.u32 %r1, [s0+4];", "'s0' is a .surfref");
  unsupported("  istypep.texref %p1, t0;", "names 't0'");
  unsupported("  tex.1d.v4.f32.s32 {%f0, %f1, %f2, %f3}, [s0, {%r1}];", "names 's0', a .surfref");
  unsupported("  suq.width.b32 %r1, [t0];", "names 't0', a .texref");
  // Independent mode (separate samplers) is not implemented.
  require_refused(kernel("", decls,
                         ".version 9.0\n.target sm_90, texmode_independent\n"
                         ".address_size 64\n"),
                  ".global .texref", CompileStatus::kNotSupported, "texmode_independent");
}

TEST_CASE("directives: pragmas, debug info, sections, performance tuning, clusters",
          "[ptx][grammar]") {
  const std::string text =
      ".version 9.0\n.target sm_90, debug\n.address_size 64\n"
      ".pragma \"nounroll\";\n"
      ".file 1 \"kernels/a.cu\"\n"
      ".file 2 \"kernels/b.cu\", 1700000000, 1234\n"
      ".func (.reg .b32 r) helper(.reg .b32 x) .noreturn\n{\n  mov.b32 r, x;\n  ret;\n}\n"
      ".visible .entry k(.param .u64 out)\n.maxntid 64, 1, 1\n.minnctapersm 2\n.maxnreg 32\n"
      ".pragma \"nounroll\", \"other\";\n{\n"
      "  .reg .b32 %r<8>;\n  .reg .b64 %rd<4>;\n"
      "  .loc 1 10 3\n"
      "  ld.param.u64 %rd1, [out];\n"
      "  .loc 2 20 1, function_name $L__info_string0, inlined_at 1 10 3\n"
      "  .pragma \"used_bytes_mask 0xf\";\n"
      "  mov.u32 %r1, %tid.x;\n"
      "  .file 3 \"kernels/c.cu\"\n"
      "  mul.wide.u32 %rd2, %r1, 4;\n"
      "  add.s64 %rd3, %rd1, %rd2;\n"
      "  st.global.u32 [%rd3], %r1;\n"
      "  ret;\n}\n"
      ".section .debug_str\n{\n$L__info_string0:\n.b8 107,0\n}\n"
      ".section .debug_info\n{\n.b32 10\n.b8 2, 0\n.b64 $L__info_string0\n}\n";
  CompileResult c = compile(text);
  INFO(c.error);
  REQUIRE(c.program != nullptr);
  CHECK(c.program->kernels()[0].max_threads_per_block == 64);
  HostMemory mem;
  uint32_t* out = mem.zeros<uint32_t>(128);
  require_success(run(*c.program, "k", {1}, {64}, Args().add(out), mem));
  for (uint32_t i = 0; i < 64; ++i) CHECK(out[i] == i);
  CHECK(run(*c.program, "k", {1}, {65}, Args().add(out), mem).status ==
        LaunchStatus::kOutOfResources);

  // .reqntid fixes the block shape.
  CompileResult req = compile(
      ".version 9.0\n.target sm_90\n.address_size 64\n"
      ".visible .entry k()\n.reqntid 32, 2\n{\n  ret;\n}\n");
  REQUIRE(req.program != nullptr);
  CHECK(req.program->kernels()[0].reqntid.y == 2);
  require_success(run(*req.program, "k", {1}, {32, 2}, Args(), mem));
  CHECK(run(*req.program, "k", {1}, {64}, Args(), mem).status == LaunchStatus::kInvalidValue);

  // .reqnctapercluster sets the cluster shape the special registers report, also for a launch
  // that does not give one; .maxclusterrank bounds it.
  const std::string cluster_body =
      "  mov.u32 %r1, %cluster_nctarank;\n  mov.u32 %r2, %cluster_ctarank;\n  mov.u32 %r3, "
      "%is_explicit_cluster;\n"
      "  mov.u32 %r4, %nclusterid.x;\n  mov.u32 %r5, %ctaid.x;\n  mul.wide.u32 %rd1, %r5, 64;\n"
      "  add.s64 %rd2, %rd0, %rd1;\n  st.global.v4.u32 [%rd2], {%r1, %r2, %r3, %r4};\n";
  auto with_header = [&](const std::string& directive) {
    std::string t = kernel(cluster_body);
    const std::string entry = ".visible .entry k(.param .u64 out)\n";
    t.insert(t.find(entry) + entry.size(), directive + "\n");
    return t;
  };
  const Ran cl = run_text(with_header(".reqnctapercluster 2, 1, 1"), 1, {4, 1, 1});
  INFO(cl.result.message);
  REQUIRE(cl.result.status == LaunchStatus::kSuccess);
  for (uint32_t b = 0; b < 4; ++b) {
    CHECK(cl.at(b, 0) == (uint64_t{b % 2} << 32 | 2));
    CHECK(cl.at(b, 1) == (uint64_t{2} << 32 | 1));
  }
  CHECK(run_text(with_header(".reqnctapercluster 2"), 1, {4, 1, 1}, 0, {4, 1, 1}).result.status ==
        LaunchStatus::kInvalidValue);
  CHECK(run_text(with_header(".maxclusterrank 2"), 1, {4, 1, 1}, 0, {4, 1, 1}).result.status ==
        LaunchStatus::kInvalidValue);
  const Ran ex = run_text(with_header(".explicitcluster"), 1, {2, 1, 1});
  REQUIRE(ex.result.status == LaunchStatus::kSuccess);
  CHECK((ex.at(0, 1) & 0xffffffffu) == 1);  // %is_explicit_cluster

  require_refused(".version 9.0\n.target sm_90, map_f64_to_f32\n", "map_f64_to_f32",
                  CompileStatus::kNotSupported, "map_f64_to_f32");
  require_refused(".version 9.0\n.target sm_90, bogus\n", "bogus", CompileStatus::kInvalidPtx,
                  "bogus");
  require_refused(with_header(".blocksareclusters"), ".blocksareclusters",
                  CompileStatus::kNotSupported, ".blocksareclusters");
  require_refused(with_header(".maxntid 0"), ".maxntid 0", CompileStatus::kInvalidPtx,
                  "at least 1");
  require_refused(with_header(".maxntid 64, 64, 64, 64"), ".maxntid", CompileStatus::kInvalidPtx,
                  "");
  require_refused(with_header(".pragma nounroll;"), ".pragma", CompileStatus::kInvalidPtx,
                  "string");
  require_refused(kernel("", ".file 1\n"), ".file 1", CompileStatus::kInvalidPtx, "file name");
  // LLVM 14's directory-and-name form, which ptxas refuses too.
  require_refused(kernel("", ".file 1 \"/src\" \"a.cl\"\n"), ".file 1", CompileStatus::kInvalidPtx,
                  "second string");
}

TEST_CASE("brx.idx branches each lane to its index's .branchtargets entry", "[ptx][grammar]") {
  // Two warps whose lanes go six ways (L2 listed twice, L1 falling through into L2), then a
  // guarded brx.idx.uni with a uniform index.
  const uint32_t threads = 40;
  const Ran r = run_body(
      "  rem.u32 %r1, %r31, 6;\n"
      "  mov.u32 %r2, 0;\n"
      "T: .branchtargets L0, L1, L2, L3, L2, L5;\n"
      "  brx.idx %r1, T;\n"
      "L0:\n  add.u32 %r2, %r2, 1;\n  bra.uni J;\n"
      "L1:\n  add.u32 %r2, %r2, 10;\n"
      "L2:\n  add.u32 %r2, %r2, 100;\n  bra.uni J;\n"
      "L3:\n  add.u32 %r2, %r2, 1000;\n  bra.uni J;\n"
      "L5:\n  add.u32 %r2, %r2, 10000;\n"
      "J:\n"
      "  setp.lt.u32 %p1, %r31, 20;\n"
      "  mov.u32 %r3, 5;\n"
      "  mov.u32 %r4, 1;\n"
      "U: .branchtargets M0, M1;\n"
      "  @%p1 brx.idx.uni %r4, U;\n"
      "M0:\n  mov.u32 %r3, 6;\n"
      "M1:\n  add.u32 %r3, %r3, 1;\n"
      "  st.global.u32 [%rd30], %r2;\n"
      "  st.global.u32 [%rd30+8], %r3;\n",
      "", threads);
  const uint64_t by_case[6] = {1, 110, 100, 1000, 100, 10000};
  for (uint32_t t = 0; t < threads; ++t) {
    INFO("thread " << t);
    CHECK(r.at(t, 0) == by_case[t % 6]);
    CHECK(r.at(t, 1) == (t < 20 ? 6u : 7u));
  }
  // An index past the list is undefined in the PTX ISA: the launch fails, naming it.
  const Ran past = run_text(
      kernel("  mov.u32 %r1, %r31;\nT: .branchtargets A, B;\n  brx.idx %r1, T;\nA:\nB:\n"), 4);
  CHECK(past.result.status == LaunchStatus::kIllegalInstruction);
  CHECK(past.result.message.find("brx.idx index 2 is past its 2 branch targets") !=
        std::string::npos);
  require_refused(kernel("  brx.idx %r1, NOPE;\n"), "brx.idx", CompileStatus::kInvalidPtx,
                  "not a .branchtargets list");
  require_refused(kernel("T: .branchtargets A, MISSING;\n  brx.idx %r1, T;\nA:\n"),
                  ".branchtargets", CompileStatus::kInvalidPtx, "unknown label 'MISSING'");
  require_refused(kernel("T: .branchtargets A, 3;\n  brx.idx %r1, T;\nA:\n"), ".branchtargets",
                  CompileStatus::kInvalidPtx, "expected a label");
}

TEST_CASE("predefined identifiers and special registers", "[ptx][grammar]") {
  const uint32_t threads = 40;
  const std::string body =
      "  mov.u32 %r1, %laneid;\n  mov.u32 %r2, %warpid;\n  mov.u32 %r3, %nwarpid;\n  mov.u32 %r4, "
      "WARP_SZ;\n"
      "  st.global.v4.u32 [%rd30], {%r1, %r2, %r3, %r4};\n"
      "  mov.u32 %r1, %lanemask_eq;\n  mov.u32 %r2, %lanemask_le;\n  mov.u32 %r3, %lanemask_lt;\n"
      "  mov.u32 %r4, %lanemask_ge;\n  st.global.v4.u32 [%rd30+16], {%r1, %r2, %r3, %r4};\n"
      "  mov.u32 %r1, %lanemask_gt;\n  mov.u32 %r2, %smid;\n  mov.u32 %r3, %nsmid;\n  mov.u32 %r4, "
      "%envreg3;\n"
      "  st.global.v4.u32 [%rd30+32], {%r1, %r2, %r3, %r4};\n"
      "  mov.u32 %r1, %total_smem_size;\n  mov.u32 %r2, %dynamic_smem_size;\n  mov.u32 %r3, %pm0;\n"
      "  mov.u32 %r4, %aggr_smem_size;\n  st.global.v4.u32 [%rd30+48], {%r1, %r2, %r3, %r4};\n";
  const std::string prelude =
      ".shared .align 4 .b8 fixed[100];\n.extern .shared .align 16 .b8 dyn[];\n";
  // Both shared arrays must be referenced for the kernel to use them.
  const std::string use_shared = "  mov.u32 %r5, fixed;\n  mov.u32 %r6, dyn;\n";
  const Ran r = run_text(kernel(use_shared + body, prelude), threads, {1, 1, 1}, 64);
  INFO(r.result.message);
  REQUIRE(r.result.status == LaunchStatus::kSuccess);
  for (uint32_t t = 0; t < threads; ++t) {
    INFO("thread " << t);
    const uint32_t lane = t % 32;
    auto word = [&](int slot, int half) {
      return static_cast<uint32_t>(r.at(t, slot) >> (32 * half));
    };
    CHECK(word(0, 0) == lane);
    CHECK(word(0, 1) == t / 32);
    CHECK(word(1, 0) > t / 32);  // %nwarpid bounds %warpid
    CHECK(word(1, 1) == 32);
    const uint64_t bit = uint64_t{1} << lane;
    CHECK(word(2, 0) == static_cast<uint32_t>(bit));
    CHECK(word(2, 1) == static_cast<uint32_t>((bit << 1) - 1));
    CHECK(word(3, 0) == static_cast<uint32_t>(bit - 1));
    CHECK(word(3, 1) == static_cast<uint32_t>(~(bit - 1)));
    CHECK(word(4, 0) == static_cast<uint32_t>(~((bit << 1) - 1)));
    CHECK(word(4, 1) < word(5, 0));  // %smid < %nsmid
    CHECK(word(5, 1) == 0);          // %envreg3: not set by the emulator's driver
    CHECK(word(6, 0) >= 100 + 64);   // static + dynamic
    CHECK(word(6, 1) == 64);
    CHECK(word(7, 0) == 0);  // %pm0: performance counters do not count here
    CHECK(word(7, 1) == word(6, 0));
  }

  // 64-bit ones: %clock64 and %globaltimer advance, %gridid differs between launches.
  const std::string timers =
      "  mov.u64 %rd1, %clock64;\n  mov.u32 %r1, %clock;\n  add.u32 %r1, %r1, 1;\n  mov.u64 %rd2, "
      "%clock64;\n"
      "  mov.u64 %rd3, %globaltimer;\n  mov.u64 %rd4, %gridid;\n  mov.u64 %rd5, %pm7_64;\n"
      "  st.global.v2.u64 [%rd30], {%rd1, %rd2};\n  st.global.v2.u64 [%rd30+16], {%rd3, %rd4};\n"
      "  st.global.u64 [%rd30+32], %rd5;\n";
  const Ran t1 = run_body(timers);
  const Ran t2 = run_body(timers);
  CHECK(t1.at(0, 1) > t1.at(0, 0));
  CHECK(t1.at(0, 2) != 0);
  CHECK(t1.at(0, 3) != t2.at(0, 3));
  CHECK(t1.at(0, 4) == 0);

  for (const char* name : {"%envreg32", "%envreg01", "%pm8", "%pm0_32", "%laneidx", "%tid",
                           "%tid.w", "%warp_sz", "WARP_SIZE"}) {
    INFO(name);
    require_invalid("  mov.u32 %r1, " + std::string(name) + ";", "%r1, " + std::string(name));
  }
  require_unsupported("  mov.u32 %r1, %reserved_smem_offset_begin;", "%reserved_smem_offset_begin",
                      "not supported");
  require_unsupported("  mov.u64 %rd1, %current_graph_exec;", "%current_graph_exec",
                      "not supported");
  require_invalid("  mov.u32 %laneid, 1;", "%laneid, 1", "special register");
  require_invalid("  mov.u32 WARP_SZ, 1;", "WARP_SZ, 1", "destination");
}

TEST_CASE("calls: argument counts, integer constants as arguments", "[ptx][grammar]") {
  const std::string prelude =
      ".func (.reg .b32 r) add3(.reg .b32 a, .reg .b32 b, .reg .b32 c)\n{\n  add.u32 r, a, b;\n"
      "  add.u32 r, r, c;\n  ret;\n}\n";
  const Ran r = run_body(
      "  mov.u32 %r1, 5;\n  call.uni (%r2), add3, (%r1, 7, 0x10);\n  st.global.u32 [%rd30], %r2;\n",
      prelude);
  CHECK(r.at(0, 0) == 5 + 7 + 16);
  require_invalid("  call.uni (%r2), add3, (%r1, 7);", "call.uni", "2 arguments", prelude);
  require_invalid("  call.uni add3, (%r1, 7, 1);", "call.uni", "0 return values", prelude);
  require_invalid("  call.uni (1), add3, (%r1, 7, 1);", "call.uni", "return values", prelude);
  require_unsupported("  call.uni (%r2), add3, (%r1, 7, 1.5);", "call.uni", "floating-point",
                      prelude);
}

TEST_CASE("barrier names, cvta widths", "[ptx][grammar]") {
  require_invalid("  bar.sync 16;", "bar.sync 16", "0..15");
  require_invalid("  barrier.sync 0x10, 32;", "barrier.sync", "0..15");
  // A barrier name in a register is checked when it executes.
  const Ran r = run_text(kernel("  mov.u32 %r1, 17;\n  bar.sync %r1;\n"), 32);
  CHECK(r.result.status == LaunchStatus::kIllegalInstruction);
  CHECK(r.result.message.find("barrier 17") != std::string::npos);
  require_unsupported("  { .shared .b8 s[4];\n  cvta.shared.u32 %r1, s; }", "cvta.shared.u32",
                      "32-bit");
  const Ran to = run_body(
      "  .shared .align 4 .b8 s[8];\n  cvta.shared.u64 %rd1, s;\n  add.s64 %rd1, %rd1, 4;\n"
      "  cvta.to.shared.u32 %r1, %rd1;\n  mov.u32 %r2, s;\n  sub.u32 %r3, %r1, %r2;\n  "
      "st.global.u32 [%rd30], %r3;\n");
  CHECK(to.at(0, 0) == 4);
}

// PTX from LLVM's NVPTX back end (llvm/*.ll, compiled with `llc -march=nvptx64 -mcpu=sm_75`; the
// .ptx files are checked in so the suite does not need LLVM). It uses forms nvcc never emits:
// `WARP_SZ`, `[sym+0]` call slots, `mov.b64 %rd, kernel_param` with ld.param through a register,
// `.u64 p = arr+8` and `generic(sym)` initializers, 64-bit registers stored with .u32.
namespace {

std::string read_llvm_ptx(const std::string& name) {
  std::ifstream f(std::string(CUSNAP_TEST_LLVM_PTX_DIR) + "/" + name, std::ios::binary);
  REQUIRE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("LLVM NVPTX output: vector loads, shared memory, calls, 0f immediates",
          "[ptx][grammar][llvm]") {
  auto prog = compile_or_fail(read_llvm_ptx("shared_call.ptx"));
  HostMemory mem;
  auto vars = bind_variables(*prog, mem);
  const uint32_t block = 64, grid = 2, n = block * grid;
  std::vector<float> vin(4 * n);
  Rng rng(7);
  for (float& v : vin) v = rng.uniform() * 4 - 2;
  float* dvin = mem.upload(vin);
  float* out = mem.zeros<float>(n);
  require_success(run(*prog, "kern", {grid}, {block},
                      Args().add(out).add(dvin).add(static_cast<int32_t>(n)), mem));
  const float table[4] = {1.0f, 2.5f, -3.0f, 0.125f};
  for (uint32_t i = 0; i < n; ++i) {
    INFO("i = " << i);
    const uint32_t tid = i % block, partner = (i / block) * block + (tid ^ 1);
    const float xy = vin[4 * i] * vin[4 * i + 3];
    const float r0 = xy + table[i & 3];
    const float r1 = r0 + std::bit_cast<float>(0x3DCCCCCDu);
    const float sel = i < 5 ? -1.5f : static_cast<float>(static_cast<int32_t>(partner * 3 + 7));
    CHECK(out[i] == r1 + sel);
  }
}

TEST_CASE("LLVM NVPTX output: address initializers, local arrays, byval structs, atomics, switch",
          "[ptx][grammar][llvm]") {
  auto prog = compile_or_fail(read_llvm_ptx("initializers_local.ptx"));
  for (int32_t sel : {5, 7}) {
    HostMemory mem;
    bind_variables(*prog, mem);
    const uint32_t n = 40;
    struct Pair {
      int32_t a;
      int16_t b;
      uint8_t c;
      uint8_t pad;
    } pair{123456, -5, 200, 0};
    const uint16_t halves[2] = {40000, 30000};
    uint16_t* dh = mem.upload(std::vector<uint16_t>(halves, halves + 2));
    int32_t* out = mem.zeros<int32_t>(12 * n);
    require_success(run(*prog, "kern2", {1}, {n}, Args().add(out).add(pair).add(dh).add(sel), mem));
    std::vector<int> seen(n, 0);
    for (uint32_t t = 0; t < n; ++t) {
      INFO("thread " << t << " sel " << sel);
      const int32_t* o = out + 12 * t;
      CHECK(o[0] == static_cast<int32_t>(t % 32));
      CHECK(o[1] == 32);                                 // WARP_SZ
      CHECK(o[2] == static_cast<int32_t>((t & 7) * t));  // local array
      CHECK(o[3] == 300 + 100);                          // arr+8 and generic(arr)
      CHECK(o[4] == 123456);
      CHECK(o[5] == -5);
      CHECK(o[6] == 200);
      CHECK(o[7] == static_cast<uint16_t>(40000 + 30000));
      REQUIRE(o[8] >= 0);
      REQUIRE(o[8] < static_cast<int32_t>(n));
      ++seen[o[8]];  // atom.add: each old value once
      CHECK(o[9] == -2);
      CHECK(o[10] == (sel == 5 ? 15 : -1));
    }
    for (int s : seen) CHECK(s == 1);
  }
}

TEST_CASE("LLVM NVPTX output: struct returns, vector parameters, i128 carries, f16",
          "[ptx][grammar][llvm]") {
  auto prog = compile_or_fail(read_llvm_ptx("struct_i128_half.ptx"));
  HostMemory mem;
  const uint32_t n = 32;
  struct U128 {
    uint64_t lo, hi;
  } big{0xfffffffffffffff0ull, 0x100};
  const uint16_t half_two = 0x4000;  // 2.0
  uint16_t* dh = mem.upload(std::vector<uint16_t>{half_two});
  uint32_t* out = mem.zeros<uint32_t>(8 * n);
  require_success(run(*prog, "kern3", {1}, {n}, Args().add(out).add(big).add(dh), mem));
  for (uint32_t t = 0; t < n; ++t) {
    INFO("thread " << t);
    const uint32_t* o = out + 8 * t;
    CHECK(o[0] == (1u << t) - 1);
    CHECK(o[1] == (t ^ 1));
    CHECK(o[2] == t + t + (t ^ 1));
    CHECK(o[3] == 2 * t);
    const unsigned __int128 v = ((static_cast<unsigned __int128>(big.hi) << 64) | big.lo) +
                                (static_cast<unsigned __int128>(t) << 60);
    CHECK(o[4] == static_cast<uint32_t>(v));
    CHECK(o[5] == static_cast<uint32_t>(v >> 64));
    CHECK(o[6] == 0x4200u);  // 2.0 + 1.0 = 3.0
  }
}

TEST_CASE("optional operands: cache policies, cp.async src-size and ignore-src", "[ptx][grammar]") {
  const std::string prelude = ".global .align 16 .u32 src4[4] = {1, 2, 3, 4};\n";
  const Ran r = run_body(
      "  .shared .align 16 .b8 s[48];\n"
      "  createpolicy.fractional.L2::evict_last.b64 %rd1, 1.0;\n"
      "  ld.global.L2::cache_hint.u32 %r1, [src4+4], %rd1;\n"
      "  st.global.L2::cache_hint.u32 [%rd30], %r1, %rd1;\n"
      "  mov.u64 %rd2, src4;\n"
      "  setp.eq.u32 %p1, %r31, 0;\n"
      "  cp.async.ca.shared.global [s], [%rd2], 16, 8;\n"        // src-size: 8 bytes read, 8 zeroed
      "  cp.async.ca.shared.global [s+16], [%rd2], 16, %p1;\n"   // ignore-src true: all zero
      "  cp.async.ca.shared.global [s+32], [%rd2], 16, !%p1;\n"  // ignore-src false: copied
      "  cp.async.wait_all;\n"
      "  ld.shared.v4.u32 {%r2, %r3, %r4, %r5}, [s];\n"
      "  st.global.v4.u32 [%rd30+16], {%r2, %r3, %r4, %r5};\n"
      "  ld.shared.v4.u32 {%r2, %r3, %r4, %r5}, [s+16];\n"
      "  st.global.v4.u32 [%rd30+32], {%r2, %r3, %r4, %r5};\n"
      "  ld.shared.v4.u32 {%r2, %r3, %r4, %r5}, [s+32];\n"
      "  st.global.v4.u32 [%rd30+48], {%r2, %r3, %r4, %r5};\n",
      prelude);
  CHECK(static_cast<uint32_t>(r.at(0, 0)) == 2);
  CHECK(r.at(0, 2) == (uint64_t{2} << 32 | 1));
  CHECK(r.at(0, 3) == 0);
  CHECK(r.at(0, 4) == 0);
  CHECK(r.at(0, 5) == 0);
  CHECK(r.at(0, 6) == (uint64_t{2} << 32 | 1));
  CHECK(r.at(0, 7) == (uint64_t{4} << 32 | 3));

  require_invalid("  ld.global.u64 %r1, [%rd0];", "ld.global.u64 %r1", "32-bit register");
  require_invalid("  st.global.v2.u64 [%rd0], {%rd1, %r1};", "st.global.v2.u64", "32-bit register");
  require_invalid("  setp.eq.s32 %p1, %r1, %r2, %p2;", "setp.eq.s32 %p1", ".and/.or/.xor");
  require_invalid("  testp.f32 %p1, %f1;", "testp.f32", "needs one of .finite");
  require_invalid("  cp.async.ca.shared.global [%rd0], [%rd1], 16, 16, %rd2;", "cp.async",
                  "cache_hint");
}

TEST_CASE("declarations after definitions: an .extern repeats, never replaces, a definition",
          "[ptx][grammar]") {
  // What a PTX linker's input often looks like: a module's own definition, then a declaration of
  // the same symbol (from a header the producer pasted in). The definition stands.
  const std::string prelude =
      ".global .align 4 .u32 g = 7;\n"
      ".extern .global .align 4 .u32 g;\n"
      ".func (.reg .b32 r) twice(.reg .b32 a)\n{\n  add.u32 r, a, a;\n  ret;\n}\n"
      ".extern .func (.reg .b32 r) twice(.reg .b32 a);\n";
  const Ran r = run_body(
      "  ld.global.u32 %r1, [g];\n  call.uni (%r2), twice, (%r1);\n"
      "  st.global.u32 [%rd30], %r1;\n  st.global.u32 [%rd30+8], %r2;\n",
      prelude);
  CHECK(r.at(0, 0) == 7);
  CHECK(r.at(0, 1) == 14);
  // Two definitions are invalid PTX, for variables as for functions.
  require_invalid("", ".global .align 4 .u32 g = 8;", "defined twice",
                  ".global .align 4 .u32 g = 7;\n.global .align 4 .u32 g = 8;\n");
  require_invalid("", ".func  twice2", "defined twice",  // the second one (two spaces)
                  ".func twice2()\n{\n  ret;\n}\n.func  twice2()\n{\n  ret;\n}\n");
}

// The interpreter's use of the ALU contract (alu.h): capability queries at load time, modifier
// mapping (.satfinite vs .sat), exactly-one-of .approx/rounding for rcp/sqrt.
#include <algorithm>
#include <bit>
#include <cmath>
#include <string>

#include "harness.h"

using namespace cusnap::emu::ptx;
using namespace cusnap::emu::ptx::test;

namespace {}  // namespace

TEST_CASE("combinations the ALU does not implement fail the module load", "[ptx][alu]") {
  // One module per combination: the instruction sits on a path no launch would take, so only a
  // load-time check can catch it. The error names the instruction, its function and PTX line.
  const std::pair<const char*, const char*> kCases[] = {
      {"add.rz.f16", "add.rz.f16 %h2, %h1, %h1;"},
      {"fma.rn.oob.f16", "fma.rn.oob.f16 %h2, %h1, %h1, %h1;"},
      {"sqrt.approx.rn.f32", "sqrt.approx.rn.f32 %f2, %f1;"},
      {"cvt.rni.f16x2.f32", "cvt.rni.f16x2.f32 %r2, %f1, %f1;"},
      {"setp.lo.f32", "setp.lo.f32 %p6, %f1, %f1;"},
      {"set.lt.f64.f32", "set.lt.f64.f32 %rd2, %f1, %f1;"},
  };
  auto module_with = [](const std::string& instruction) {
    return std::string(R"(
.version 9.0
.target sm_90
.address_size 64
.visible .entry k(.param .u32 sel, .param .u64 pout)
{
  .reg .b32 %r<4>;
  .reg .b16 %h<4>;
  .reg .f32 %f<4>;
  .reg .pred %p<8>;
  .reg .b64 %rd<4>;
  ld.param.u32 %r1, [sel];
  ld.param.u64 %rd1, [pout];
  mov.f32 %f1, 0f40000000;
  mov.b16 %h1, 0x3c00;
  setp.eq.u32 %p1, %r1, 12345;
  @%p1 )") +
           instruction + R"(
  rcp.approx.f32 %f3, %f1;
  st.global.f32 [%rd1], %f3;
  ret;
}
)";
  };
  for (const auto& [name, instruction] : kCases) {
    const std::string text = module_with(instruction);
    CompileResult r = compile(text);
    INFO(name << ": " << r.error);
    REQUIRE(r.program == nullptr);
    CHECK(r.status == CompileStatus::kNotSupported);
    CHECK(r.error.find(std::string("'") + name + "'") != std::string::npos);
    CHECK(r.error.find("function 'k'") != std::string::npos);
    CHECK(r.error.rfind("line " + std::to_string(line_of(text, instruction)) + ":", 0) == 0);
  }
  // The same module without the unsupported instruction loads and runs.
  auto prog = compile_or_fail(module_with("mov.f32 %f2, %f1;"));
  HostMemory mem;
  float* out = mem.zeros<float>(1);
  require_success(run(*prog, "k", {1}, {32}, Args().add(uint32_t{0}).add(out), mem));
  CHECK(*out == 0.5f);
}

TEST_CASE("cvt.rn.satfinite.f16.f32 saturates to the largest finite half, .sat clamps to [0,1]",
          "[ptx][alu]") {
  const char* text = R"(
.version 9.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 pin, .param .u64 pout)
{
  .reg .b64 %pi, %po, %off;
  .reg .b32 %tid;
  .reg .f32 %f;
  .reg .b16 %h, %s;
  ld.param.u64 %pi, [pin];
  ld.param.u64 %po, [pout];
  mov.u32 %tid, %tid.x;
  mul.wide.u32 %off, %tid, 4;
  add.s64 %pi, %pi, %off;
  ld.global.f32 %f, [%pi];
  cvt.rn.satfinite.f16.f32 %h, %f;
  cvt.rn.sat.f16.f32 %s, %f;
  mul.wide.u32 %off, %tid, 2;
  add.s64 %po, %po, %off;
  st.global.b16 [%po], %h;
  st.global.b16 [%po+256], %s;
  ret;
}
)";
  constexpr int kLanes = 128;
  std::vector<float> in = {65504.0f, -65504.0f, 65519.0f, 65520.0f, -65520.0f, 1e6f,   -1e30f,
                           INFINITY, -INFINITY, NAN,      2.0f,     0.5f,      -3.0f,  1.0f,
                           -0.0f,    1e-8f,     6.1e-5f,  3.0e-8f,  0.99999f,  1.0001f};
  Rng rng(7);
  while (in.size() < kLanes) in.push_back(std::bit_cast<float>(rng.next()));
  auto prog = compile_or_fail(text);
  HostMemory mem;
  float* din = mem.upload(in);
  uint16_t* out = mem.zeros<uint16_t>(2 * kLanes);
  require_success(run(*prog, "k", {1}, {kLanes}, Args().add(din).add(out), mem));
  // Reference: _Float16's round-to-nearest-even conversion, then the modifier's rule.
  auto half_bits = [](float f) -> uint16_t {
    if (std::isnan(f)) return 0x7fff;  // canonical NaN
    return std::bit_cast<uint16_t>(static_cast<_Float16>(f));
  };
  for (int l = 0; l < kLanes; ++l) {
    const float f = in[l];
    INFO("lane " << l << " input " << f << " (0x" << std::hex << std::bit_cast<uint32_t>(f) << ")");
    uint16_t satfinite = half_bits(f);
    if ((satfinite & 0x7fff) == 0x7c00)
      satfinite = static_cast<uint16_t>((satfinite & 0x8000) | 0x7bff);
    CHECK(out[l] == satfinite);
    const float clamped = std::isnan(f) ? 0.0f : std::clamp(f, 0.0f, 1.0f);
    CHECK(out[kLanes + l] == half_bits(clamped == 0.0f ? 0.0f : clamped));
  }
  // Spot values independent of the reference conversion.
  CHECK(out[0] == 0x7bff);
  CHECK(out[3] == 0x7bff);            // 65520 rounds to infinity without .satfinite
  CHECK(out[7] == 0x7bff);            // +inf
  CHECK(out[8] == 0xfbff);            // -inf
  CHECK(out[9] == 0x7fff);            // NaN stays NaN
  CHECK(out[10] == 0x4000);           // 2.0 is not clamped by .satfinite
  CHECK(out[kLanes + 10] == 0x3c00);  // .sat: 2.0 -> 1.0
  CHECK(out[kLanes + 12] == 0x0000);  // .sat: -3 -> +0
}

// Module-load errors of the PTX engine: valid PTX the emulator does not implement is refused when
// the module loads (CompileStatus::kNotSupported, CUDA_ERROR_NOT_SUPPORTED at the driver), with
// the instruction, its function and its PTX line; text that is not PTX is kInvalidPtx.
#include <algorithm>
#include <string>

#include "harness.h"

using namespace cusnap::emu::ptx;
using namespace cusnap::emu::ptx::test;

namespace {

// A kernel `k` whose body (on a branch that never runs) holds `body`; `prelude` goes at module
// scope before it.
std::string kernel_with(const std::string& body, const std::string& prelude = "") {
  return ".version 9.0\n.target sm_90\n.address_size 64\n" + prelude +
         ".visible .entry k(.param .u64 p)\n{\n"
         "  .reg .b32 %r<16>;\n  .reg .b64 %rd<8>;\n  .reg .f32 %f<16>;\n  .reg .pred %p<4>;\n"
         "  ld.param.u64 %rd1, [p];\n  setp.eq.u64 %p1, %rd1, 0;\n  @%p1 bra DONE;\n" +
         body + "\nDONE:\n  ret;\n}\n";
}

struct Refused {
  const char* what;  // text the error must name
  std::string body;  // kernel body holding it
  std::string prelude;
};

}  // namespace

TEST_CASE("instructions the emulator does not implement fail the module load", "[ptx][load]") {
  const Refused cases[] = {
      {"mma.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32",
       "  mma.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32 {%r1,%r2,%r3,%r4}, {%r5,%r6,%r7,%r8}, "
       "{%r9,%r10}, {%r11,%r12,%r13,%r14};",
       ""},
      {"mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32",
       "  mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 {%f1,%f2,%f3,%f4,%f5,%f6,%f7,%f8}, "
       "{%r2,%r3}, {%r4,%r5}, {%f9,%f10,%f11,%f12,%f13,%f14,%f15,%f1};",
       ""},
      {"tex.grad.2d.v4.f32.f32",
       "  tex.grad.2d.v4.f32.f32 {%f1,%f2,%f3,%f4}, [%rd1, {%f5,%f6}], {%f1,%f2}, {%f3,%f4};", ""},
      {"tex.cube.v4.f32.f32", "  tex.cube.v4.f32.f32 {%f1,%f2,%f3,%f4}, [%rd1, {%f5,%f6,%f1,%f2}];",
       ""},
      {"separate samplers", "  tex.2d.v4.f32.f32 {%f1,%f2,%f3,%f4}, [%rd1, %rd2, {%f5,%f6}];", ""},
      {"sust.p.2d.v4.b32.trap", "  sust.p.2d.v4.b32.trap [%rd1, {%r1, %r1}], {%r1,%r1,%r1,%r1};",
       ""},
      {"wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3",
       "  wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%f1,%f2,%f3,%f4}, %rd1, %rd2, 1, 1, "
       "1;",
       ""},
      {"wmma.load.a.sync.aligned.row.m16n16k32.global.s4",
       "  wmma.load.a.sync.aligned.row.m16n16k32.global.s4 {%r1,%r2}, [%rd1];", ""},
      {"mbarrier.pending_count.b64", "  mbarrier.pending_count.b64 %r1, %rd1;", ""},
      {"vadd.s32.s32.s32", "  vadd.s32.s32.s32 %r1, %r2, %r3;", ""},
      {"st.async",
       "  st.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [%rd1], %r1, [%rd2];", ""},
      {"atom.global.max.noftz.v2.f16x2",
       "  atom.global.max.noftz.v2.f16x2 {%r1,%r2}, [%rd1], {%r3,%r4};", ""},
      {"ld.global.b128", "  ld.global.b128 %rd2, [%rd1];", ""},
      {"cp.reduce.async.bulk.tensor",
       "  cp.reduce.async.bulk.tensor.1d.global.shared::cta.add.tile.bulk_group [%rd1, {%r1}], "
       "[%rd2];",
       ""},
      {"add.rz.f16", "  add.rz.f16 %rs1, %rs2, %rs3;", ""},
  };
  for (const Refused& c : cases) {
    std::string body = c.body;
    if (std::string(c.what) == "add.rz.f16") body = "  { .reg .b16 %rs<4>;\n" + body + "\n  }";
    const std::string text = kernel_with(body, c.prelude);
    CompileResult r = compile(text);
    INFO(c.what << " -> " << r.error);
    REQUIRE(r.program == nullptr);
    CHECK(r.status == CompileStatus::kNotSupported);
    CHECK(r.error.find(c.what) != std::string::npos);
    CHECK(r.error.find("'k'") != std::string::npos);  // the function
    const std::string needle = std::string(c.what) == "separate samplers" ? "tex.2d" : c.what;
    CHECK(r.error.rfind("line " + std::to_string(line_of(text, needle)) + ":", 0) == 0);
  }
}

TEST_CASE("the load error lists every unsupported instruction of the module with its line",
          "[ptx][load]") {
  // Four refused instructions in two functions, a supported one between them.
  const std::string with_targets = kernel_with(
      "  vsub.s32.s32.s32 %r1, %r2, %r3;\n  add.u32 %r1, %r2, %r3;\n"
      "  vabsdiff.s32.s32.s32 %r1, %r2, %r3;\n  vmin.s32.s32.s32 %r1, %r2, %r3;",
      ".visible .func g()\n{\n  .reg .b32 %r<4>;\n  vadd.s32.s32.s32 %r1, %r2, %r3;\n  ret;\n}\n");
  CompileResult r = compile(with_targets);
  INFO(r.error);
  REQUIRE(r.program == nullptr);
  CHECK(r.status == CompileStatus::kNotSupported);
  const char* refused[] = {"vadd.s32.s32.s32", "vsub.s32.s32.s32", "vabsdiff.s32.s32.s32",
                           "vmin.s32.s32.s32"};
  size_t at = 0;
  for (const char* what : refused) {  // in source order, one "line L: ..." line each
    const std::string entry =
        "line " + std::to_string(line_of(with_targets, what)) + ": instruction '" + what;
    const size_t found = r.error.find(entry);
    CHECK(found != std::string::npos);
    CHECK((found == 0 || r.error[found - 1] == '\n'));
    if (found != std::string::npos) CHECK(found >= at);
    if (found != std::string::npos) at = found;
  }
  CHECK(r.error.find("add.u32") == std::string::npos);
  CHECK(std::count(r.error.begin(), r.error.end(), '\n') == 3);
}

TEST_CASE("malformed PTX after an unsupported instruction is still invalid", "[ptx][load]") {
  CompileResult r = compile(kernel_with("  vadd.s32.s32.s32 %r1, %r2, %r3;\n  add.u32 %r1, %r2;"));
  INFO(r.error);
  CHECK(r.status == CompileStatus::kInvalidPtx);
  CHECK(r.error.find("add expects 3 operands") != std::string::npos);
}

TEST_CASE("directives the emulator does not implement are not supported, not invalid",
          "[ptx][load]") {
  CompileResult r = compile(".version 9.0\n.target sm_90\n.address_size 32\n");
  CHECK(r.status == CompileStatus::kNotSupported);
  CHECK(r.error.find(".address_size 32") != std::string::npos);
  CHECK(r.error.rfind("line 3:", 0) == 0);
}

TEST_CASE("malformed PTX is invalid, with its line", "[ptx][load]") {
  const std::pair<std::string, const char*> cases[] = {
      {kernel_with("  frobnicate.u32 %r1, %r2;"), "unknown instruction 'frobnicate'"},
      {kernel_with("  add.u32 %r1, %r2;"), "add expects 3 operands"},
      {kernel_with("  add.u32 %r1, %r2, %nosuchreg;"), "nosuchreg"},
      {kernel_with("  bra NOWHERE;"), "unknown label 'NOWHERE'"},
  };
  for (const auto& [text, needle] : cases) {
    CompileResult r = compile(text);
    INFO(r.error);
    REQUIRE(r.program == nullptr);
    CHECK(r.status == CompileStatus::kInvalidPtx);
    CHECK(r.error.find(needle) != std::string::npos);
  }
  // A call to a function that is declared but defined nowhere cannot be linked.
  const std::string text =
      kernel_with("  call.uni helper, (%rd1);", ".extern .func helper(.param .b64 x);\n");
  CompileResult r = compile(text);
  INFO(r.error);
  CHECK(r.status == CompileStatus::kInvalidPtx);
  CHECK(r.error.find("'helper'") != std::string::npos);
  CHECK(r.error.rfind("line " + std::to_string(line_of(text, "call.uni")) + ":", 0) == 0);
}

TEST_CASE("a module of supported instructions loads, hints without effect are accepted",
          "[ptx][load]") {
  const std::string text = kernel_with(
      "  setmaxnreg.inc.sync.aligned.u32 240;\n  add.u32 %r1, %r2, %r3;\n  fence.proxy.async;\n"
      "  barrier.sync 0;\n  prefetch.global.L2 [%rd1];");
  CompileResult r = compile(text);
  INFO(r.error);
  REQUIRE(r.program != nullptr);
  CHECK(r.status == CompileStatus::kSuccess);
  HostMemory mem;
  require_success(run(*r.program, "k", {1}, {32}, Args().add(uint64_t{64}), mem));  // runs the body
}

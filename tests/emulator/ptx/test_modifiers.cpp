// Instruction modifiers: every modifier on every opcode either executes with its ISA meaning, has
// no effect in the emulator's execution model (a documented list), or fails the module load with
// the instruction and its line. An instruction must never run as if a modifier it carries were
// absent (`add.hi.s32` as add, `redux.sync.u32` as an add, `slct.ftz` without the flush).
#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <sstream>

#include "harness.h"
#include "modifiers.h"

using namespace cusnap::emu::ptx;
using namespace cusnap::emu::ptx::test;

namespace {

// One instruction in a kernel whose registers are %r (b32), %rd (b64, %rd1 = the output buffer),
// %f (f32), %fd (f64), %h (b16) and %p (pred); `gv`/`sv` are global/shared arrays, `L1` a label
// and `f0` a function.
std::string module_with(const std::string& instruction) {
  return ".version 9.0\n.target sm_90\n.address_size 64\n"
         ".global .align 16 .b32 gv[64];\n.shared .align 16 .b32 sv[64];\n"
         ".func f0()\n{\n  ret;\n}\n"
         ".visible .entry k(.param .u64 out)\n{\n"
         "  .reg .b32 %r<16>;\n  .reg .b64 %rd<16>;\n  .reg .f32 %f<16>;\n  .reg .f64 %fd<16>;\n"
         "  .reg .b16 %h<16>;\n  .reg .pred %p<8>;\n"
         "  ld.param.u64 %rd1, [out];\n"
         "  " +
         instruction + ";\nL1:\n  ret;\n}\n";
}

enum Expect { kRuns, kNotSupported, kInvalid };

struct Row {
  const char* instruction;
  Expect expect;
};

// (instruction, what happens). kRuns: the module loads and a 64-thread block runs it (every such
// row also assembles with ptxas for sm_90, setmaxnreg for sm_90a). Otherwise the load fails with
// that status, naming the instruction and its line. Most refused rows loaded before modifiers
// became a closed world and ran as if the modifier were absent or meant something else:
// add.hi.s32 added, redux.sync.u32 added, bar.red.u32 or-ed, cp.async.cg with 8 bytes copied 8.
const Row kRows[] = {
    // integer and floating-point arithmetic
    {"add.sat.s32 %r1, %r2, %r3", kRuns},
    {"add.hi.s32 %r1, %r2, %r3", kNotSupported},
    {"add.ftzz.f32 %f1, %f2, %f3", kInvalid},
    {"add.sat.u32 %r1, %r2, %r3", kNotSupported},
    {"add.cc.s16 %h1, %h2, %h3", kNotSupported},
    {"addc.cc.u32 %r1, %r2, %r3", kRuns},
    {"subc.u64 %rd1, %rd2, %rd3", kRuns},
    {"add.rz.f16 %h1, %h2, %h3", kNotSupported},
    {"add.rn.ftz.sat.f16x2 %r1, %r2, %r3", kRuns},
    {"mul.lo.s32 %r1, %r2, %r3", kRuns},
    {"mul.s32 %r1, %r2, %r3", kInvalid},
    {"mul.wide.f32 %f1, %f2, %f3", kNotSupported},
    {"mul.hi.f32 %f1, %f2, %f3", kNotSupported},
    {"mul.rn.sat.f32 %f1, %f2, %f3", kRuns},
    {"mad.hi.sat.s32 %r1, %r2, %r3, %r4", kRuns},
    {"mad.lo.sat.s32 %r1, %r2, %r3, %r4", kNotSupported},
    {"mad.f32 %f1, %f2, %f3, %f4", kInvalid},
    {"mad.rn.f32 %f1, %f2, %f3, %f4", kRuns},
    {"madc.hi.cc.u32 %r1, %r2, %r3, %r4", kRuns},
    {"mul24.hi.s32 %r1, %r2, %r3", kRuns},
    {"mul24.wide.s32 %r1, %r2, %r3", kNotSupported},
    {"mad24.hi.sat.s32 %r1, %r2, %r3, %r4", kRuns},
    {"min.u16x2 %r1, %r2, %r3", kRuns},
    {"max.relu.s16x2 %r1, %r2, %r3", kRuns},
    {"add.s16x2 %r1, %r2, %r3", kRuns},
    {"max.relu.u16x2 %r1, %r2, %r3", kNotSupported},
    {"sub.u16x2 %r1, %r2, %r3", kNotSupported},
    {"sad.u32 %r1, %r2, %r3, %r4", kRuns},
    {"rem.u64 %rd1, %rd2, %rd3", kRuns},
    {"div.f32 %f1, %f2, %f3", kInvalid},
    {"div.full.ftz.f32 %f1, %f2, %f3", kRuns},
    {"div.rn.f64 %fd1, %fd2, %fd3", kRuns},
    {"div.approx.f64 %fd1, %fd2, %fd3", kNotSupported},
    {"fma.f32 %f1, %f2, %f3, %f4", kInvalid},
    {"fma.rm.ftz.sat.f32 %f1, %f2, %f3, %f4", kRuns},
    {"fma.rn.oob.f16 %h1, %h2, %h3, %h4", kNotSupported},
    {"fma.rn.relu.bf16 %h1, %h2, %h3, %h4", kRuns},
    {"fma.rn.sat.relu.f16 %h1, %h2, %h3, %h4", kNotSupported},
    {"abs.ftz.f32 %f1, %f2", kRuns},
    {"abs.ftz.bf16 %h1, %h2", kNotSupported},
    {"neg.sat.f32 %f1, %f2", kNotSupported},
    {"min.NaN.f32 %f1, %f2, %f3", kRuns},
    {"min.ftz.NaN.xorsign.abs.f16 %h1, %h2, %h3", kRuns},
    {"min.xorsign.f32 %f1, %f2, %f3", kNotSupported},
    {"min.abs.f32 %f1, %f2, %f3", kNotSupported},
    {"max.relu.s32 %r1, %r2, %r3", kRuns},
    {"max.relu.s16 %h1, %h2, %h3", kNotSupported},
    {"min.relu.f16 %h1, %h2, %h3", kNotSupported},
    {"min.NaN.f64 %fd1, %fd2, %fd3", kNotSupported},
    {"copysign.f64 %fd1, %fd2, %fd3", kRuns},
    {"rcp.approx.ftz.f64 %fd1, %fd2", kRuns},
    {"rcp.f32 %f1, %f2", kInvalid},
    {"rcp.rn.ftz.f64 %fd1, %fd2", kNotSupported},
    {"sqrt.approx.rn.f32 %f1, %f2", kNotSupported},
    {"rsqrt.approx.ftz.f64 %fd1, %fd2", kRuns},
    {"rsqrt.f32 %f1, %f2", kInvalid},
    {"sin.approx.ftz.f32 %f1, %f2", kRuns},
    {"cos.f32 %f1, %f2", kInvalid},
    {"lg2.approx.f64 %fd1, %fd2", kNotSupported},
    {"ex2.approx.ftz.bf16 %h1, %h2", kRuns},
    {"ex2.approx.bf16 %h1, %h2", kInvalid},
    {"ex2.approx.ftz.f16 %h1, %h2", kNotSupported},
    {"tanh.approx.ftz.f32 %f1, %f2", kNotSupported},
    {"testp.subnormal.f64 %p1, %fd2", kRuns},
    {"testp.finite.normal.f32 %p1, %f2", kNotSupported},
    {"testp.f32 %p1, %f2", kInvalid},
    // bit operations
    {"and.b32 %r1, %r2, %r3", kRuns},
    {"and.u32 %r1, %r2, %r3", kNotSupported},
    {"xor.pred %p1, %p2, %p3", kRuns},
    {"shr.s16 %h1, %h2, %r3", kRuns},
    {"shf.l.wrap.b32 %r1, %r2, %r3, %r4", kRuns},
    {"shf.clamp.b32 %r1, %r2, %r3, %r4", kInvalid},
    {"shf.l.r.wrap.b32 %r1, %r2, %r3, %r4", kNotSupported},
    {"bfind.shiftamt.u64 %r1, %rd2", kRuns},
    {"prmt.b32.f4e %r1, %r2, %r3, %r4", kRuns},
    {"prmt.b32.f4e.b4e %r1, %r2, %r3, %r4", kNotSupported},
    {"lop3.b32 %r1, %r2, %r3, %r4, 0x96", kRuns},
    {"lop3.or.b32 %r1|%p1, %r2, %r3, %r4, 0x96, %p2", kNotSupported},
    {"bmsk.wrap.b32 %r1, %r2, %r3", kRuns},
    {"bmsk.b32 %r1, %r2, %r3", kInvalid},
    {"szext.clamp.u32 %r1, %r2, %r3", kRuns},
    {"dp2a.hi.u32.s32 %r1, %r2, %r3, %r4", kRuns},
    {"dp2a.u32.u32 %r1, %r2, %r3, %r4", kInvalid},
    {"dp4a.u32.s32 %r1, %r2, %r3, %r4", kRuns},
    // moves, selects, comparisons, conversions
    {"mov.u32 %r1, %r2", kRuns},
    {"mov.sat.u32 %r1, %r2", kNotSupported},
    {"mov.rn.f32 %f1, %f2", kNotSupported},
    {"mov.b64 %rd1, {%r1, %r2}", kRuns},
    {"selp.ftz.f32 %f1, %f2, %f3, %p1", kNotSupported},
    {"slct.f32.f32 %f1, %f2, %f3, %f4", kRuns},
    {"slct.ftz.f32.f32 %f1, %f2, %f3, %f4", kRuns},
    {"setp.lo.u32 %p1, %r2, %r3", kRuns},
    {"setp.lo.s32 %p1, %r2, %r3", kNotSupported},
    {"setp.eq.lt.s32 %p1, %r2, %r3", kNotSupported},
    {"setp.lt.and.or.s32 %p1, %r2, %r3, %p2", kNotSupported},
    {"setp.ltu.or.ftz.f32 %p1|%p2, %f2, %f3, !%p3", kRuns},
    {"setp.lt.ftz.f64 %p1, %fd2, %fd3", kNotSupported},
    {"setp.lt.ftz.bf16 %p1, %h2, %h3", kNotSupported},
    {"setp.lt.b32 %p1, %r2, %r3", kNotSupported},
    {"set.gt.ftz.u32.f32 %r1, %f2, %f3", kRuns},
    {"set.lt.f16.f16 %h1, %h2, %h3", kRuns},
    {"set.lt.b32.s32 %r1, %r2, %r3", kNotSupported},
    {"cvt.rzi.s32.f32 %r1, %f2", kRuns},
    {"cvt.s32.f32 %r1, %f2", kNotSupported},
    {"cvt.f32.s32 %f1, %r2", kNotSupported},
    {"cvt.rn.f32.f32 %f1, %f2", kNotSupported},
    {"cvt.rni.ftz.f32.f32 %f1, %f2", kRuns},
    {"cvt.rn.f64.f32 %fd1, %f2", kNotSupported},
    {"cvt.f64.f32 %fd1, %f2", kRuns},
    {"cvt.sat.s8.s32 %h1, %r2", kRuns},
    {"cvt.sat.s32.s16 %r1, %h2", kNotSupported},
    {"cvt.rn.relu.satfinite.f16.f32 %h1, %f2", kRuns},
    {"cvt.rn.relu.ftz.f16.f32 %h1, %f2", kNotSupported},
    {"cvt.rm.relu.f16.f32 %h1, %f2", kNotSupported},
    {"cvt.rn.sat.bf16.f32 %h1, %f2", kNotSupported},
    {"cvt.rna.satfinite.tf32.f32 %r1, %f2", kRuns},
    {"cvt.rn.satfinite.e4m3x2.f32 %h1, %f2, %f3", kRuns},
    {"cvt.rn.e4m3x2.f32 %h1, %f2, %f3", kInvalid},
    {"cvt.rn.f32.s32 %f1, %r2, %r3", kInvalid},
    {"cvta.to.shared::cta.u64 %rd1, %rd2", kRuns},
    {"cvta.global.s64 %rd1, %rd2", kNotSupported},
    {"isspacep.shared::cta %p1, %rd2", kRuns},
    // memory
    {"ld.global.nc.L1::evict_last.u32 %r1, [%rd1]", kRuns},
    {"ld.global.ca.L2::128B.u32 %r1, [%rd1]", kRuns},
    {"ld.global.L2::cache_hint.u32 %r1, [%rd1], %rd2", kRuns},
    {"ld.global.ftz.f32 %f1, [%rd1]", kNotSupported},
    {"ld.global.ca.L1::evict_last.u32 %r1, [%rd1]", kNotSupported},
    {"ld.volatile.ca.global.u32 %r1, [%rd1]", kNotSupported},
    {"ld.mmio.relaxed.sys.global.u32 %r1, [%rd1]", kRuns},
    {"ld.mmio.global.u32 %r1, [%rd1]", kNotSupported},
    {"ld.relaxed.global.u32 %r1, [%rd1]", kNotSupported},
    {"ld.acquire.gpu.shared::cta.u32 %r1, [sv]", kRuns},
    {"ld.acquire.gpu.local.u32 %r1, [%rd1]", kNotSupported},
    {"ld.shared.L1::evict_last.u32 %r1, [sv]", kNotSupported},
    {"ld.global.nc.lu.u32 %r1, [%rd1]", kNotSupported},
    {"ld.global.lu.v4.u32 {%r1, %r2, %r3, %r4}, [%rd1]", kRuns},
    {"ld.global.f16 %h1, [%rd1]", kNotSupported},
    {"ld.global.v2.v4.u32 {%r1, %r2}, [%rd1]", kNotSupported},
    {"ldu.global.v2.u32 {%r1, %r2}, [%rd1]", kRuns},
    {"ldu.shared.u32 %r1, [sv]", kNotSupported},
    {"st.global.wt.u32 [%rd1], %r1", kRuns},
    {"st.global.cv.u32 [%rd1], %r1", kNotSupported},
    {"st.release.gpu.global.u32 [%rd1], %r1", kRuns},
    {"st.acquire.gpu.global.u32 [%rd1], %r1", kNotSupported},
    {"st.global.L2::cache_hint.u32 [%rd1], %r1, %rd2", kRuns},
    {"atom.acq_rel.gpu.global.add.u32 %r1, [%rd1], %r2", kRuns},
    {"atom.global.add.L2::cache_hint.u32 %r1, [%rd1], %r2, %rd3", kRuns},
    {"atom.global.add.and.u32 %r1, [%rd1], %r2", kNotSupported},
    {"atom.global.exch.u32 %r1, [%rd1], %r2", kNotSupported},
    {"atom.global.add.f16 %h1, [%rd1], %h2", kInvalid},
    {"atom.global.add.noftz.f16 %h1, [%rd1], %h2", kRuns},
    {"atom.global.inc.u64 %rd1, [%rd1], %rd2", kNotSupported},
    {"atom.shared.add.L2::cache_hint.u32 %r1, [sv], %r2, %rd3", kNotSupported},
    {"red.global.cas.b32 [%rd1], %r2, %r3", kNotSupported},
    {"red.acquire.gpu.global.add.u32 [%rd1], %r2", kNotSupported},
    {"red.release.gpu.global.add.u32 [%rd1], %r2", kRuns},
    // control flow, barriers, warp collectives, fences, hints
    {"bra.uni L1", kRuns},
    {"bra.sync L1", kNotSupported},
    {"call.uni f0", kRuns},
    {"ret.uni", kRuns},
    {"bar.cta.sync 0", kRuns},
    {"barrier.sync.aligned 0, 64", kRuns},
    {"bar.sync.aligned 0", kNotSupported},
    {"bar 0", kInvalid},
    {"barrier 0", kInvalid},
    {"bar.red.u32 %r1, 0, %p1", kInvalid},
    {"bar.red.popc.u32 %r1, 0, %p1", kRuns},
    {"bar.red.or.u32 %r1, 0, %p1", kNotSupported},
    {"bar.red.and.pred %p2, 0, 64, !%p1", kRuns},
    {"bar.arrive 1", kInvalid},
    {"bar.warp.sync 0xffffffff", kRuns},
    {"shfl.sync.bfly.b32 %r1|%p1, %r2, 1, 31, 0xffffffff", kRuns},
    {"shfl.sync.b32 %r1, %r2, 1, 31, 0xffffffff", kInvalid},
    {"shfl.sync.up.down.b32 %r1, %r2, 1, 0, 0xffffffff", kNotSupported},
    {"shfl.sync.idx.u32 %r1, %r2, 1, 31, 0xffffffff", kNotSupported},
    {"shfl.sync.idx.b32 %r1, %r2, 1, 31", kInvalid},
    {"vote.sync.uni.pred %p1, %p2, 0xffffffff", kRuns},
    {"vote.sync.pred %p1, %p2, 0xffffffff", kInvalid},
    {"vote.sync.ballot.pred %p1, %p2, 0xffffffff", kNotSupported},
    {"match.all.sync.b64 %r1|%p1, %rd2, 0xffffffff", kRuns},
    {"match.sync.b32 %r1, %r2, 0xffffffff", kInvalid},
    {"redux.sync.max.s32 %r1, %r2, 0xffffffff", kRuns},
    {"redux.sync.u32 %r1, %r2, 0xffffffff", kInvalid},
    {"redux.sync.add.b32 %r1, %r2, 0xffffffff", kNotSupported},
    {"elect.sync %r1|%p1, 0xffffffff", kRuns},
    {"activemask.b32 %r1", kRuns},
    {"membar.sys", kRuns},
    {"membar.gpu", kNotSupported},
    {"membar.xyz", kInvalid},
    {"fence.sc.gpu", kRuns},
    {"fence.acq_rel.cluster", kRuns},
    {"fence.sc", kNotSupported},
    {"fence.proxy.async.shared::cta", kRuns},
    {"fence.proxy.tensormap::generic.release.gpu", kNotSupported},
    {"prefetch.global.L2::evict_last [%rd1]", kRuns},
    {"prefetch.shared.L1 [sv]", kNotSupported},
    {"discard.global.L2 [%rd1], 128", kRuns},
    {"applypriority.global.L2::evict_normal [%rd1], 128", kRuns},
    {"griddepcontrol.wait", kRuns},
    {"griddepcontrol", kInvalid},
    {"createpolicy.fractional.L2::evict_last.L2::evict_unchanged.b64 %rd2, 0.5", kRuns},
    {"cp.async.ca.shared.global.L2::128B [sv], [%rd1], 8", kRuns},
    {"cp.async.shared.global [sv], [%rd1], 16", kNotSupported},
    {"cp.async.cg.shared.global [sv], [%rd1], 8", kInvalid},
    {"cp.async.wait_group 0", kRuns},
    {"nanosleep.u32 100", kRuns},
    {"pmevent.mask 1", kRuns},
    {"setmaxnreg.inc.sync.aligned.u32 240", kRuns},
};

// A kernel `k(.param .u64 in, .param .u64 out)`; %rd1 = in + 8 * tid, %rd2 = out + 8 * tid,
// %r0 = %tid.x, %r9 = global thread index.
std::string kernel(const std::string& body, const std::string& prelude = "") {
  return ".version 9.0\n.target sm_90\n.address_size 64\n" + prelude +
         ".visible .entry k(.param .u64 in, .param .u64 out)\n{\n"
         "  .reg .b32 %r<16>;\n  .reg .b64 %rd<16>;\n  .reg .f32 %f<16>;\n  .reg .pred %p<8>;\n"
         "  ld.param.u64 %rd1, [in];\n  ld.param.u64 %rd2, [out];\n  mov.u32 %r0, %tid.x;\n"
         "  mov.u32 %r8, %ntid.x;\n  mov.u32 %r9, %ctaid.x;\n  mad.lo.u32 %r9, %r9, %r8, %r0;\n"
         "  mul.wide.u32 %rd3, %r9, 8;\n  add.s64 %rd1, %rd1, %rd3;\n  add.s64 %rd2, %rd2, "
         "%rd3;\n" +
         body + "\n  ret;\n}\n";
}

// Runs `k` over `in` with `blocks` x `threads`; returns the output buffer (`out_words` u64).
std::vector<uint64_t> run_kernel(const std::string& text, const std::vector<uint64_t>& in,
                                 uint32_t blocks, uint32_t threads, size_t out_words) {
  CompileResult c = compile(text);
  INFO(text << "\n-> " << c.error);
  REQUIRE(c.program != nullptr);
  HostMemory mem;
  bind_variables(*c.program, mem);
  std::vector<uint64_t> padded = in;
  padded.resize(std::max(in.size(), out_words) + 8);
  uint64_t* din = mem.upload(padded);
  uint64_t* dout = mem.zeros<uint64_t>(out_words + 8);
  const LaunchResult r = run(*c.program, "k", {blocks}, {threads}, Args().add(din).add(dout), mem);
  INFO(r.message);
  REQUIRE(r.status == LaunchStatus::kSuccess);
  return std::vector<uint64_t>(dout, dout + out_words);
}

void require_refused(const std::string& text, const std::string& needle, CompileStatus status,
                     const std::string& what) {
  CompileResult c = compile(text);
  INFO(text << "\n-> " << c.error);
  REQUIRE(c.program == nullptr);
  CHECK(c.status == status);
  CHECK(c.error.rfind("line " + std::to_string(line_of(text, needle)) + ":", 0) == 0);
  CHECK(c.error.find(what) != std::string::npos);
}

}  // namespace

TEST_CASE("modifiers: each instruction of the table runs or is refused naming its line",
          "[ptx][modifiers]") {
  for (const Row& row : kRows) {
    const std::string text = module_with(row.instruction);
    CompileResult c = compile(text);
    INFO(row.instruction << " -> " << c.error);
    if (row.expect == kRuns) {
      CHECK(c.program != nullptr);  // CHECK, not REQUIRE: every row is reported
      if (!c.program) continue;
      HostMemory mem;
      bind_variables(*c.program, mem);
      uint64_t* out = mem.zeros<uint64_t>(512);
      const LaunchResult r = run(*c.program, "k", {1}, {64}, Args().add(out), mem);
      INFO(r.message);
      CHECK(r.status == LaunchStatus::kSuccess);
      continue;
    }
    CHECK(c.program == nullptr);
    if (c.program) continue;
    CHECK(c.status ==
          (row.expect == kInvalid ? CompileStatus::kInvalidPtx : CompileStatus::kNotSupported));
    // The instruction as written (modifier refusals), or its opcode (operand-count refusals).
    const std::string text_written(row.instruction, std::strcspn(row.instruction, " "));
    const std::string opcode(row.instruction, std::strcspn(row.instruction, " ."));
    CHECK((c.error.find("'" + text_written + "'") != std::string::npos ||
           c.error.find(opcode + " expects") != std::string::npos ||
           c.error.find("cp.async.cg copies 16 bytes") != std::string::npos));
    CHECK(c.error.rfind("line " + std::to_string(line_of(text, row.instruction)) + ":", 0) == 0);
  }
}

TEST_CASE("modifiers: the refusal says which modifier is wrong", "[ptx][modifiers]") {
  auto error_of = [](const std::string& instruction) {
    CompileResult c = compile(module_with(instruction));
    REQUIRE(c.program == nullptr);
    return c.error;
  };
  CHECK(error_of("add.ftzz.f32 %f1, %f2, %f3").find("unknown modifier '.ftzz'") !=
        std::string::npos);
  CHECK(error_of("add.hi.s32 %r1, %r2, %r3").find("'.hi'") != std::string::npos);
  CHECK(error_of("cvt.rn.rz.f32.f64 %f1, %fd2").find("'.rz' cannot be combined with '.rn'") !=
        std::string::npos);
  CHECK(error_of("add.rn.rn.f32 %f1, %f2, %f3").find("'.rn' is written twice") !=
        std::string::npos);
  CHECK(error_of("min.xorsign.f32 %f1, %f2, %f3").find("'.xorsign' needs '.abs'") !=
        std::string::npos);
  CHECK(
      error_of("redux.sync.u32 %r1, %r2, 0xffffffff").find("redux needs one of .add, .min, .max") !=
      std::string::npos);
  CHECK(error_of("rcp.f32 %f1, %f2").find(".approx or one of .rn, .rz, .rm, .rp") !=
        std::string::npos);
  CHECK(error_of("cvt.f32.s32 %f1, %r2").find("needs a rounding") != std::string::npos);
  CHECK(error_of("cvt.sat.s32.s16 %r1, %h2").find("every source value fits") != std::string::npos);
  CHECK(error_of("and.u32 %r1, %r2, %r3").find("no form of it takes the type .u32") !=
        std::string::npos);
  CHECK(error_of("ld.shared.L1::evict_last.u32 %r1, [sv]").find("global memory only") !=
        std::string::npos);
}

TEST_CASE("modifiers: every modifier without effect has a reason, and the docs list it",
          "[ptx][modifiers]") {
  std::ifstream f(CUSNAP_TEST_EMULATOR_DOC);
  REQUIRE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string doc = ss.str();
  const size_t from = doc.find("### Instruction modifiers");
  REQUIRE(from != std::string::npos);
  const std::string section = doc.substr(from, doc.find("\n## ", from) - from);
  const std::vector<NoEffectModifier> list = no_effect_modifiers();
  CHECK(list.size() > 40);
  for (const NoEffectModifier& m : list) {
    INFO(m.opcode << m.modifier);
    CHECK(m.reason != nullptr);
    // Written as a word in the section: `.ca` or inside a list like `.ca .cg .cs`.
    bool listed = false;
    for (size_t at = section.find(m.modifier); at != std::string::npos && !listed;
         at = section.find(m.modifier, at + 1)) {
      const char before = at ? section[at - 1] : ' ';
      const char after =
          at + m.modifier.size() < section.size() ? section[at + m.modifier.size()] : ' ';
      listed = (before == '`' || before == ' ') && (after == '`' || after == ' ');
    }
    CHECK(listed);
  }
}

TEST_CASE("modifiers: cache operators, eviction priorities and cache hints load and store exactly",
          "[ptx][modifiers]") {
  // Every hint on a copy in[i] -> out[i] (with a per-variant transform so each one is checked).
  const char* loads[] = {
      "ld.global.nc.L1::evict_last.u64",
      "ld.global.ca.L2::128B.u64",
      "ld.global.cs.L2::256B.u64",
      "ld.global.lu.u64",
      "ld.global.cv.u64",
      "ld.global.nc.ca.u64",
      "ld.volatile.global.L2::64B.u64",
      "ld.global.L1::no_allocate.u64",
      "ld.relaxed.gpu.global.L1::evict_first.u64",
      "ld.acquire.sys.global.L2::128B.u64",
      "ldu.global.u64",
      "ld.mmio.relaxed.sys.global.u64",
  };
  const char* stores[] = {
      "st.global.wb.u64",
      "st.global.cg.u64",
      "st.global.cs.u64",
      "st.global.wt.u64",
      "st.global.L1::evict_unchanged.u64",
      "st.release.cta.global.L1::no_allocate.u64",
      "st.relaxed.cluster.global.u64",
      "st.volatile.global.u64",
      "st.mmio.relaxed.sys.global.u64",
      "st.global.L2::cache_hint.u64",
  };
  std::vector<uint64_t> in(64);
  Rng rng(7);
  for (uint64_t& v : in) v = uint64_t{rng.next()} << 32 | rng.next();
  for (size_t i = 0; i < std::size(loads); ++i) {
    const char* st = stores[i % std::size(stores)];
    const bool hint = std::strstr(st, "cache_hint") != nullptr;
    const std::string body =
        std::string("  createpolicy.fractional.L2::evict_last.b64 %rd7, 1.0;\n") + "  " + loads[i] +
        " %rd4, [%rd1];\n  xor.b64 %rd4, %rd4, " + std::to_string(i + 1) + ";\n  " + st +
        " [%rd2], %rd4" + (hint ? ", %rd7" : "") + ";";
    INFO(loads[i] << " / " << st);
    const std::vector<uint64_t> out = run_kernel(kernel(body), in, 2, 32, 64);
    for (size_t t = 0; t < 64; ++t) CHECK(out[t] == (in[t] ^ (i + 1)));
  }
}

TEST_CASE("modifiers: atom and red with .L2::cache_hint take the policy operand and add exactly",
          "[ptx][modifiers]") {
  // Before, the cache-policy operand made these invalid ("atom expects 3 operands").
  const std::string body =
      "  createpolicy.fractional.L2::evict_first.b64 %rd7, 0.5;\n"
      "  ld.param.u64 %rd5, [out];\n"
      "  cvt.u64.u32 %rd6, %r9;\n  add.u64 %rd6, %rd6, 1;\n"
      "  atom.global.add.L2::cache_hint.u64 %rd8, [%rd5], %rd6, %rd7;\n"
      "  red.relaxed.gpu.global.add.L2::cache_hint.u64 [%rd5+8], %rd6, %rd7;\n"
      "  atom.acq_rel.gpu.global.max.L2::cache_hint.u32 %r3, [%rd5+16], %r9, %rd7;\n"
      "  st.global.u64 [%rd2+64], %rd8;";
  const uint32_t n = 4 * 64;
  const std::vector<uint64_t> out = run_kernel(kernel(body), {}, 4, 64, n + 8);
  CHECK(out[0] == uint64_t{n} * (n + 1) / 2);  // thread i adds i + 1
  CHECK(out[1] == uint64_t{n} * (n + 1) / 2);
  CHECK((out[2] & 0xffffffffu) == n - 1);
  // The old values atom.add returns are the partial sums of some order: distinct, below the total.
  std::vector<uint64_t> olds(out.begin() + 8, out.begin() + 8 + n);
  std::sort(olds.begin(), olds.end());
  CHECK(std::adjacent_find(olds.begin(), olds.end()) == olds.end());
  CHECK(olds.back() < out[0]);
}

TEST_CASE("modifiers: membar and fence order plain stores between blocks (threadfence reduction)",
          "[ptx][modifiers]") {
  // Each block stores a partial sum with a plain st, fences, and counts itself in; the block that
  // counts last reads every partial with plain loads after its own fence. Fences run as
  // sequentially consistent host fences, so the plain accesses are ordered by them.
  for (const char* fence :
       {"membar.gl", "fence.sc.gpu", "fence.acq_rel.gpu", "membar.sys", "fence.acq_rel.sys"}) {
    INFO(fence);
    const std::string body = std::string(
                                 "  ld.param.u64 %rd5, [out];\n"
                                 "  setp.ne.u32 %p1, %r0, 0;\n"
                                 "  @%p1 bra DONE;\n"
                                 "  ld.global.u64 %rd4, [%rd1];\n"
                                 "  mul.wide.u32 %rd6, %r9, 3;\n"
                                 "  add.u64 %rd4, %rd4, %rd6;\n"
                                 "  mov.u32 %r3, %ctaid.x;\n"
                                 "  mul.wide.u32 %rd6, %r3, 8;\n"
                                 "  add.s64 %rd6, %rd5, %rd6;\n"
                                 "  st.global.u64 [%rd6+64], %rd4;\n  ") +
                             fence +
                             ";\n"
                             "  mov.u32 %r4, %nctaid.x;\n"
                             "  sub.u32 %r5, %r4, 1;\n"
                             "  atom.global.inc.u32 %r6, [%rd5], %r5;\n"
                             "  setp.ne.u32 %p2, %r6, %r5;\n"
                             "  @%p2 bra DONE;\n  " +
                             fence +
                             ";\n"
                             "  mov.u64 %rd7, 0;\n"
                             "  mov.u32 %r7, 0;\n"
                             "SUM:\n"
                             "  mul.wide.u32 %rd8, %r7, 8;\n"
                             "  add.s64 %rd8, %rd5, %rd8;\n"
                             "  ld.global.u64 %rd9, [%rd8+64];\n"
                             "  add.u64 %rd7, %rd7, %rd9;\n"
                             "  add.u32 %r7, %r7, 1;\n"
                             "  setp.lt.u32 %p3, %r7, %r4;\n"
                             "  @%p3 bra SUM;\n"
                             "  st.global.u64 [%rd5+8], %rd7;\n"
                             "DONE:";
    const uint32_t blocks = 48, threads = 32;
    std::vector<uint64_t> in(blocks * threads);
    for (size_t i = 0; i < in.size(); ++i) in[i] = i * 1000003u;
    uint64_t expect = 0;
    for (uint32_t b = 0; b < blocks; ++b) expect += in[b * threads] + uint64_t{b} * threads * 3;
    const std::vector<uint64_t> out = run_kernel(kernel(body), in, blocks, threads, 64 + blocks);
    CHECK((out[0] & 0xffffffffu) == 0);  // atom.inc wrapped back to 0 after the last block
    CHECK(out[1] == expect);
  }
}

TEST_CASE("modifiers: barrier reductions with .cta and .aligned", "[ptx][modifiers]") {
  // Thread t votes t % 3 == 0; popc, and, or over the block, in every spelling.
  const std::string body =
      "  rem.u32 %r3, %r0, 3;\n  setp.eq.u32 %p1, %r3, 0;\n"
      "  bar.cta.red.popc.u32 %r4, 0, %p1;\n"
      "  barrier.cta.red.popc.aligned.u32 %r5, 1, !%p1;\n"
      "  bar.red.and.pred %p2, 2, %p1;\n"
      "  barrier.red.or.aligned.pred %p3, 3, %p1;\n"
      "  setp.lt.u32 %p4, %r0, 1000;\n"
      "  barrier.red.and.pred %p5, 4, %p4;\n"
      "  selp.u32 %r6, 1, 0, %p2;\n  selp.u32 %r7, 2, 0, %p3;\n  selp.u32 %r10, 4, 0, %p5;\n"
      "  or.b32 %r6, %r6, %r7;\n  or.b32 %r6, %r6, %r10;\n"
      "  cvt.u64.u32 %rd4, %r4;\n  cvt.u64.u32 %rd5, %r5;\n  shl.b64 %rd5, %rd5, 16;\n"
      "  or.b64 %rd4, %rd4, %rd5;\n  cvt.u64.u32 %rd5, %r6;\n  shl.b64 %rd5, %rd5, 32;\n"
      "  or.b64 %rd4, %rd4, %rd5;\n  st.global.u64 [%rd2], %rd4;";
  const uint32_t threads = 96;
  const std::vector<uint64_t> out = run_kernel(kernel(body), {}, 1, threads, threads);
  const uint64_t popc = (threads + 2) / 3;
  for (uint32_t t = 0; t < threads; ++t) {
    INFO("thread " << t);
    CHECK(out[t] == (popc | (threads - popc) << 16 | uint64_t{0 | 2 | 4} << 32));
  }
}

TEST_CASE("modifiers: .attribute(.unified) on .func, other attributes are refused",
          "[ptx][modifiers]") {
  const std::string prelude =
      ".func .attribute(.unified(0xAB, 0xCD)) (.reg .b64 r) twice(.reg .b64 a)\n{\n"
      "  add.u64 r, a, a;\n  ret;\n}\n";
  const std::string body =
      "  ld.global.u64 %rd4, [%rd1];\n  call.uni (%rd5), twice, (%rd4);\n"
      "  st.global.u64 [%rd2], %rd5;";
  std::vector<uint64_t> in(32);
  for (size_t i = 0; i < in.size(); ++i) in[i] = i * 77 + 5;
  const std::vector<uint64_t> out = run_kernel(kernel(body, prelude), in, 1, 32, 32);
  for (size_t i = 0; i < in.size(); ++i) CHECK(out[i] == 2 * in[i]);

  require_refused(kernel("", ".func .attribute(.managed) f()\n{\n  ret;\n}\n"), ".attribute",
                  CompileStatus::kNotSupported, "function attribute");
  require_refused(kernel("", ".global .attribute(.unified(1, 2)) .align 4 .u32 m;\n"), ".attribute",
                  CompileStatus::kNotSupported, "variable attribute .unified");
  require_refused(kernel("", ".const .attribute(.managed) .align 4 .u32 m;\n"), ".attribute",
                  CompileStatus::kInvalidPtx, "only to .global");
  require_refused(kernel("", ".func .attribute(.unified(1)) f()\n{\n  ret;\n}\n"), ".attribute",
                  CompileStatus::kInvalidPtx, "UUID");
}

TEST_CASE("modifiers: slct.f32 selects b for NaN, slct.ftz flushes a subnormal c",
          "[ptx][modifiers]") {
  // d = (c >= 0) ? a : b with c read as f32 (PTX ISA, slct): the comparison is ordered, so a NaN
  // c selects b; .ftz flushes a subnormal c to a zero of its sign, and -0 >= 0, so every
  // subnormal c selects a (without .ftz a negative subnormal selects b).
  const uint32_t cs[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x80000001u, 0x007fffffu,
                         0x807fffffu, 0x00800000u, 0x80800000u, 0x3f800000u, 0xbf800000u,
                         0x7f800000u, 0xff800000u, 0x80400000u, 0x00400000u, 0x7fc00000u,
                         0xffc00000u, 0x7f800001u, 0xff800001u};
  const size_t n = std::size(cs);
  std::vector<uint64_t> in(n);
  for (size_t i = 0; i < n; ++i) in[i] = cs[i];
  const std::string k =
      "  ld.global.f32 %f4, [%rd1];\n"
      "  slct.ftz.u32.f32 %r1, 111, 222, %f4;\n"
      "  slct.u32.f32 %r2, 111, 222, %f4;\n"
      "  cvt.u64.u32 %rd4, %r1;\n  cvt.u64.u32 %rd5, %r2;\n  shl.b64 %rd5, %rd5, 32;\n"
      "  or.b64 %rd4, %rd4, %rd5;\n  st.global.u64 [%rd2], %rd4;";
  const std::vector<uint64_t> out = run_kernel(kernel(k), in, 1, static_cast<uint32_t>(n), n);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t c = cs[i];
    const bool subnormal = (c & 0x7f800000u) == 0 && (c & 0x007fffffu) != 0;
    float f;
    std::memcpy(&f, &c, 4);
    const uint64_t ftz = (subnormal || f >= 0.0f) ? 111 : 222;
    const uint64_t plain = f >= 0.0f ? 111 : 222;
    INFO("c = 0x" << std::hex << c);
    CHECK((out[i] & 0xffffffffu) == ftz);
    CHECK((out[i] >> 32) == plain);
  }
}

TEST_CASE("modifiers: fma.oob is refused saying why", "[ptx][modifiers]") {
  for (const char* type : {"f16", "bf16"}) {
    const std::string text =
        kernel(std::string("  .reg .b16 %h<4>;\n  fma.rn.oob.") + type + " %h1, %h2, %h3, %h0;");
    require_refused(text, "fma.rn.oob", CompileStatus::kNotSupported,
                    "OOB-NaN of tensor loads, whose encoding the PTX ISA does not define");
  }
}

TEST_CASE("modifiers: .local and .shared declared in function bodies", "[ptx][modifiers]") {
  // A .func with its own .local array (per thread, per call) and .shared array (one per block,
  // shared by the block's threads across a barrier), called twice from every thread of 3
  // blocks; the kernel has its own .local and .shared in a nested scope.
  const std::string prelude =
      ".func (.reg .b64 r) mix(.reg .b64 a, .reg .b32 tid)\n{\n"
      "  .reg .b64 %x<4>;\n  .reg .b32 %y<4>;\n"
      "  .local .align 8 .b64 loc[4];\n"
      "  .shared .align 8 .b64 sh[64];\n"
      "  st.local.u64 [loc+8], a;\n"
      "  add.u64 %x1, a, 1;\n  st.local.u64 [loc+16], %x1;\n"
      "  mul.wide.u32 %x2, tid, 8;\n  mov.u64 %x3, sh;\n  add.u64 %x3, %x3, %x2;\n"
      "  st.shared.u64 [%x3], a;\n"
      "  bar.sync 0;\n"
      "  xor.b32 %y1, tid, 1;\n  mul.wide.u32 %x2, %y1, 8;\n  mov.u64 %x3, sh;\n"
      "  add.u64 %x3, %x3, %x2;\n  ld.shared.u64 %x1, [%x3];\n"  // the neighbour's value
      "  bar.sync 0;\n"
      "  ld.local.u64 %x2, [loc+8];\n  ld.local.u64 %x3, [loc+16];\n"
      "  mul.lo.u64 r, %x2, %x3;\n  add.u64 r, r, %x1;\n  ret;\n}\n";
  const std::string body =
      "  {\n  .local .align 8 .b64 kl[2];\n  .shared .align 8 .b64 ks[64];\n"
      "  ld.global.u64 %rd4, [%rd1];\n"
      "  call.uni (%rd5), mix, (%rd4, %r0);\n"
      "  st.local.u64 [kl+8], %rd5;\n"
      "  add.u64 %rd6, %rd4, 1000;\n"
      "  call.uni (%rd7), mix, (%rd6, %r0);\n"
      "  ld.local.u64 %rd5, [kl+8];\n"
      "  mul.wide.u32 %rd8, %r0, 8;\n  mov.u64 %rd9, ks;\n  add.u64 %rd9, %rd9, %rd8;\n"
      "  st.shared.u64 [%rd9], %rd7;\n  bar.sync 1;\n  ld.shared.u64 %rd7, [%rd9];\n"
      "  add.u64 %rd5, %rd5, %rd7;\n  st.global.u64 [%rd2], %rd5;\n  }";
  const uint32_t blocks = 3, threads = 64;
  std::vector<uint64_t> in(blocks * threads);
  Rng rng(11);
  for (uint64_t& v : in) v = rng.next();
  auto mix = [&](uint64_t a, uint64_t neighbour) { return a * (a + 1) + neighbour; };
  const std::vector<uint64_t> out =
      run_kernel(kernel(body, prelude), in, blocks, threads, blocks * threads);
  for (uint32_t b = 0; b < blocks; ++b) {
    for (uint32_t t = 0; t < threads; ++t) {
      const uint32_t i = b * threads + t, j = b * threads + (t ^ 1);
      const uint64_t expect = mix(in[i], in[j]) + mix(in[i] + 1000, in[j] + 1000);
      INFO("block " << b << " thread " << t);
      CHECK(out[i] == expect);
    }
  }
  // Module-scope .local is not allowed with the ABI (ptxas refuses it too); initializers are only
  // for .global and .const.
  require_refused(kernel("", ".local .align 4 .b32 ml[4];\n"), ".local .align 4",
                  CompileStatus::kNotSupported, "module-scope .local");
  require_refused(kernel("  .local .b32 li = 3;"), ".local .b32 li", CompileStatus::kInvalidPtx,
                  "initializers");
}

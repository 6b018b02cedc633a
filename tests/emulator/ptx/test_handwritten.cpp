// Hand-written PTX for syntax nvcc rarely emits: vector operands in mov, [sym+off], dual
// destinations, 0d immediates, inline { } scopes with shadowing, predicates as operands, calls
// with .reg parameters, bar.red, vote/match/redux, exit.
#include <cmath>

#include "harness.h"

using namespace cusnap::emu::ptx;
using namespace cusnap::emu::ptx::test;

TEST_CASE("hand-written PTX: vectors, sym+off, dual destinations, 0d immediates, scopes",
          "[ptx][handwritten]") {
  const char* text = R"(
.version 9.0
.target sm_90
.address_size 64

.global .align 8 .f64 gtable[4] = {0d3FF0000000000000, 0d4000000000000000, 0d4008000000000000, 0d4010000000000000};
.global .align 4 .u32 gwords[4] = {10, 20, 30, 40};

.func (.reg .b32 out) twice(.reg .b32 in)
{
  shl.b32 out, in, 1;
  ret;
}

.visible .entry hand(.param .u64 out_ptr)
{
  .reg .b32 %r<12>;
  .reg .b64 %rd<8>;
  .reg .f64 %fd<4>;
  .reg .pred %p<4>;
  .reg .b16 %h<3>;

  ld.param.u64 %rd1, [out_ptr];
  mov.u32 %r1, %tid.x;
  // [sym+off] and 0d immediates
  ld.global.f64 %fd1, [gtable+16];
  add.f64 %fd2, %fd1, 0d3FE0000000000000;     // + 0.5
  // vector operands in mov: split and join
  mov.b64 %rd2, 0x1122334455667788;
  mov.b64 {%r2, %r3}, %rd2;
  mov.b64 %rd3, {%r3, %r2};
  mov.b32 {%h1, %h2}, %r2;
  // inline scope with a shadowing register name
  {
    .reg .b32 %r1;
    mov.u32 %r1, 1000;
    add.u32 %r4, %r1, 1;
  }
  add.u32 %r4, %r4, %r1;                       // outer %r1 = tid again
  // dual destination setp and shfl
  setp.lt.u32 %p1|%p2, %r1, 4;
  selp.u32 %r5, 1, 0, %p2;
  shfl.sync.down.b32 %r6|%p3, %r1, 30, 0x1f, 0xffffffff;
  selp.u32 %r7, 1, 0, %p3;
  // vector load of words through [sym]
  ld.global.v4.u32 {%r8, %r9, %r10, %r11}, [gwords];
  add.u32 %r8, %r8, %r11;
  // call with .reg parameters
  call.uni (%r9), twice, (%r8);
  // bar.red.popc and vote/redux
  bar.red.popc.u32 %r10, 0, %p1;
  redux.sync.add.u32 %r11, %r1, 0xffffffff;

  mul.wide.u32 %rd4, %r1, 64;
  add.s64 %rd5, %rd1, %rd4;
  st.global.f64 [%rd5], %fd2;
  st.global.v2.u32 [%rd5+8], {%r2, %r3};
  st.global.u64 [%rd5+16], %rd3;
  st.global.v2.u16 [%rd5+24], {%h1, %h2};
  st.global.v4.u32 [%rd5+32], {%r4, %r5, %r6, %r7};
  st.global.v2.u32 [%rd5+48], {%r9, %r10};
  st.global.u32 [%rd5+56], %r11;
  @%p1 exit;
  st.global.u32 [%rd5+60], 77;
  ret;
}
)";
  auto prog = compile_or_fail(text);
  HostMemory mem;
  bind_variables(*prog, mem);
  const int threads = 40;
  uint8_t* out = static_cast<uint8_t*>(mem.alloc(64 * threads));
  std::memset(out, 0xab, 64 * threads);
  require_success(run(*prog, "hand", {1}, {threads}, Args().add(out), mem));
  for (int t = 0; t < threads; ++t) {
    INFO("thread " << t);
    uint8_t* rec = out + 64 * t;
    double d;
    std::memcpy(&d, rec, 8);
    REQUIRE(d == 3.5);
    uint32_t w[14];
    std::memcpy(w, rec + 8, 56);
    REQUIRE(w[0] == 0x55667788u);
    REQUIRE(w[1] == 0x11223344u);
    uint64_t joined;
    std::memcpy(&joined, rec + 16, 8);
    REQUIRE(joined == 0x5566778811223344ull);
    uint16_t h[2];
    std::memcpy(h, rec + 24, 4);
    REQUIRE(h[0] == 0x7788);
    REQUIRE(h[1] == 0x5566);
    REQUIRE(w[6] == 1001u + t);          // %r4
    REQUIRE(w[7] == (t < 4 ? 0u : 1u));  // %p2 = !(tid < 4)
    int lane = t & 31;
    bool in_range = lane + 30 <= 31;
    int warp_base = t & ~31;
    uint32_t src_lane = in_range ? lane + 30 : lane;
    // shfl.down value; a source lane that does not exist (partial last warp) is undefined
    if (warp_base + static_cast<int>(src_lane) < threads)
      REQUIRE(w[8] == static_cast<uint32_t>(warp_base) + src_lane);
    REQUIRE(w[9] == (in_range ? 1u : 0u));
    REQUIRE(w[10] == 2u * (10 + 40));  // twice(gwords[0] + gwords[3])
    REQUIRE(w[11] == 4u);              // threads with tid < 4
    uint32_t sum = 0;
    int warp_end = std::min(threads, warp_base + 32);
    for (int k = warp_base; k < warp_end; ++k) sum += static_cast<uint32_t>(k);
    REQUIRE(w[12] == sum);
    uint32_t tail;
    std::memcpy(&tail, rec + 60, 4);
    REQUIRE(tail == (t < 4 ? 0xababababu : 77u));
  }
}

TEST_CASE("hand-written PTX: bar.sync with a thread count and named barriers",
          "[ptx][handwritten]") {
  // Warps 0-1 produce into shared memory and arrive on barrier 1; warps 2-3 wait on barrier 1
  // (count 128) and consume.
  const char* text = R"(
.version 9.0
.target sm_75
.address_size 64
.visible .entry prodcons(.param .u64 out)
{
  .shared .align 4 .b32 buf[64];
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  .reg .pred %p1;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  setp.ge.u32 %p1, %r1, 64;
  @%p1 bra CONSUME;
  shl.b32 %r2, %r1, 2;
  mov.u32 %r3, buf;
  add.u32 %r3, %r3, %r2;
  mul.lo.u32 %r4, %r1, %r1;
  st.shared.u32 [%r3], %r4;
  bar.arrive 1, 128;
  exit;
CONSUME:
  bar.sync 1, 128;
  sub.u32 %r5, %r1, 64;
  shl.b32 %r2, %r5, 2;
  mov.u32 %r3, buf;
  add.u32 %r3, %r3, %r2;
  ld.shared.u32 %r6, [%r3];
  mul.wide.u32 %rd2, %r5, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.u32 [%rd3], %r6;
  ret;
}
)";
  auto prog = compile_or_fail(text);
  HostMemory mem;
  uint32_t* out = mem.zeros<uint32_t>(64);
  require_success(run(*prog, "prodcons", {1}, {128}, Args().add(out), mem));
  for (uint32_t i = 0; i < 64; ++i) REQUIRE(out[i] == i * i);
}

TEST_CASE("a barrier that can never complete is reported as hung", "[ptx][handwritten]") {
  const char* text = R"(
.version 9.0
.target sm_75
.address_size 64
.visible .entry stuck()
{
  .reg .b32 %r1;
  .reg .pred %p1;
  mov.u32 %r1, %tid.x;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra SKIP;
  bar.sync 0;
SKIP:
  bar.sync 1, 64;
  ret;
}
)";
  auto prog = compile_or_fail(text);
  HostMemory mem;
  auto r = run(*prog, "stuck", {1}, {64}, Args(), mem);
  REQUIRE(r.status == LaunchStatus::kHung);
}

TEST_CASE("shared and local bounds are checked by the engine", "[ptx][handwritten]") {
  const char* text = R"(
.version 9.0
.target sm_75
.address_size 64
.visible .entry shared_oob(.param .u32 off)
{
  .shared .align 4 .b8 small[16];
  .reg .b32 %r<3>;
  ld.param.u32 %r1, [off];
  mov.u32 %r2, small;
  add.u32 %r2, %r2, %r1;
  st.shared.u32 [%r2], 5;
  ret;
}
.visible .entry local_oob(.param .u64 off)
{
  .local .align 4 .b8 depot[16];
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [off];
  mov.u64 %rd2, depot;
  add.u64 %rd2, %rd2, %rd1;
  st.local.u32 [%rd2], 5;
  ret;
}
)";
  auto prog = compile_or_fail(text);
  HostMemory mem;
  require_success(run(*prog, "shared_oob", {1}, {1}, Args().add(uint32_t{12}), mem));
  auto r = run(*prog, "shared_oob", {1}, {1}, Args().add(uint32_t{16}), mem);
  REQUIRE(r.status == LaunchStatus::kIllegalAddress);
  CHECK(r.message.find("shared") != std::string::npos);
  auto m = run(*prog, "shared_oob", {1}, {1}, Args().add(uint32_t{2}), mem);
  REQUIRE(m.status == LaunchStatus::kMisalignedAddress);
  require_success(run(*prog, "local_oob", {1}, {1}, Args().add(uint64_t{4}), mem));
  auto l = run(*prog, "local_oob", {1}, {1}, Args().add(uint64_t{1} << 20), mem);
  REQUIRE(l.status == LaunchStatus::kIllegalAddress);
  CHECK(l.message.find("local") != std::string::npos);
}

TEST_CASE("kernel parameters through generic pointers (cvta.param) and isspacep",
          "[ptx][handwritten]") {
  const char* text = R"(
.version 9.0
.target sm_90
.address_size 64
.visible .entry byval(.param .align 8 .b8 s[32], .param .u64 out)
{
  .shared .align 4 .b32 sh[4];
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  .reg .pred %p<4>;
  mov.b64 %rd1, s;
  cvta.param.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.u32 %r2, [%rd4];
  ld.param.u64 %rd5, [out];
  add.s64 %rd6, %rd5, %rd3;
  isspacep.param %p1, %rd4;
  isspacep.global %p2, %rd6;
  mov.u64 %rd7, sh;
  cvta.shared.u64 %rd7, %rd7;
  isspacep.shared %p3, %rd7;
  selp.u32 %r3, 100, 0, %p1;
  selp.u32 %r4, 1000, 0, %p2;
  selp.u32 %r5, 10000, 0, %p3;
  add.u32 %r2, %r2, %r3;
  add.u32 %r2, %r2, %r4;
  add.u32 %r2, %r2, %r5;
  st.u32 [%rd6], %r2;
  ret;
}
)";
  auto prog = compile_or_fail(text);
  HostMemory mem;
  uint32_t s[8];
  for (uint32_t i = 0; i < 8; ++i) s[i] = i * 11 + 3;
  struct S {
    uint32_t v[8];
  } sv;
  std::memcpy(sv.v, s, sizeof s);
  uint32_t* out = mem.zeros<uint32_t>(8);
  require_success(run(*prog, "byval", {1}, {8}, Args().add(sv).add(out), mem));
  for (uint32_t i = 0; i < 8; ++i) REQUIRE(out[i] == s[i] + 11100);
}

TEST_CASE("special registers: ids, dimensions, lane masks, clusters", "[ptx][handwritten]") {
  const char* text = R"(
.version 9.0
.target sm_90
.address_size 64
.visible .entry ids(.param .u64 out)
{
  .reg .b32 %r<16>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.u32 %r4, %r1, %r2, %r3;
  mul.wide.u32 %rd2, %r4, 48;
  add.s64 %rd3, %rd1, %rd2;
  mov.u32 %r5, %laneid;
  mov.u32 %r6, %warpid;
  mov.u32 %r7, %lanemask_lt;
  mov.u32 %r8, %cluster_ctaid.x;
  mov.u32 %r9, %clusterid.x;
  mov.u32 %r10, %cluster_nctarank;
  mov.u32 %r11, %nclusterid.x;
  mov.u32 %r12, %nctaid.y;
  mov.u32 %r13, %ctaid.y;
  mov.u32 %r14, %tid.y;
  st.global.v4.u32 [%rd3], {%r5, %r6, %r7, %r8};
  st.global.v4.u32 [%rd3+16], {%r9, %r10, %r11, %r12};
  st.global.v2.u32 [%rd3+32], {%r13, %r14};
  ret;
}
)";
  auto prog = compile_or_fail(text);
  HostMemory mem;
  const uint32_t bx = 48, gx = 4;
  uint32_t* out = mem.zeros<uint32_t>(12 * bx * gx);
  require_success(run(*prog, "ids", {gx}, {bx}, Args().add(out), mem, 0, false, {2, 1, 1}));
  for (uint32_t b = 0; b < gx; ++b)
    for (uint32_t t = 0; t < bx; ++t) {
      const uint32_t* r = out + 12 * (b * bx + t);
      REQUIRE(r[0] == t % 32);
      REQUIRE(r[1] == t / 32);
      REQUIRE(r[2] == (1u << (t % 32)) - 1);
      REQUIRE(r[3] == b % 2);
      REQUIRE(r[4] == b / 2);
      REQUIRE(r[5] == 2u);
      REQUIRE(r[6] == gx / 2);
      REQUIRE(r[7] == 1u);
      REQUIRE(r[8] == 0u);
      REQUIRE(r[9] == 0u);
    }
  auto bad = run(*prog, "ids", {3}, {bx}, Args().add(out), mem, 0, false, {2, 1, 1});
  REQUIRE(bad.status == LaunchStatus::kInvalidValue);
}

TEST_CASE("execution counters: warp- and thread-instructions with divergence and a partial warp",
          "[ptx][handwritten]") {
  const char* text = R"(
.version 9.0
.target sm_75
.address_size 64
.visible .entry count_me(.param .u64 out)
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  mov.u32 %r1, %tid.x;
  setp.lt.u32 %p1, %r1, 8;
  @%p1 bra SKIP;
  add.u32 %r1, %r1, 100;
SKIP:
  ld.param.u64 %rd1, [out];
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r1;
  ret;
}
)";
  auto prog = compile_or_fail(text);
  HostMemory mem;
  auto* out = static_cast<uint32_t*>(mem.alloc(4 * 256));
  LaunchResult r = run(*prog, "count_me", {3}, {40}, Args().add(out), mem);
  require_success(r);
  // Per block, warp 0 (32 lanes): mov, setp, bra by 32 lanes; add by the 24 lanes that did not
  // branch; ld, mul, add, st, ret by 32 -> 8 * 32 + 24 = 280. Warp 1 (tid 32..39, 8 lanes, none
  // branches): 9 instructions x 8 lanes = 72. Three blocks: 3 * 352 thread-instructions and
  // 3 * (9 + 9) warp-instructions.
  CHECK(r.thread_instructions == 1056);
  CHECK(r.instructions == 54);
}

// Vector atomics of the half types (nvcc emits only the f32 ones, tested with its PTX in
// test_kernels_advanced.cpp): .v8.f16, .v4.bf16x2 and a red.v2.f16x2, each element its own
// atomic add, on exactly representable values; and the forms the ISA does not define.
TEST_CASE("hand-written vector atomics of the half types", "[ptx][handwritten]") {
  const char* text = R"(
.version 8.6
.target sm_90
.address_size 64
.visible .entry vatom(.param .u64 h8, .param .u64 b4, .param .u64 r2, .param .u64 old)
{
  .reg .b16 %h<10>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<8>;
  .reg .pred %p<2>;
  ld.param.u64 %rd1, [h8];
  ld.param.u64 %rd2, [b4];
  ld.param.u64 %rd3, [r2];
  ld.param.u64 %rd4, [old];
  mov.b16 %h1, 0x3C00;             // f16 1.0
  mov.b16 %h2, 0x4000;             // f16 2.0
  atom.global.add.noftz.v8.f16 {%h3,%h4,%h5,%h6,%h7,%h8,%h9,%h0}, [%rd1],
      {%h1,%h2,%h1,%h2,%h1,%h2,%h1,%h2};
  mov.b32 %r1, 0x3F804000;         // bf16x2 {2.0 (low), 1.0 (high)}
  atom.global.add.noftz.v4.bf16x2 {%r2,%r3,%r4,%r5}, [%rd2], {%r1,%r1,%r1,%r1};
  mov.b32 %r6, 0x3C003C00;         // f16x2 {1.0, 1.0}
  red.global.add.noftz.v2.f16x2 [%rd3], {%r6,%r6};
  mov.u32 %r7, %tid.x;
  setp.ne.u32 %p1, %r7, 0;
  @%p1 bra END;
  st.global.b16 [%rd4], %h3;       // thread 0's old first element
END:
  ret;
}
)";
  auto prog = compile_or_fail(text);
  HostMemory mem;
  uint16_t* h8 = mem.zeros<uint16_t>(8);
  uint32_t* b4 = mem.zeros<uint32_t>(4);
  uint32_t* r2 = mem.zeros<uint32_t>(2);
  uint16_t* old = mem.zeros<uint16_t>(1);
  old[0] = 0xffff;
  require_success(run(*prog, "vatom", {1}, {64}, Args().add(h8).add(b4).add(r2).add(old), mem));
  // 64 threads: f16 64.0 = 0x5400, 128.0 = 0x5800; bf16 128.0 = 0x4300, 64.0 = 0x4280.
  for (int i = 0; i < 8; ++i) CHECK(h8[i] == (i % 2 == 0 ? 0x5400 : 0x5800));
  for (int i = 0; i < 4; ++i) CHECK(b4[i] == 0x42804300u);
  for (int i = 0; i < 2; ++i) CHECK(r2[i] == 0x54005400u);
  CHECK((old[0] & 0x83ffu) == 0);  // an old value: 0.0 or a power of two times 1.0, as f16

  auto invalid = [](const std::string& instr) {
    const std::string t = std::string(".version 8.6\n.target sm_90\n.address_size 64\n") +
                          ".visible .entry k(.param .u64 p)\n{\n  .reg .b32 %r<8>;\n"
                          "  .reg .f32 %f<8>;\n  .reg .b64 %rd<4>;\n  ld.param.u64 %rd1, [p];\n" +
                          instr + "\n  ret;\n}\n";
    return compile(t);
  };
  CompileResult v8 = invalid(
      "  atom.global.add.v8.f32 {%f1,%f2,%f3,%f4,%f5,%f6,%f7,%f1}, [%rd1], "
      "{%f1,%f2,%f3,%f4,%f5,%f6,%f7,%f1};");
  CHECK(v8.status == CompileStatus::kInvalidPtx);
  CHECK(v8.error.find(".v8 is defined for f16 and bf16 only") != std::string::npos);
  CompileResult shared = invalid("  atom.shared.add.v2.f32 {%f1,%f2}, [%rd1], {%f3,%f4};");
  CHECK(shared.status == CompileStatus::kInvalidPtx);
  CHECK(shared.error.find("global memory only") != std::string::npos);
  CompileResult count = invalid("  atom.global.add.v4.f32 {%f1,%f2}, [%rd1], {%f3,%f4};");
  CHECK(count.status == CompileStatus::kInvalidPtx);
  CHECK(count.error.find("4-element vectors") != std::string::npos);
}

// stacksave / alloca / stackrestore (nvcc emits alloca alone, test_kernels_advanced.cpp): a
// restored pointer frees what was allocated after it, so the next alloca gets the same block;
// blocks are aligned as asked and lie below the saved pointer (the stack grows down); a restore
// above the function's stack fails the launch.
TEST_CASE("hand-written stacksave and stackrestore", "[ptx][handwritten]") {
  const char* text = R"(
.version 8.6
.target sm_90
.address_size 64
.visible .entry stack(.param .u64 out, .param .u64 bad)
{
  .reg .b64 %rd<12>;
  .reg .pred %p<2>;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd9, [bad];
  stacksave.u64 %rd2;
  alloca.u64 %rd3, 40, 64;
  st.local.u64 [%rd3], 77;
  stackrestore.u64 %rd2;
  alloca.u64 %rd4, 40, 64;
  ld.local.u64 %rd5, [%rd4];
  sub.u64 %rd6, %rd2, %rd3;
  and.b64 %rd7, %rd3, 63;
  sub.u64 %rd8, %rd4, %rd3;
  st.global.u64 [%rd1], %rd5;
  st.global.u64 [%rd1+8], %rd6;
  st.global.u64 [%rd1+16], %rd7;
  st.global.u64 [%rd1+24], %rd8;
  setp.eq.u64 %p1, %rd9, 0;
  @%p1 bra END;
  add.u64 %rd10, %rd2, 16;
  stackrestore.u64 %rd10;
END:
  ret;
}
)";
  auto prog = compile_or_fail(text);
  HostMemory mem;
  uint64_t* out = mem.zeros<uint64_t>(4);
  require_success(run(*prog, "stack", {1}, {1}, Args().add(out).add(uint64_t{0}), mem));
  CHECK(out[0] == 77);  // the block allocated again is the one freed
  CHECK(out[1] >= 40);  // below the saved pointer, at least the size
  CHECK(out[1] < 40 + 64);
  CHECK(out[2] == 0);  // 64-byte aligned
  CHECK(out[3] == 0);  // the same block
  LaunchResult r = run(*prog, "stack", {1}, {1}, Args().add(out).add(uint64_t{1}), mem);
  CHECK(r.status == LaunchStatus::kIllegalAddress);
  CHECK(r.message.find("stackrestore to") != std::string::npos);
}

// cvt.pack.sat (sm_72+; sub-byte types sm_75+): every converted type on edge and random inputs,
// against the PTX ISA's bit loop (td[i] = ta[i - size] above tb, then c's low bits above 2 * size)
// written out bit by bit here; and the ISA's example of four s32 packed into u8 lanes in two steps.
TEST_CASE("hand-written cvt.pack.sat of every converted type", "[ptx][handwritten]") {
  struct Form {
    const char* type;
    int bits;
    bool is_signed;
  };
  const Form forms[] = {{"u16", 16, false}, {"s16", 16, true}, {"u8", 8, false}, {"s8", 8, true},
                        {"u4", 4, false},   {"s4", 4, true},   {"u2", 2, false}, {"s2", 2, true}};
  std::vector<int32_t> edges = {0,      1,      -1,    2,     -2,        3,        -3,
                                7,      8,      -8,    -9,    15,        16,       127,
                                128,    -128,   -129,  255,   256,       32767,    32768,
                                -32768, -32769, 65535, 65536, INT32_MAX, INT32_MIN};
  Rng rng(7);
  while (edges.size() < 64) edges.push_back(static_cast<int32_t>(rng.next()));
  const int lanes = static_cast<int>(edges.size());
  for (const Form& form : forms) {
    INFO(form.type);
    const bool with_c = form.bits != 16;
    std::string text = std::string(".version 8.6\n.target sm_90\n.address_size 64\n") +
                       ".visible .entry pack(.param .u64 in, .param .u64 out)\n{\n"
                       "  .reg .b32 %r<8>;\n  .reg .b64 %rd<8>;\n"
                       "  ld.param.u64 %rd1, [in];\n  ld.param.u64 %rd2, [out];\n"
                       "  mov.u32 %r1, %tid.x;\n  mul.wide.u32 %rd3, %r1, 4;\n"
                       "  add.s64 %rd4, %rd1, %rd3;\n  ld.global.u32 %r2, [%rd4];\n"
                       "  add.u32 %r5, %r1, 17;\n  rem.u32 %r5, %r5, " +
                       std::to_string(lanes) +
                       ";\n  mul.wide.u32 %rd5, %r5, 4;\n  add.s64 %rd6, %rd1, %rd5;\n"
                       "  ld.global.u32 %r3, [%rd6];\n  xor.b32 %r4, %r2, 0x9E3779B9;\n" +
                       "  cvt.pack.sat." + form.type + ".s32" + (with_c ? ".b32" : "") +
                       " %r6, %r2, %r3" + (with_c ? ", %r4" : "") +
                       ";\n  add.s64 %rd7, %rd2, %rd3;\n  st.global.u32 [%rd7], %r6;\n  ret;\n}\n";
    auto prog = compile_or_fail(text);
    HostMemory mem;
    std::vector<int32_t> in(edges);
    int32_t* din = mem.upload(in);
    uint32_t* out = mem.zeros<uint32_t>(lanes);
    require_success(
        run(*prog, "pack", {1}, {static_cast<uint32_t>(lanes)}, Args().add(din).add(out), mem));
    const int64_t lo = form.is_signed ? -(int64_t{1} << (form.bits - 1)) : 0;
    const int64_t hi =
        form.is_signed ? (int64_t{1} << (form.bits - 1)) - 1 : (int64_t{1} << form.bits) - 1;
    for (int t = 0; t < lanes; ++t) {
      const int64_t a = in[t], b = in[(t + 17) % lanes];
      const uint32_t c = static_cast<uint32_t>(in[t]) ^ 0x9E3779B9u;
      const int64_t ta = a < lo ? lo : a > hi ? hi : a;
      const int64_t tb = b < lo ? lo : b > hi ? hi : b;
      uint32_t want = 0;
      for (int i = 0; i < form.bits; ++i) want |= static_cast<uint32_t>((tb >> i) & 1) << i;
      for (int i = form.bits; i < 2 * form.bits; ++i)
        want |= static_cast<uint32_t>((ta >> (i - form.bits)) & 1) << i;
      if (with_c)
        for (int i = 2 * form.bits; i < 32; ++i) want |= ((c >> (i - 2 * form.bits)) & 1u) << i;
      INFO("lane " << t << ": a " << a << ", b " << b);
      REQUIRE(out[t] == want);
    }
  }
  // The ISA's example: four s32 into the u8 lanes of one word, two at a time.
  const char* four = R"(
.version 8.6
.target sm_90
.address_size 64
.visible .entry four(.param .u64 out)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  cvt.pack.sat.u8.s32.b32 %r1, 300, -5, 0;
  cvt.pack.sat.u8.s32.b32 %r4, 7, 200, %r1;
  st.global.u32 [%rd1], %r4;
  ret;
}
)";
  auto prog = compile_or_fail(four);
  HostMemory mem;
  uint32_t* out = mem.zeros<uint32_t>(1);
  require_success(run(*prog, "four", {1}, {1}, Args().add(out), mem));
  CHECK(out[0] == 0xff0007c8u);  // 255 (300), 0 (-5) above 7, 200
  CompileResult bad = compile(
      ".version 8.6\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n"
      "  .reg .b32 %r<4>;\n  cvt.pack.sat.u8.s32 %r1, %r2, %r3;\n  ret;\n}\n");
  CHECK(bad.status == CompileStatus::kInvalidPtx);
}

// Determinism: which kernels run their blocks one at a time in block-index order (KernelDesc::
// serial_blocks, schedule.cpp), and that their results are then the same whatever the number of
// worker threads; the launch watchdog (Limits::timeout_ms).
#include "harness.h"

using namespace cusnap::emu::ptx;
using namespace cusnap::emu::ptx::test;

namespace {

// One kernel per rule. `keep` stores the atom's result, `drop` leaves it unused (nvcc writes a
// destination register even then).
const char* kRulesPtx = R"(.version 8.0
.target sm_75
.address_size 64
.extern .func (.param .b64 r) malloc(.param .b64 size);
.visible .entry heap_user(.param .u64 p)
{
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [p];
  {
    .param .b64 size;
    .param .b64 r;
    st.param.b64 [size], 64;
    call.uni (r), malloc, (size);
    ld.param.b64 %rd2, [r];
  }
  st.global.u64 [%rd1], %rd2;
  ret;
}
.func helper_exch(.param .u64 p)
{
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [p];
  atom.global.exch.b32 _, [%rd1], 1;
  ret;
}
.visible .entry int_red(.param .u64 p)
{
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [p];
  red.global.add.u32 [%rd1], 1;
  red.global.max.s32 [%rd1+4], 1;
  red.global.or.b32 [%rd1+8], 1;
  ret;
}
.visible .entry atom_drop(.param .u64 p)
{
  .reg .b64 %rd<2>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [p];
  atom.global.add.u32 %r1, [%rd1], 1;
  ret;
}
.visible .entry atom_keep(.param .u64 p)
{
  .reg .b64 %rd<2>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [p];
  atom.global.add.u32 %r1, [%rd1], 1;
  st.global.u32 [%rd1+4], %r1;
  ret;
}
.visible .entry atom_generic_keep(.param .u64 p)
{
  .reg .b64 %rd<2>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [p];
  atom.or.b32 %r1, [%rd1], 1;
  st.u32 [%rd1+4], %r1;
  ret;
}
.visible .entry float_red(.param .u64 p)
{
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [p];
  red.global.add.f32 [%rd1], 0f3F800000;
  ret;
}
.visible .entry exch_call(.param .u64 p)
{
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [p];
  {
  .param .b64 a;
  st.param.b64 [a], %rd1;
  call helper_exch, (a);
  }
  ret;
}
.visible .entry relaxed_load(.param .u64 p)
{
  .reg .b64 %rd<2>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [p];
  ld.relaxed.gpu.global.u32 %r1, [%rd1];
  st.global.u32 [%rd1+4], %r1;
  ret;
}
.visible .entry shared_only(.param .u64 p)
{
  .reg .b64 %rd<2>;
  .reg .b32 %r<3>;
  .shared .align 4 .u32 s;
  ld.param.u64 %rd1, [p];
  atom.shared.add.u32 %r1, [s], 1;
  ld.volatile.shared.u32 %r2, [s];
  add.u32 %r1, %r1, %r2;
  st.global.u32 [%rd1], %r1;
  ret;
}
)";

// Every thread keeps an atom.inc ticket; a float red.add sums values of mixed magnitudes.
const char* kOrderPtx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry tickets(.param .u64 counter, .param .u64 out)
{
  .reg .b64 %rd<6>;
  .reg .b32 %r<6>;
  ld.param.u64 %rd1, [counter];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.u32 %r4, %r1, %r2, %r3;
  atom.global.inc.u32 %r5, [%rd1], -1;
  mul.wide.u32 %rd3, %r4, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r5;
  ret;
}
.visible .entry fsum(.param .u64 in, .param .u64 sum)
{
  .reg .b64 %rd<6>;
  .reg .b32 %r<5>;
  .reg .f32 %f<2>;
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [sum];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.u32 %r4, %r1, %r2, %r3;
  mul.wide.u32 %rd3, %r4, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.f32 %f1, [%rd4];
  red.global.add.f32 [%rd2], %f1;
  ret;
}
.visible .entry forever()
{
LOOP:
  bra.uni LOOP;
}
)";

bool serial(Program& p, const char* name) {
  int k = p.find_kernel(name);
  REQUIRE(k >= 0);
  INFO(name << ": " << p.kernels()[k].serial_reason);
  CHECK(p.kernels()[k].serial_blocks == !p.kernels()[k].serial_reason.empty());
  return p.kernels()[k].serial_blocks;
}

LaunchResult launch_with(Program& p, const char* name, Dim3 grid, Dim3 block, const Args& args,
                         MemoryHost& mem, const Limits& limits) {
  int k = p.find_kernel(name);
  REQUIRE(k >= 0);
  std::vector<uint8_t> buf = args.pack(p.kernels()[k]);
  LaunchConfig cfg;
  cfg.grid = grid;
  cfg.block = block;
  cfg.params = buf.data();
  cfg.params_size = buf.size();
  return p.launch(k, cfg, mem, limits);
}

}  // namespace

TEST_CASE("kernels whose blocks can observe each other's order are serialised, with a reason",
          "[ptx][order]") {
  auto p = compile_or_fail(kRulesPtx);
  CHECK_FALSE(serial(*p, "int_red"));      // commutative integer reductions stay parallel
  CHECK_FALSE(serial(*p, "atom_drop"));    // result register never read: a reduction
  CHECK_FALSE(serial(*p, "shared_only"));  // confined to one block
  CHECK(serial(*p, "atom_keep"));
  CHECK(serial(*p, "atom_generic_keep"));  // generic addresses may be global
  CHECK(serial(*p, "float_red"));
  CHECK(serial(*p, "exch_call"));  // found in a callee
  CHECK(serial(*p, "relaxed_load"));
  CHECK(serial(*p, "heap_user"));  // device malloc: which block gets which address
  const auto& kernels = p->kernels();
  auto reason = [&](const char* name) { return kernels[p->find_kernel(name)].serial_reason; };
  CHECK(reason("atom_keep").find("value-returning 'atom.global.add.u32'") != std::string::npos);
  const int keep_line = line_of(kRulesPtx, "atom.global.add.u32 %r1, [%rd1], 1;\n  st.global");
  CHECK(reason("atom_keep").find("PTX line " + std::to_string(keep_line)) != std::string::npos);
  CHECK(reason("float_red").find("floating-point 'red.global.add.f32'") != std::string::npos);
  CHECK(reason("exch_call").find("'atom.global.exch.b32' (not commutative") != std::string::npos);
  CHECK(reason("exch_call").find("in function 'helper_exch'") != std::string::npos);
  CHECK(reason("relaxed_load").find("ordered load 'ld.relaxed.global'") != std::string::npos);
  CHECK(reason("heap_user").find("device-side malloc") != std::string::npos);
}

TEST_CASE("order-dependent results are the same with 1, 2 and 7 worker threads", "[ptx][order]") {
  auto p = compile_or_fail(kOrderPtx);
  REQUIRE(serial(*p, "tickets"));
  REQUIRE(serial(*p, "fsum"));
  const uint32_t blocks = 128, threads = 64, n = blocks * threads;
  std::vector<float> values(n);
  for (uint32_t i = 0; i < n; ++i)
    values[i] = (i % 3 == 0 ? 1.0e6f : 0.3f) * (1.0f + 0.01f * static_cast<float>(i % 17));
  std::vector<uint32_t> first_tickets;
  uint32_t first_sum = 0;
  for (uint32_t workers : {1u, 2u, 7u, 7u, 2u, 1u}) {
    INFO("worker threads " << workers);
    HostMemory mem;
    auto* counter = mem.zeros<uint32_t>(1);
    auto* out = mem.zeros<uint32_t>(n);
    auto* in = mem.upload(values);
    auto* sum = mem.zeros<float>(1);
    Limits limits;
    limits.worker_threads = workers;
    require_success(
        launch_with(*p, "tickets", {blocks}, {threads}, Args().add(counter).add(out), mem, limits));
    require_success(
        launch_with(*p, "fsum", {blocks}, {threads}, Args().add(in).add(sum), mem, limits));
    std::vector<uint32_t> tickets(out, out + n);
    uint32_t bits;
    std::memcpy(&bits, sum, 4);
    // Block-index order: thread i of the grid draws ticket i.
    for (uint32_t i = 0; i < n; ++i) REQUIRE(tickets[i] == i);
    if (first_tickets.empty()) {
      first_tickets = tickets;
      first_sum = bits;
    }
    CHECK(tickets == first_tickets);
    CHECK(bits == first_sum);
  }
}

TEST_CASE("the watchdog stops a launch that never ends, naming kernel and block", "[ptx][order]") {
  auto p = compile_or_fail(kOrderPtx);
  HostMemory mem;
  Limits limits;
  limits.timeout_ms = 200;
  for (uint32_t workers : {1u, 3u}) {
    limits.worker_threads = workers;
    LaunchResult r = launch_with(*p, "forever", {2}, {32}, Args(), mem, limits);
    INFO(r.message);
    CHECK(r.status == LaunchStatus::kTimeout);
    CHECK(r.message.find("kernel forever ran longer than the launch time limit of 0.2 s") !=
          std::string::npos);
    const std::string at =
        "warp 0 at PTX line " + std::to_string(line_of(kOrderPtx, "bra.uni LOOP"));
    // Both blocks spin (the kernel is not order-dependent, so they may run in parallel): the
    // message names whichever the worker that noticed the deadline was running.
    CHECK((r.message.find("block (0,0,0), " + at + " was still running") != std::string::npos ||
           r.message.find("block (1,0,0), " + at + " was still running") != std::string::npos));
  }
}

// Thread block clusters: the cooperative_groups kernels of kernels/cluster.cu (distributed shared
// memory histogram and reduction, a ring over many cluster-barrier phases, compile-time cluster
// shapes) against host references at several worker counts, and hand-written PTX for what nvcc
// does not emit from CUDA C++ (remote mbarrier arrive, st/ld.shared::cluster, getctarank,
// isspacep, cp.async.bulk into another CTA) and for every refusal.
#include "harness.h"

using namespace cusnap::emu::ptx;
using namespace cusnap::emu::ptx::test;

namespace {

LaunchResult launch_on(Program& p, const std::string& kernel, Dim3 grid, Dim3 block,
                       const Args& args, MemoryHost& mem, Dim3 cluster, uint32_t workers,
                       uint32_t dyn_shared = 0, bool cooperative = false) {
  const int k = p.find_kernel(kernel);
  REQUIRE(k >= 0);
  std::vector<uint8_t> buf = args.pack(p.kernels()[k]);
  LaunchConfig cfg;
  cfg.grid = grid;
  cfg.block = block;
  cfg.dynamic_shared_bytes = dyn_shared;
  cfg.params = buf.data();
  cfg.params_size = buf.size();
  cfg.cooperative = cooperative;
  cfg.cluster = cluster;
  Limits limits;
  limits.worker_threads = workers;
  limits.timeout_ms = 60000;
  return p.launch(k, cfg, mem, limits);
}

const uint32_t kWorkers[] = {1, 3, 8};

std::string cluster_kernel(const std::string& params, const std::string& body,
                           const std::string& decls = "") {
  return ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(" + params +
         ")\n{\n  .reg .b32 %r<32>;\n  .reg .b64 %rd<32>;\n  .reg .pred %p<8>;\n"
         "  .shared .align 8 .b64 bar;\n  .shared .align 16 .b8 data[256];\n" +
         decls + body + "\n  ret;\n}\n";
}

}  // namespace

TEST_CASE("a distributed shared memory histogram equals the host's at every cluster size",
          "[ptx][cluster]") {
  auto prog = compile_or_fail(read_ptx("cluster.sm90.ptx"));
  const int clusters = 3, per_cluster = 1500, bins = 64;
  Rng rng(91);
  std::vector<uint32_t> in(static_cast<size_t>(clusters) * per_cluster);
  for (uint32_t& v : in) v = rng.next();
  std::vector<uint32_t> ref(static_cast<size_t>(clusters) * bins, 0);
  for (int c = 0; c < clusters; ++c)
    for (int i = 0; i < per_cluster; ++i) ++ref[c * bins + in[c * per_cluster + i] % bins];
  for (uint32_t nb : {1u, 2u, 4u, 8u}) {
    for (uint32_t workers : kWorkers) {
      HostMemory mem;
      uint32_t* din = mem.upload(in);
      uint32_t* out = mem.zeros<uint32_t>(ref.size());
      INFO("cluster of " << nb << ", " << workers << " workers");
      require_success(launch_on(*prog, "cluster_hist", {clusters * nb}, {128},
                                Args().add(din).add(per_cluster).add(out).add(bins), mem, {nb},
                                workers, bins / nb * 4));
      CHECK(std::vector<uint32_t>(out, out + ref.size()) == ref);
    }
  }
}

TEST_CASE("a cluster reduction through mapped shared memory equals the host's sums",
          "[ptx][cluster]") {
  auto prog = compile_or_fail(read_ptx("cluster.sm90.ptx"));
  const Dim3 grid{4, 4};
  const uint32_t threads = 256;
  Rng rng(7);
  std::vector<int32_t> in(grid.count() * threads);
  for (int32_t& v : in) v = static_cast<int32_t>(rng.next() % 2001) - 1000;
  for (Dim3 cl : {Dim3{2, 2, 1}, Dim3{4, 1, 1}, Dim3{1, 2, 1}, Dim3{4, 4, 1}}) {
    const uint32_t ncx = grid.x / cl.x, ncy = grid.y / cl.y;
    std::vector<int64_t> ref(ncx * ncy, 0);
    for (uint32_t y = 0; y < grid.y; ++y)
      for (uint32_t x = 0; x < grid.x; ++x)
        for (uint32_t t = 0; t < threads; ++t)
          ref[x / cl.x + ncx * (y / cl.y)] += in[(x + grid.x * y) * threads + t];
    for (uint32_t workers : kWorkers) {
      HostMemory mem;
      int32_t* din = mem.upload(in);
      int64_t* out = mem.zeros<int64_t>(ref.size());
      INFO("cluster " << cl.x << "x" << cl.y << ", " << workers << " workers");
      require_success(launch_on(*prog, "cluster_sum", grid, {threads}, Args().add(din).add(out),
                                mem, cl, workers));
      CHECK(std::vector<int64_t>(out, out + ref.size()) == ref);
    }
  }
}

TEST_CASE("many cluster barrier phases order a ring exchange, cooperative or not",
          "[ptx][cluster]") {
  auto prog = compile_or_fail(read_ptx("cluster.sm90.ptx"));
  const uint32_t nb = 4, ctas = 8, threads = 128;
  const int rounds = 9;
  Rng rng(3);
  std::vector<uint32_t> seeds(ctas * threads);
  for (uint32_t& v : seeds) v = rng.next();
  std::vector<uint32_t> ref = seeds;
  for (int r = 0; r < rounds; ++r) {
    const std::vector<uint32_t> before = ref;
    for (uint32_t b = 0; b < ctas; ++b) {
      const uint32_t c = b / nb, rank = b % nb, src = c * nb + (rank + nb - 1) % nb;
      for (uint32_t t = 0; t < threads; ++t)
        ref[b * threads + t] ^=
            before[src * threads + (t + r) % threads] * 2654435761u + static_cast<uint32_t>(r);
    }
  }
  for (bool cooperative : {false, true}) {
    for (uint32_t workers : kWorkers) {
      HostMemory mem;
      uint32_t* din = mem.upload(seeds);
      uint32_t* out = mem.zeros<uint32_t>(seeds.size());
      INFO((cooperative ? "cooperative, " : "") << workers << " workers");
      require_success(launch_on(*prog, "cluster_ring", {ctas}, {threads},
                                Args().add(din).add(out).add(rounds), mem, {nb}, workers, 0,
                                cooperative));
      CHECK(std::vector<uint32_t>(out, out + seeds.size()) == ref);
    }
  }
}

TEST_CASE("__cluster_dims__ fixes the cluster shape and the cluster registers follow it",
          "[ptx][cluster]") {
  auto prog = compile_or_fail(read_ptx("cluster.sm90.ptx"));
  const int k = prog->find_kernel("cluster_ids");
  REQUIRE(k >= 0);
  const KernelDesc& kd = prog->kernels()[k];
  CHECK(kd.explicit_cluster);
  CHECK(
      (kd.reqnctapercluster.x == 2 && kd.reqnctapercluster.y == 2 && kd.reqnctapercluster.z == 1));
  const Dim3 grid{4, 6};
  for (Dim3 cl : {Dim3{1, 1, 1}, Dim3{2, 2, 1}}) {  // none given, or the same shape
    HostMemory mem;
    uint32_t* out = mem.zeros<uint32_t>(grid.count() * 8);
    require_success(launch_on(*prog, "cluster_ids", grid, {64}, Args().add(out), mem, cl, 4));
    for (uint32_t y = 0; y < grid.y; ++y) {
      for (uint32_t x = 0; x < grid.x; ++x) {
        const uint32_t* o = out + (x + grid.x * y) * 8;
        INFO("block " << x << "," << y);
        CHECK(o[0] == x % 2 + 2 * (y % 2));
        CHECK(o[1] == 4);
        CHECK(o[2] == x % 2);
        CHECK(o[3] == y % 2);
        CHECK(o[4] == 2);
        CHECK(o[5] == 2);
        CHECK(o[6] == x / 2);
        CHECK(o[7] == y / 2);
      }
    }
  }
  HostMemory mem;
  uint32_t* out = mem.zeros<uint32_t>(grid.count() * 8);
  LaunchResult r = launch_on(*prog, "cluster_ids", grid, {64}, Args().add(out), mem, {4, 1, 1}, 1);
  CHECK(r.status == LaunchStatus::kInvalidValue);
  CHECK(r.message.find(".reqnctapercluster") != std::string::npos);
  r = launch_on(*prog, "cluster_ids", {3, 6}, {64}, Args().add(out), mem, {1, 1, 1}, 1);
  CHECK(r.status == LaunchStatus::kInvalidValue);
  CHECK(r.message.find("multiples of the cluster dimensions") != std::string::npos);
}

TEST_CASE("cluster launches that cannot be formed are refused", "[ptx][cluster]") {
  auto prog = compile_or_fail(read_ptx("cluster.sm90.ptx"));
  HostMemory mem;
  uint32_t* seeds = mem.zeros<uint32_t>(64 * 128);
  uint32_t* out = mem.zeros<uint32_t>(64 * 128);
  const Args args = Args().add(seeds).add(out).add(1);
  LaunchResult r = launch_on(*prog, "cluster_ring", {8}, {128}, args, mem, {3}, 1);
  CHECK(r.status == LaunchStatus::kInvalidValue);
  CHECK(r.message.find("multiples of the cluster dimensions") != std::string::npos);
  r = launch_on(*prog, "cluster_ring", {64}, {128}, args, mem, {32}, 1);
  CHECK(r.status == LaunchStatus::kInvalidValue);
  CHECK(r.message.find("at most 16 CTAs") != std::string::npos);
  r = launch_on(*prog, "cluster_ring", {8}, {128}, args, mem, {0, 1, 1}, 1);
  CHECK(r.status == LaunchStatus::kInvalidValue);
  // The largest cluster runs.
  require_success(launch_on(*prog, "cluster_ring", {32}, {128}, args, mem, {16}, 2));
}

TEST_CASE("remote mbarrier arrivals, st.shared::cluster, getctarank and isspacep",
          "[ptx][cluster]") {
  // Rank 0 initialises an mbarrier expecting one arrival per other CTA; after a cluster sync
  // every other CTA stores to rank 0's `data` through mapa.shared::cluster and arrives on rank
  // 0's mbarrier remotely; rank 0 waits for the phase and publishes what it received. Each CTA
  // also records what getctarank and isspacep say about mapped addresses.
  const std::string body = R"(
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %cluster_ctarank;
  mov.u32 %r2, %cluster_nctarank;
  mov.u32 %r3, %tid.x;
  or.b32 %r4, %r1, %r3;
  setp.ne.u32 %p1, %r4, 0;
  @%p1 bra SYNC;
  sub.u32 %r5, %r2, 1;
  mbarrier.init.shared::cta.b64 [bar], %r5;
SYNC:
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  setp.ne.u32 %p1, %r3, 0;
  @%p1 bra DONE;
  // Facts about addresses, by every CTA: out[32 + 4 * rank + i].
  mov.u32 %r6, data;
  add.u32 %r7, %r2, -1;
  mapa.shared::cluster.u32 %r8, %r6, %r7;
  getctarank.shared::cluster.u32 %r9, %r8;
  getctarank.shared::cluster.u32 %r10, data;
  mov.u64 %rd2, data;
  cvta.shared.u64 %rd3, %rd2;
  mapa.u64 %rd4, %rd3, %r7;
  getctarank.u64 %r11, %rd4;
  isspacep.shared::cluster %p2, %rd4;
  isspacep.shared %p3, %rd4;
  selp.u32 %r12, 1, 0, %p2;
  selp.u32 %r13, 1, 0, %p3;
  shl.b32 %r12, %r12, 1;
  or.b32 %r12, %r12, %r13;
  cvta.to.shared::cluster.u32 %r14, %rd4;
  setp.eq.u32 %p4, %r14, %r8;
  selp.u32 %r15, 4, 0, %p4;
  or.b32 %r12, %r12, %r15;
  mul.wide.u32 %rd5, %r1, 16;
  add.s64 %rd6, %rd1, %rd5;
  st.global.u32 [%rd6+128], %r9;
  st.global.u32 [%rd6+132], %r10;
  st.global.u32 [%rd6+136], %r11;
  st.global.u32 [%rd6+140], %r12;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra RECEIVER;
  // Senders: data[4 * rank] of rank 0 = rank * 100 + 7, then arrive on rank 0's barrier.
  mapa.shared::cluster.u32 %r16, data, 0;
  shl.b32 %r17, %r1, 2;
  add.u32 %r16, %r16, %r17;
  mad.lo.u32 %r18, %r1, 100, 7;
  st.shared::cluster.u32 [%r16], %r18;
  mapa.shared::cluster.u32 %r19, bar, 0;
  mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r19];
  bra DONE;
RECEIVER:
  mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 %p5, [bar], 0;
  @!%p5 bra RECEIVER;
  mov.u32 %r20, 1;
COPY:
  setp.ge.u32 %p6, %r20, %r2;
  @%p6 bra DONE;
  shl.b32 %r21, %r20, 2;
  ld.shared::cluster.u32 %r22, [data+%r21];
  mul.wide.u32 %rd7, %r20, 4;
  add.s64 %rd8, %rd1, %rd7;
  st.global.u32 [%rd8], %r22;
  add.u32 %r20, %r20, 1;
  bra COPY;
DONE:)";
  // `[data+%r21]` is not PTX syntax: the address is formed first.
  std::string text = cluster_kernel(".param .u64 out", body);
  const std::string bad = "  ld.shared::cluster.u32 %r22, [data+%r21];";
  text.replace(text.find(bad), bad.size(),
               "  add.u32 %r23, %r6, %r21;\n  ld.shared::cluster.u32 %r22, [%r23];");
  auto prog = compile_or_fail(text);
  for (uint32_t nb : {2u, 4u, 8u}) {
    for (uint32_t workers : kWorkers) {
      HostMemory mem;
      uint32_t* out = mem.zeros<uint32_t>(32 + 4 * 16);
      INFO("cluster of " << nb << ", " << workers << " workers");
      require_success(launch_on(*prog, "k", {2 * nb}, {64}, Args().add(out), mem, {nb}, workers));
      for (uint32_t r = 1; r < nb; ++r) CHECK(out[r] == r * 100 + 7);
      for (uint32_t r = 0; r < nb; ++r) {
        const uint32_t* f = out + 32 + 4 * r;
        INFO("rank " << r);
        CHECK(f[0] == nb - 1);  // getctarank of a mapped shared::cluster address
        CHECK(f[1] == r);       // of this CTA's own variable
        CHECK(f[2] == nb - 1);  // of a mapped generic address
        // isspacep.shared::cluster: yes; .shared (this CTA's window): only for the last rank;
        // cvta.to.shared::cluster gives mapa.shared::cluster's address except for the own rank
        // (a shared::cta address is a shared::cluster address of the executing CTA).
        CHECK(f[3] == (r == nb - 1 ? 3u : 6u));
      }
    }
  }
}

TEST_CASE("cp.async.bulk into another CTA's shared memory completes on its mbarrier",
          "[ptx][cluster]") {
  // Rank 0 arms its mbarrier for 128 bytes and waits; rank 1 fills its own `data` and bulk
  // copies it into rank 0's `data`, completing on rank 0's barrier.
  const std::string body = R"(
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %cluster_ctarank;
  mov.u32 %r3, %tid.x;
  setp.ne.u32 %p1, %r3, 0;
  @%p1 bra SYNC;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra SYNC;
  mbarrier.init.shared::cta.b64 [bar], 1;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd2, [bar], 128;
SYNC:
  barrier.cluster.arrive;
  barrier.cluster.wait;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra RECEIVER;
  setp.ge.u32 %p1, %r3, 32;
  @%p1 bra DONE;
  shl.b32 %r4, %r3, 2;
  mad.lo.u32 %r5, %r3, %r3, 11;
  mov.u32 %r6, data;
  add.u32 %r7, %r6, %r4;
  st.shared.u32 [%r7], %r5;
  bar.sync 1, 32;
  setp.ne.u32 %p1, %r3, 0;
  @%p1 bra DONE;
  fence.proxy.async.shared::cta;
  mapa.shared::cluster.u32 %r8, data, 0;
  mapa.shared::cluster.u32 %r9, bar, 0;
  cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%r8], [data], 128, [%r9];
  bra DONE;
RECEIVER:
  setp.ne.u32 %p1, %r3, 0;
  @%p1 bra DONE;
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p5, [bar], 0;
  @!%p5 bra WAIT;
  mov.u32 %r10, 0;
COPY:
  setp.ge.u32 %p6, %r10, 32;
  @%p6 bra DONE;
  shl.b32 %r11, %r10, 2;
  mov.u32 %r12, data;
  add.u32 %r12, %r12, %r11;
  ld.shared.u32 %r13, [%r12];
  mul.wide.u32 %rd3, %r10, 4;
  add.s64 %rd4, %rd1, %rd3;
  st.global.u32 [%rd4], %r13;
  add.u32 %r10, %r10, 1;
  bra COPY;
DONE:)";
  auto prog = compile_or_fail(cluster_kernel(".param .u64 out", body));
  for (uint32_t workers : kWorkers) {
    HostMemory mem;
    uint32_t* out = mem.zeros<uint32_t>(32);
    require_success(launch_on(*prog, "k", {4}, {64}, Args().add(out), mem, {2}, workers));
    for (uint32_t i = 0; i < 32; ++i) CHECK(out[i] == i * i + 11);
  }
}

TEST_CASE("a multicast bulk copy lands in every CTA of its ctaMask", "[ptx][cluster]") {
  // Every CTA arms its own mbarrier for 64 bytes; after a cluster sync rank 0 multicasts 64
  // bytes of global memory to ranks 0, 2 and 3 (ctaMask 0b1101). Those wait for their phase;
  // rank 1's `data` stays zero. Each CTA publishes its 16 words: out[16 * rank + i].
  const std::string body = R"(
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, %cluster_ctarank;
  mov.u32 %r3, %tid.x;
  setp.ne.u32 %p1, %r3, 0;
  @%p1 bra DONE;
  mbarrier.init.shared::cta.b64 [bar], 1;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd3, [bar], 64;
  barrier.cluster.arrive;
  barrier.cluster.wait;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra WAIT;
  mov.u16 %rs1, 13;
  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [data], [%rd1], 64, [bar], %rs1;
WAIT:
  setp.eq.u32 %p1, %r1, 1;
  @%p1 bra PUBLISH;
SPIN:
  mbarrier.try_wait.parity.shared::cta.b64 %p5, [bar], 0;
  @!%p5 bra SPIN;
PUBLISH:
  mov.u32 %r10, 0;
COPY:
  setp.ge.u32 %p6, %r10, 16;
  @%p6 bra DONE;
  shl.b32 %r11, %r10, 2;
  mov.u32 %r12, data;
  add.u32 %r12, %r12, %r11;
  ld.shared.u32 %r13, [%r12];
  mad.lo.u32 %r14, %r1, 16, %r10;
  mul.wide.u32 %rd4, %r14, 4;
  add.s64 %rd5, %rd2, %rd4;
  st.global.u32 [%rd5], %r13;
  add.u32 %r10, %r10, 1;
  bra COPY;
DONE:)";
  auto prog = compile_or_fail(
      cluster_kernel(".param .u64 in, .param .u64 out", body, "  .reg .b16 %rs<4>;\n"));
  std::vector<uint32_t> in(16);
  for (uint32_t i = 0; i < 16; ++i) in[i] = 0x1000 + i * 37;
  for (uint32_t workers : kWorkers) {
    HostMemory mem;
    uint32_t* din = mem.upload(in);
    uint32_t* out = mem.zeros<uint32_t>(64);
    require_success(launch_on(*prog, "k", {4}, {32}, Args().add(din).add(out), mem, {4}, workers));
    for (uint32_t r = 0; r < 4; ++r)
      for (uint32_t i = 0; i < 16; ++i) CHECK(out[16 * r + i] == (r == 1 ? 0 : in[i]));
  }
}

TEST_CASE("barrier.cluster without a cluster launch is a barrier of the CTA", "[ptx][cluster]") {
  // Warp 1 stores, both warps pass the cluster barrier, warp 0 reads warp 1's values.
  const std::string body = R"(
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  shl.b32 %r2, %r1, 2;
  mov.u32 %r3, data;
  add.u32 %r4, %r3, %r2;
  setp.lt.u32 %p1, %r1, 32;
  @%p1 bra ARRIVE;
  mul.lo.u32 %r5, %r1, 3;
  st.shared.u32 [%r4+-128], %r5;
ARRIVE:
  barrier.cluster.arrive;
  barrier.cluster.wait;
  @!%p1 bra DONE;
  ld.shared.u32 %r6, [%r4];
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r6;
  mov.u32 %r7, %cluster_nctarank;
  mov.u32 %r8, %is_explicit_cluster;
  st.global.u32 [%rd1+128], %r7;
  st.global.u32 [%rd1+132], %r8;
DONE:)";
  auto prog = compile_or_fail(cluster_kernel(".param .u64 out", body));
  HostMemory mem;
  uint32_t* out = mem.zeros<uint32_t>(34);
  require_success(launch_on(*prog, "k", {3}, {64}, Args().add(out), mem, {1}, 2));
  for (uint32_t t = 0; t < 32; ++t) CHECK(out[t] == (t + 32) * 3);
  CHECK(out[32] == 1);
  CHECK(out[33] == 0);
}

TEST_CASE("cluster misuse fails the launch naming what and where", "[ptx][cluster]") {
  HostMemory mem;
  uint32_t* out = mem.zeros<uint32_t>(64);
  auto expect = [&](const std::string& body, LaunchStatus status, const std::string& needle,
                    Dim3 cluster = {2}) {
    auto prog = compile_or_fail(cluster_kernel(".param .u64 out", body));
    LaunchResult r = launch_on(*prog, "k", {4}, {32}, Args().add(out), mem, cluster, 2);
    INFO(r.message);
    CHECK(r.status == status);
    CHECK(r.message.find(needle) != std::string::npos);
    CHECK(r.message.find("kernel k") != std::string::npos);
  };
  expect("  mov.u32 %r1, 5;\n  mapa.shared::cluster.u32 %r2, data, %r1;",
         LaunchStatus::kIllegalInstruction, "mapa: CTA rank 5 is not in the cluster of 2 CTAs");
  expect("  mov.u32 %r1, 1;\n  mov.u64 %rd1, data;\n  mapa.u64 %rd2, %rd1, %r1;",
         LaunchStatus::kIllegalAddress, "is not in the shared memory of a CTA of the cluster");
  expect("  barrier.cluster.wait;", LaunchStatus::kIllegalInstruction,
         "barrier.cluster.wait by a thread that has not executed barrier.cluster.arrive");
  expect("  barrier.cluster.arrive;\n  barrier.cluster.arrive;", LaunchStatus::kIllegalInstruction,
         "barrier.cluster.arrive by a thread that arrived");
  expect("  mov.u32 %r1, 0x3000010;\n  ld.shared::cluster.u32 %r2, [%r1];",
         LaunchStatus::kIllegalAddress, "names CTA rank 2 of a cluster of 2 CTAs");
  expect("  mov.u32 %r1, 0x2000400;\n  st.shared::cluster.u32 [%r1], %r1;",
         LaunchStatus::kIllegalAddress, "outside the");
  // Rank 1 leaves at once; rank 0 spins past its first slice, then stores into rank 1's shared
  // memory: distributed shared memory of an exited CTA.
  expect(R"(
  mov.u32 %r1, %cluster_ctarank;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra DONE;
  mov.u32 %r2, 0;
SPIN:
  add.u32 %r2, %r2, 1;
  setp.lt.u32 %p2, %r2, 5000;
  @%p2 bra SPIN;
  mov.u64 %rd1, data;
  cvta.shared.u64 %rd2, %rd1;
  mov.u32 %r3, 1;
  mapa.u64 %rd3, %rd2, %r3;
  st.u32 [%rd3], %r2;
DONE:)",
         LaunchStatus::kIllegalAddress, "CTA rank 1 of the cluster has exited");
  // Half of rank 1's threads wait at a CTA barrier for all of them, the other half at the
  // cluster barrier: the whole cluster waits forever, which is reported instead of hanging.
  expect(R"(
  mov.u32 %r1, %cluster_ctarank;
  mov.u32 %r2, %tid.x;
  setp.ne.u32 %p1, %r1, 1;
  setp.ge.or.u32 %p1, %r2, 16, %p1;
  @%p1 bra ARRIVE;
  bar.sync 1;
ARRIVE:
  barrier.cluster.arrive;
  barrier.cluster.wait;
DONE:)",
         LaunchStatus::kHung, "every other thread of its cluster");
  // An mbarrier nobody arrives on, waited for across a cluster.
  expect(R"(
  mbarrier.init.shared::cta.b64 [bar], 1;
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [bar], 0;
  @!%p1 bra WAIT;
DONE:)",
         LaunchStatus::kHung, "can never complete");
}

TEST_CASE("cluster instructions lower with their ISA forms or are refused", "[ptx][cluster]") {
  auto refused = [](const std::string& instr, const std::string& needle) {
    CompileResult r = compile(cluster_kernel(".param .u64 out", "  " + instr));
    INFO(instr << " -> " << r.error);
    CHECK(r.program == nullptr);
    CHECK(r.error.find(needle) != std::string::npos);
  };
  refused("mapa.u32 %r1, %r2, %r3;", "32-bit generic addresses");
  refused("getctarank.u32 %r1, %r2;", "32-bit generic addresses");
  refused("barrier.cluster.arrive %r1;", "barrier.cluster takes no operands");
  refused("mbarrier.arrive.shared::cluster.b64 %rd1, [%r1];", "has no state");
  refused(
      "cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%r1], [%rd1, {%r2}], [%r3], %r4;",
      "multicast");
  refused(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
      "[%r1], [%rd1], 16, [%r2];",
      "ctaMask");
}

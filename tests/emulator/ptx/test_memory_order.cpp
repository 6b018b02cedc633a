// ld/st memory-ordering qualifiers (.relaxed/.acquire/.release/.volatile with scopes): kept by
// the lowering, executed with single-thread semantics identical to weak accesses, and usable for
// cross-block message passing in a cooperative launch (blocks run on different host threads).
#include "harness.h"
#include "ir.h"

using namespace cusnap::emu::ptx;
using namespace cusnap::emu::ptx::test;

namespace {

const char* kOrderedPtx = R"(
.version 9.0
.target sm_90
.address_size 64

.visible .entry ordered(.param .u64 in_ptr, .param .u64 out_ptr)
{
  .reg .b32 %r<12>;
  .reg .b64 %rd<12>;
  .reg .b16 %h<3>;

  ld.param.u64 %rd1, [in_ptr];
  ld.param.u64 %rd2, [out_ptr];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 16;
  add.s64 %rd4, %rd1, %rd3;          // in + 16 * tid: {u32 a, s32 b, u64 c}
  add.s64 %rd5, %rd2, %rd3;          // out + 16 * tid
  ld.acquire.gpu.global.u32 %r2, [%rd4];
  ld.volatile.global.s32 %r3, [%rd4+4];
  ld.relaxed.gpu.u64 %rd6, [%rd4+8];
  ld.relaxed.sys.global.v2.u32 {%r4, %r5}, [%rd4];
  ld.acquire.cta.global.s16 %r6, [%rd4+4];          // sign-extended low half of b
  ld.weak.global.u8 %r7, [%rd4];
  add.u32 %r8, %r2, %r3;
  xor.b32 %r9, %r4, %r5;
  add.u32 %r9, %r9, %r6;
  add.u32 %r9, %r9, %r7;
  add.u64 %rd7, %rd6, 12345;
  st.release.gpu.global.u32 [%rd5], %r8;
  st.relaxed.sys.u32 [%rd5+4], %r9;
  st.volatile.global.u64 [%rd5+8], %rd7;
  // st.release of a narrow value over part of the first word, then read back relaxed
  cvt.u16.u32 %h1, %r1;
  st.release.cta.global.u8 [%rd5+3], %h1;
  ld.relaxed.cta.global.u32 %r10, [%rd5];
  st.relaxed.gpu.global.v2.u32 [%rd5], {%r10, %r9};
  ret;
}
)";

// Message passing between blocks: block 0 writes `data` with weak stores, then publishes a flag
// with st.release; every other block spins on ld.acquire of the flag and then reads the data with
// weak loads. Cooperative launches keep all blocks resident, so the spin cannot starve block 0.
const char* kMessagePtx = R"(
.version 9.0
.target sm_90
.address_size 64

.visible .entry message(.param .u64 data_ptr, .param .u64 flag_ptr, .param .u64 out_ptr, .param .u32 n)
{
  .reg .b32 %r<12>;
  .reg .b64 %rd<12>;
  .reg .pred %p<4>;

  ld.param.u64 %rd1, [data_ptr];
  ld.param.u64 %rd2, [flag_ptr];
  ld.param.u64 %rd3, [out_ptr];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %ctaid.x;
  mul.wide.u32 %rd4, %r2, 4;
  add.s64 %rd5, %rd1, %rd4;
  setp.ne.u32 %p1, %r3, 0;
  @%p1 bra CONSUME;
  // producer: data[tid] = tid * 7 + n, then the block's threads meet and thread 0 publishes
  mad.lo.u32 %r4, %r2, 7, %r1;
  st.global.u32 [%rd5], %r4;
  bar.sync 0;
  setp.ne.u32 %p2, %r2, 0;
  @%p2 bra DONE;
  st.release.gpu.global.u32 [%rd2], 1;
  bra.uni DONE;
CONSUME:
  ld.acquire.gpu.global.u32 %r5, [%rd2];
  setp.eq.u32 %p3, %r5, 0;
  @%p3 bra CONSUME;
  ld.global.u32 %r6, [%rd5];
  mul.lo.u32 %r7, %r3, 1000;
  add.u32 %r6, %r6, %r7;
  mov.u32 %r8, %ntid.x;
  mad.lo.u32 %r9, %r3, %r8, %r2;
  mul.wide.u32 %rd6, %r9, 4;
  add.s64 %rd7, %rd3, %rd6;
  st.global.u32 [%rd7], %r6;
DONE:
  ret;
}
)";

// A MemoryHost whose allocations are all made before the launch and which answers `accessible`
// without a lock. HostMemory's mutex would make every global access a synchronisation point
// between the worker threads and hide from ThreadSanitizer a missing acquire/release pairing.
class FixedMemory final : public MemoryHost {
 public:
  explicit FixedMemory(std::vector<size_t> sizes) {
    for (size_t n : sizes) {
      const size_t rounded = (n + 255) / 256 * 256;
      void* p = std::aligned_alloc(256, rounded);
      std::memset(p, 0, rounded);
      blocks_.push_back({reinterpret_cast<uint64_t>(p), n});
    }
  }
  ~FixedMemory() override {
    for (const Block& b : blocks_) std::free(reinterpret_cast<void*>(b.base));
  }
  template <typename T>
  T* at(size_t i) const {
    return reinterpret_cast<T*>(blocks_[i].base);
  }
  bool accessible(uint64_t address, uint64_t size, bool) const override {
    for (const Block& b : blocks_)
      if (address >= b.base && address + size <= b.base + b.size) return true;
    return false;
  }

 private:
  struct Block {
    uint64_t base;
    uint64_t size;
  };
  std::vector<Block> blocks_;
};

std::vector<const Instr*> memory_instrs(const Module& m) {
  std::vector<const Instr*> out;
  for (const Instr& in : m.code)
    if (in.op == Op::kLd || in.op == Op::kSt) out.push_back(&in);
  return out;
}

}  // namespace

TEST_CASE("ld/st ordering qualifiers are kept by the lowering", "[ptx][memory_order]") {
  Module m;
  std::string error;
  REQUIRE(parse_module(kOrderedPtx, m, error));
  const std::vector<const Instr*> v = memory_instrs(m);
  // ld.param x2, then the body's loads and stores in order.
  REQUIRE(v.size() == 14);
  struct Expect {
    Op op;
    MemOrder order;
    MemScope scope;
  };
  const Expect expect[] = {
      {Op::kLd, MemOrder::kWeak, MemScope::kNone},
      {Op::kLd, MemOrder::kWeak, MemScope::kNone},
      {Op::kLd, MemOrder::kAcquire, MemScope::kGpu},
      {Op::kLd, MemOrder::kVolatile, MemScope::kNone},
      {Op::kLd, MemOrder::kRelaxed, MemScope::kGpu},
      {Op::kLd, MemOrder::kRelaxed, MemScope::kSys},
      {Op::kLd, MemOrder::kAcquire, MemScope::kCta},
      {Op::kLd, MemOrder::kWeak, MemScope::kNone},
      {Op::kSt, MemOrder::kRelease, MemScope::kGpu},
      {Op::kSt, MemOrder::kRelaxed, MemScope::kSys},
      {Op::kSt, MemOrder::kVolatile, MemScope::kNone},
      {Op::kSt, MemOrder::kRelease, MemScope::kCta},
      {Op::kLd, MemOrder::kRelaxed, MemScope::kCta},
      {Op::kSt, MemOrder::kRelaxed, MemScope::kGpu},
  };
  for (size_t i = 0; i < std::size(expect); ++i) {
    INFO("memory instruction " << i << " at PTX line " << v[i]->line);
    CHECK(v[i]->op == expect[i].op);
    CHECK(v[i]->order == expect[i].order);
    CHECK(v[i]->scope == expect[i].scope);
  }
  // The vector forms keep their width.
  CHECK(v[5]->vec == 2);
  CHECK(v[13]->vec == 2);
}

TEST_CASE("ordered loads and stores compute like weak ones", "[ptx][memory_order]") {
  auto prog = compile_or_fail(kOrderedPtx);
  HostMemory mem;
  const int threads = 45;  // a partial second warp
  Rng rng(2024);
  struct Rec {
    uint32_t a;
    int32_t b;
    uint64_t c;
  };
  static_assert(sizeof(Rec) == 16);
  std::vector<Rec> in(threads);
  for (Rec& r : in) {
    r.a = rng.next();
    r.b = static_cast<int32_t>(rng.next());
    r.c = (uint64_t{rng.next()} << 32) | rng.next();
  }
  Rec* din = mem.upload(in);
  uint8_t* out = static_cast<uint8_t*>(mem.alloc(16 * threads));
  require_success(run(*prog, "ordered", {1}, {threads}, Args().add(din).add(out), mem));
  for (int t = 0; t < threads; ++t) {
    INFO("thread " << t);
    const Rec& r = in[t];
    const uint32_t sum = r.a + static_cast<uint32_t>(r.b);
    const uint32_t s16 =
        static_cast<uint32_t>(static_cast<int32_t>(static_cast<int16_t>(r.b & 0xffff)));
    const uint32_t mixed = (r.a ^ static_cast<uint32_t>(r.b)) + s16 + (r.a & 0xff);
    // byte 3 of the first word was overwritten with tid's low byte before the read-back
    const uint32_t first = (sum & 0x00ffffffu) | (static_cast<uint32_t>(t & 0xff) << 24);
    uint32_t w[2];
    uint64_t c;
    std::memcpy(w, out + 16 * t, 8);
    std::memcpy(&c, out + 16 * t + 8, 8);
    CHECK(w[0] == first);
    CHECK(w[1] == mixed);
    CHECK(c == r.c + 12345);
  }
}

TEST_CASE("invalid ordering qualifiers are rejected at load", "[ptx][memory_order]") {
  const char* bodies[] = {
      "ld.release.gpu.global.u32 %r1, [%rd1];",  "st.acquire.gpu.global.u32 [%rd1], %r1;",
      "ld.gpu.global.u32 %r1, [%rd1];",          "ld.relaxed.acquire.gpu.global.u32 %r1, [%rd1];",
      "st.volatile.sys.global.u32 [%rd1], %r1;",
  };
  for (const char* body : bodies) {
    INFO(body);
    std::string text =
        std::string(
            ".version 9.0\n.target sm_90\n.address_size 64\n"
            ".visible .entry k(.param .u64 p)\n{\n.reg .b32 %r<2>;\n.reg .b64 %rd<2>;\n"
            "ld.param.u64 %rd1, [p];\nmov.u32 %r1, 1;\n") +
        body + "\nret;\n}\n";
    CompileResult r = compile(text);
    CHECK(r.program == nullptr);
    CHECK(r.error.find("line 10") != std::string::npos);
  }
}

TEST_CASE("st.release / ld.acquire pass a message between blocks of a cooperative launch",
          "[ptx][memory_order]") {
  auto prog = compile_or_fail(kMessagePtx);
  const uint32_t threads = 64, blocks = 6, n = 31;
  FixedMemory mem({threads * 4, 4, threads * blocks * 4});
  uint32_t* data = mem.at<uint32_t>(0);
  uint32_t* flag = mem.at<uint32_t>(1);
  uint32_t* out = mem.at<uint32_t>(2);
  // The ordered load makes the kernel order-dependent, which the scheduler would run on one
  // worker; run it on several host threads anyway, which is what this test is about.
  const int k = prog->find_kernel("message");
  REQUIRE(k >= 0);
  CHECK(prog->kernels()[k].serial_blocks);
  std::vector<uint8_t> params = Args().add(data).add(flag).add(out).add(n).pack(prog->kernels()[k]);
  LaunchConfig cfg;
  cfg.grid = {blocks};
  cfg.block = {threads};
  cfg.params = params.data();
  cfg.params_size = params.size();
  cfg.cooperative = true;
  Limits limits;
  limits.worker_threads = 3;
  limits.serialize_order_dependent = false;
  require_success(prog->launch(k, cfg, mem, limits));
  CHECK(*flag == 1);
  for (uint32_t b = 1; b < blocks; ++b)
    for (uint32_t t = 0; t < threads; ++t) {
      INFO("block " << b << " thread " << t);
      CHECK(out[b * threads + t] == t * 7 + n + b * 1000);
    }
}

// Function pointers, virtual calls, cp.async, redux/match, intra-warp forward progress,
// local arrays, and hand-written elect.sync.
#include "harness.h"

using namespace cusnap::emu::ptx;
using namespace cusnap::emu::ptx::test;

namespace {
const char* kAdvanced[] = {"advanced.sm80.ptx", "advanced.sm90.ptx"};
}

TEST_CASE("function pointers and virtual calls", "[ptx][kernels]") {
  for (const char* file : kAdvanced) {
    INFO(file);
    auto prog = compile_or_fail(read_ptx(file));
    HostMemory mem;
    bind_variables(*prog, mem);
    int* out = mem.zeros<int>(128);
    const int sel = 1;
    require_success(run(*prog, "indirect_calls", {1}, {64}, Args().add(out).add(sel), mem));
    for (int t = 0; t < 64; ++t) {
      REQUIRE(out[t] == (((t + sel) & 1) ? t * t * t : t * t));
      REQUIRE(out[64 + t] == ((t & 1) ? (t + 1) * (t + 1) : t + 1));
    }
  }
}

TEST_CASE("cp.async copies into shared memory", "[ptx][kernels]") {
  for (const char* file : kAdvanced) {
    auto prog = compile_or_fail(read_ptx(file));
    HostMemory mem;
    bind_variables(*prog, mem);
    std::vector<float> in(128);
    for (int i = 0; i < 128; ++i) in[i] = static_cast<float>(i) * 0.5f;
    float* din = mem.upload(in);
    float* out = mem.zeros<float>(128);
    require_success(run(*prog, "async_copy", {1}, {128}, Args().add(din).add(out).add(128), mem));
    for (int t = 0; t < 128; ++t) REQUIRE(out[t] == in[127 - t] * 2.0f);
  }
}

TEST_CASE("redux.sync and match.any.sync", "[ptx][kernels]") {
  for (const char* file : kAdvanced) {
    auto prog = compile_or_fail(read_ptx(file));
    HostMemory mem;
    bind_variables(*prog, mem);
    Rng rng(31);
    std::vector<unsigned> in(64);
    for (unsigned& v : in) v = rng.next() % 100000;
    unsigned* din = mem.upload(in);
    unsigned* out = mem.zeros<unsigned>(64 * 4);
    require_success(run(*prog, "warp_reduce_ops", {1}, {64}, Args().add(din).add(out), mem));
    for (int w = 0; w < 2; ++w) {
      unsigned sum = 0, mx = 0, x = 0;
      for (int l = 0; l < 32; ++l) {
        unsigned v = in[w * 32 + l];
        sum += v;
        mx = std::max(mx, v);
        x ^= v;
      }
      for (int l = 0; l < 32; ++l) {
        int t = w * 32 + l;
        REQUIRE(out[t * 4 + 0] == sum);
        REQUIRE(out[t * 4 + 1] == mx);
        REQUIRE(out[t * 4 + 2] == x);
        unsigned same = 0;
        for (int k = 0; k < 32; ++k)
          if ((in[w * 32 + k] & 3) == (in[t] & 3)) same |= 1u << k;
        REQUIRE(out[t * 4 + 3] == same);
      }
    }
  }
}

TEST_CASE("a lane spinning on a flag set by another lane of its warp makes progress",
          "[ptx][kernels]") {
  auto prog = compile_or_fail(read_ptx("advanced.sm80.ptx"));
  HostMemory mem;
  bind_variables(*prog, mem);
  int* flag = mem.zeros<int>(1);
  int* out = mem.zeros<int>(2);
  require_success(run(*prog, "intra_warp_flag", {1}, {32}, Args().add(flag).add(out), mem));
  REQUIRE(out[1] == 5);
  REQUIRE(out[0] == 47);
}

TEST_CASE("local arrays with dynamic indexing and __syncthreads_or", "[ptx][kernels]") {
  auto prog = compile_or_fail(read_ptx("advanced.sm80.ptx"));
  HostMemory mem;
  bind_variables(*prog, mem);
  const int n = 100;
  Rng rng(32);
  std::vector<int> in(n);
  for (int& v : in) v = static_cast<int>(rng.next() % 5000);
  int* din = mem.upload(in);
  int* out = mem.zeros<int>(n);
  require_success(run(*prog, "local_array", {2}, {64}, Args().add(din).add(out).add(n), mem));
  for (int b = 0; b < 2; ++b) {
    bool any3 = false;
    for (int t = b * 64; t < std::min(n, b * 64 + 64); ++t) any3 |= (in[t] & 15) == 3;
    for (int t = b * 64; t < std::min(n, b * 64 + 64); ++t) {
      int buf[24];
      for (int i = 0; i < 24; ++i) buf[i] = in[t] * i;
      int s = 0;
      for (int i = in[t] & 15; i < 24; i += 3) s += buf[i] ^ buf[(i * 7) % 24];
      REQUIRE(out[t] == s + (any3 ? 1000000 : 0));
    }
  }
}

TEST_CASE("hand-written elect.sync", "[ptx][handwritten]") {
  const char* text = R"(
.version 9.0
.target sm_90
.address_size 64
.visible .entry elect_k(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  .reg .pred %p<3>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  setp.ge.u32 %p1, %r1, 5;
  @!%p1 bra DONE;
  elect.sync %r2|%p2, 0xffffffe0;
  selp.u32 %r3, 1000, 0, %p2;
  add.u32 %r3, %r3, %r2;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r3;
DONE:
  ret;
}
)";
  auto prog = compile_or_fail(text);
  HostMemory mem;
  uint32_t* out = mem.zeros<uint32_t>(32);
  require_success(run(*prog, "elect_k", {1}, {32}, Args().add(out), mem));
  for (uint32_t t = 0; t < 32; ++t) REQUIRE(out[t] == (t < 5 ? 0u : (t == 5 ? 1005u : 5u)));
}

TEST_CASE("CUB block reduce, block scan, warp scan and block radix sort", "[ptx][kernels]") {
  auto prog = compile_or_fail(read_ptx("cub_blocks.sm75.ptx"));
  HostMemory mem;
  bind_variables(*prog, mem);
  const int blocks = 3, threads = 128, items = 4, n = blocks * threads * items;
  Rng rng(41);
  std::vector<int> in(n);
  for (int& v : in) v = static_cast<int>(rng.next() % 20001) - 10000;
  int* din = mem.upload(in);
  int* sums = mem.zeros<int>(blocks);
  int* scans = mem.zeros<int>(n);
  int* sorted = mem.zeros<int>(n);
  int* wscans = mem.zeros<int>(blocks * threads);
  require_success(run(*prog, "cub_block_ops", {blocks}, {threads},
                      Args().add(din).add(sums).add(scans).add(sorted).add(wscans), mem));
  for (int b = 0; b < blocks; ++b) {
    const int base = b * threads * items;
    int total = 0;
    for (int i = 0; i < threads * items; ++i) {
      REQUIRE(scans[base + i] == total);
      total += in[base + i];
    }
    REQUIRE(sums[b] == total);
    std::vector<int> e(in.begin() + base, in.begin() + base + threads * items);
    std::sort(e.begin(), e.end());
    for (int i = 0; i < threads * items; ++i) REQUIRE(sorted[base + i] == e[i]);
    for (int w = 0; w < threads / 32; ++w) {
      int acc = 0;
      for (int l = 0; l < 32; ++l) {
        int t = w * 32 + l;
        acc += in[base + t * items];
        REQUIRE(wscans[b * threads + t] == acc);
      }
    }
  }
}

// Vector atomics (atom.global.add.v2.f32 / .v4.f32 from nvcc for sm_90, scalar atomics for
// sm_80): each element is its own atomic (the PTX ISA's rule), so per slot and component the
// final sum is exact (the addends are small multiples of powers of two) and the old values each
// thread got are the partial sums of one order of the same addends: sorted, each is the previous
// one plus the addend of the thread that got the previous one.
TEST_CASE("vector atomics add each element atomically", "[ptx][kernels]") {
  for (const char* file : kAdvanced) {
    INFO(file);
    auto prog = compile_or_fail(read_ptx(file));
    HostMemory mem;
    bind_variables(*prog, mem);
    const int threads = 256, slots = 5;
    float* sum2 = mem.zeros<float>(2 * slots);
    float* sum4 = mem.zeros<float>(4 * slots);
    float* old2 = mem.zeros<float>(2 * threads);
    float* old4 = mem.zeros<float>(4 * threads);
    float* red4 = mem.zeros<float>(4 * slots);
    require_success(run(*prog, "vector_atomics", {4}, {threads / 4},
                        Args().add(sum2).add(sum4).add(old2).add(old4).add(red4).add(slots), mem));
    auto addend2 = [](int t, int c) { return (t + 1) * (c == 0 ? 0.5f : 0.25f); };
    auto addend4 = [](int t, int c) {
      const float scale[4] = {1.0f, 2.0f, 0.125f, 4.0f};
      return (t + 1) * scale[c];
    };
    auto check = [&](int width, const float* sums, const float* olds, auto addend) {
      for (int s = 0; s < slots; ++s) {
        for (int c = 0; c < width; ++c) {
          std::vector<std::pair<float, int>> got;  // (old value, thread)
          float total = 0;
          for (int t = s; t < threads; t += slots) {
            got.emplace_back(olds[t * width + c], t);
            total += addend(t, c);
          }
          INFO("slot " << s << " component " << c);
          REQUIRE(sums[s * width + c] == total);
          std::sort(got.begin(), got.end());
          REQUIRE(got.front().first == 0.0f);
          for (size_t k = 1; k < got.size(); ++k)
            REQUIRE(got[k].first == got[k - 1].first + addend(got[k - 1].second, c));
          REQUIRE(got.back().first + addend(got.back().second, c) == total);
        }
      }
    };
    check(2, sum2, old2, addend2);
    check(4, sum4, old4, addend4);
    for (int i = 0; i < 4 * slots; ++i) REQUIRE(red4[i] == sum4[i]);
  }
}

// alloca from nvcc (a run-time-sized buffer per thread, and a callee's buffer freed when it
// returns: 50 rounds of 400 bytes would overflow a 1 KiB stack otherwise), against a host
// reference; an alloca larger than the stack is a stack overflow.
TEST_CASE("alloca buffers live until their function returns", "[ptx][kernels]") {
  for (const char* file : kAdvanced) {
    INFO(file);
    auto prog = compile_or_fail(read_ptx(file));
    HostMemory mem;
    bind_variables(*prog, mem);
    const int threads = 64, n = 100, rounds = 50;
    int* out = mem.zeros<int>(threads);
    require_success(
        run(*prog, "alloca_sums", {1}, {threads}, Args().add(out).add(n).add(rounds), mem));
    for (int t = 0; t < threads; ++t) {
      long long total = 0;
      for (int r = 0; r < rounds; ++r)
        for (int i = 0; i < n; ++i) total += static_cast<long long>(n - 1 - i) * (t + r) * (i + 1);
      for (int i = 0; i < n; ++i) total += t + i;
      INFO("thread " << t);
      REQUIRE(out[t] == static_cast<int>(total));
    }
    LaunchResult big = run(*prog, "alloca_sums", {1}, {32}, Args().add(out).add(4096).add(1), mem);
    CHECK(big.status == LaunchStatus::kIllegalAddress);
    CHECK(big.message.find("stack overflow: alloca of 16384 bytes") != std::string::npos);
  }
}

// Kernels that exercise shared memory, barriers, warp collectives and atomics.
#include <algorithm>
#include <cmath>

#include "harness.h"

using namespace cusnap::emu::ptx;
using namespace cusnap::emu::ptx::test;

TEST_CASE("shared-memory tree reduction", "[ptx][kernels]") {
  for (const char* file : {"reduce.sm75.ptx", "reduce.sm80.ptx"}) {
    auto prog = compile_or_fail(read_ptx(file));
    int k = prog->find_kernel("shared_reduce");
    REQUIRE(k >= 0);
    CHECK(prog->kernels()[k].static_shared_bytes == 256 * 4);
    HostMemory mem;
    const int n = 3000, threads = 256, blocks = (n + threads * 2 - 1) / (threads * 2);
    Rng rng(1);
    std::vector<float> in(n);
    for (float& f : in)
      f = static_cast<float>(rng.next() % 100);  // integers: order-independent sums
    float* din = mem.upload(in);
    float* out = mem.zeros<float>(blocks);
    require_success(run(*prog, "shared_reduce", {static_cast<uint32_t>(blocks)}, {threads},
                        Args().add(din).add(out).add(n), mem));
    for (int b = 0; b < blocks; ++b) {
      float e = 0;
      for (int i = b * threads * 2; i < std::min(n, (b + 1) * threads * 2); ++i) e += in[i];
      REQUIRE(out[b] == e);
    }
  }
}

TEST_CASE("warp-shuffle reduction, ballot and any", "[ptx][kernels]") {
  for (const char* file : {"reduce.sm75.ptx", "reduce.sm80.ptx"}) {
    auto prog = compile_or_fail(read_ptx(file));
    HostMemory mem;
    const int n = 1000, threads = 256, blocks = 4;
    Rng rng(2);
    std::vector<float> in(n);
    for (float& f : in) f = static_cast<float>(rng.next() % 64) / 64.0f;  // exact in float sums
    float* din = mem.upload(in);
    float* out = mem.zeros<float>(1);
    int* ballots = mem.zeros<int>(blocks * 64);
    require_success(run(*prog, "warp_reduce", {blocks}, {threads},
                        Args().add(din).add(out).add(ballots).add(n), mem));
    float e = 0;
    for (float f : in) e += f;
    REQUIRE(*out == e);
    for (int b = 0; b < blocks; ++b)
      for (int w = 0; w < threads / 32; ++w) {
        uint32_t ballot = 0;
        bool any = false;
        for (int l = 0; l < 32; ++l) {
          int i = b * threads + w * 32 + l;
          float v = i < n ? in[i] : 0.0f;
          if (v > 0.5f) ballot |= 1u << l;
          any |= v > 0.9f;
        }
        REQUIRE(static_cast<uint32_t>(ballots[b * 64 + w * 2]) == ballot);
        REQUIRE(ballots[b * 64 + w * 2 + 1] == static_cast<int>(any));
      }
  }
}

TEST_CASE("histogram with shared and global atomics", "[ptx][kernels]") {
  auto prog = compile_or_fail(read_ptx("reduce.sm75.ptx"));
  HostMemory mem;
  const int n = 20000;
  Rng rng(4);
  std::vector<unsigned char> data(n);
  for (auto& c : data) c = static_cast<unsigned char>(rng.next() % 251);
  unsigned char* dd = mem.upload(data);
  unsigned* bins = mem.zeros<unsigned>(256);
  require_success(run(*prog, "histogram", {8}, {128}, Args().add(dd).add(bins).add(n), mem));
  std::vector<unsigned> e(256, 0);
  for (unsigned char c : data) ++e[c];
  for (int b = 0; b < 256; ++b) REQUIRE(bins[b] == e[b]);
}

TEST_CASE("every atomic operation", "[ptx][kernels]") {
  auto prog = compile_or_fail(read_ptx("reduce.sm75.ptx"));
  HostMemory mem;
  const int n = 300;
  Rng rng(6);
  std::vector<int> vals(n);
  for (int& v : vals) v = static_cast<int>(rng.next() % 2001) - 1000;
  int* dv = mem.upload(vals);
  std::vector<int> iv0 = {0, INT32_MAX, INT32_MIN, -1, 0, 0, 0};
  int* iv = mem.upload(iv0);
  std::vector<unsigned> uv0 = {0, 500, 0};
  unsigned* uv = mem.upload(uv0);
  float* fv = mem.zeros<float>(1);
  double* dd = mem.zeros<double>(1);
  auto* lv = mem.zeros<unsigned long long>(1);
  require_success(run(*prog, "all_atomics", {3}, {128},
                      Args().add(iv).add(uv).add(fv).add(dd).add(lv).add(dv).add(n), mem));
  int sum = 0, mn = INT32_MAX, mx = INT32_MIN, an = -1, orr = 0, x = 0;
  unsigned long long lsum = 0;
  for (int v : vals) {
    sum += v;
    mn = std::min(mn, v);
    mx = std::max(mx, v);
    an &= v | 0x10000;
    orr |= v & 0xff;
    x ^= v;
    lsum += static_cast<unsigned long long>(static_cast<long long>(v));
  }
  REQUIRE(iv[0] == sum);
  REQUIRE(iv[1] == mn);
  REQUIRE(iv[2] == mx);
  REQUIRE(iv[3] == an);
  REQUIRE(iv[4] == orr);
  REQUIRE(iv[5] == x);
  REQUIRE(iv[6] >= 1);
  REQUIRE(iv[6] <= n);
  // inc wraps at 17: n increments from 0 -> n mod 18; dec from 500 by n (n < 500, never wraps)
  REQUIRE(uv[0] == static_cast<unsigned>(n % 18));
  REQUIRE(uv[1] == 500u - n);
  REQUIRE(uv[2] == 7u);
  REQUIRE(fv[0] == 0.5f * n);
  REQUIRE(dd[0] == 0.25 * n);
  REQUIRE(lv[0] == lsum);
}

TEST_CASE("tiled matrix multiply", "[ptx][kernels]") {
  auto prog = compile_or_fail(read_ptx("matmul.sm75.ptx"));
  HostMemory mem;
  const int M = 37, N = 45, K = 29;
  Rng rng(8);
  std::vector<float> A(M * K), B(K * N);
  for (float& f : A) f = static_cast<float>(static_cast<int>(rng.next() % 17) - 8);
  for (float& f : B) f = static_cast<float>(static_cast<int>(rng.next() % 13) - 6);
  float* dA = mem.upload(A);
  float* dB = mem.upload(B);
  float* dC = mem.zeros<float>(M * N);
  require_success(run(*prog, "matmul_tiled", {(N + 15) / 16, (M + 15) / 16}, {16, 16},
                      Args().add(dA).add(dB).add(dC).add(M).add(N).add(K), mem));
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) {
      float e = 0;
      for (int k = 0; k < K; ++k) e += A[r * K + k] * B[k * N + c];
      REQUIRE(dC[r * N + c] == e);
    }
}

TEST_CASE("softmax with dynamic shared memory", "[ptx][kernels]") {
  auto prog = compile_or_fail(read_ptx("softmax.sm75.ptx"));
  int k = prog->find_kernel("softmax");
  REQUIRE(k >= 0);
  CHECK(prog->kernels()[k].uses_dynamic_shared);
  HostMemory mem;
  const int rows = 5, cols = 300, threads = 128;
  Rng rng(10);
  std::vector<float> in(rows * cols);
  for (float& f : in) f = rng.uniform() * 8 - 4;
  float* din = mem.upload(in);
  float* out = mem.zeros<float>(rows * cols);
  double* stats = mem.zeros<double>(rows * 4);
  require_success(run(*prog, "softmax", {rows}, {threads},
                      Args().add(din).add(out).add(stats).add(cols), mem, threads * sizeof(float)));
  for (int r = 0; r < rows; ++r) {
    double m = -INFINITY;
    for (int c = 0; c < cols; ++c) m = std::max<double>(m, in[r * cols + c]);
    double s = 0;
    for (int c = 0; c < cols; ++c) s += std::exp(in[r * cols + c] - m);
    double total = 0;
    for (int c = 0; c < cols; ++c) {
      double e = std::exp(in[r * cols + c] - m) / s;
      REQUIRE(std::abs(out[r * cols + c] - e) <= 1e-5 * std::max(1.0, e) + 1e-7);
      total += out[r * cols + c];
    }
    REQUIRE(std::abs(total - 1.0) < 1e-4);
    float mf = static_cast<float>(m);
    REQUIRE(std::abs(stats[r * 4 + 0] - (std::log(s) + m)) < 1e-4);
    REQUIRE(stats[r * 4 + 1] ==
            static_cast<double>(std::nearbyint(mf * 3.7f)) + std::trunc(mf * 2.2f));
    REQUIRE(stats[r * 4 + 2] == static_cast<double>(static_cast<int>(mf * 100.0f)));
    REQUIRE(std::abs(stats[r * 4 + 3] - std::tanh(static_cast<double>(mf) * 0.1)) < 1e-12);
  }
}

// printf, calls, constant memory, cooperative groups, __syncwarp, assert, illegal addresses,
// half precision, approximate math and divergence.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "harness.h"

using namespace cusnap::emu::ptx;
using namespace cusnap::emu::ptx::test;

namespace {

// Captures what the engine writes to file descriptor 1 while `fn` runs.
template <typename Fn>
std::string capture_stdout(Fn fn) {
  std::fflush(stdout);
  char path[] = "/tmp/cusnap_ptx_stdout_XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  int saved = dup(1);
  dup2(fd, 1);
  fn();
  std::fflush(stdout);
  dup2(saved, 1);
  close(saved);
  lseek(fd, 0, SEEK_SET);
  std::string out;
  char buf[4096];
  ssize_t got;
  while ((got = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(got));
  close(fd);
  unlink(path);
  return out;
}

std::multiset<std::string> lines(const std::string& s) {
  std::multiset<std::string> r;
  size_t start = 0;
  while (start < s.size()) {
    size_t nl = s.find('\n', start);
    if (nl == std::string::npos) nl = s.size();
    r.insert(s.substr(start, nl - start));
    start = nl + 1;
  }
  return r;
}

}  // namespace

TEST_CASE("noinline and recursive calls, constant and global variables", "[ptx][kernels]") {
  for (const char* file : {"misc.sm75.ptx", "misc.sm90.ptx"}) {
    auto prog = compile_or_fail(read_ptx(file));
    HostMemory mem;
    auto vars = bind_variables(*prog, mem);
    float coeffs[8];
    for (int d = 0; d < 8; ++d) coeffs[d] = 0.5f * d - 1.0f;
    std::memcpy(vars.at("coeffs"), coeffs, sizeof coeffs);
    const int n = 90;
    std::vector<float> x(n);
    for (int i = 0; i < n; ++i) x[i] = static_cast<float>(i % 5) * 0.5f - 1.0f;
    float* dx = mem.upload(x);
    float* dy = mem.zeros<float>(n);
    int* facts = mem.zeros<int>(n);
    require_success(
        run(*prog, "use_constant", {2}, {64}, Args().add(dx).add(dy).add(facts).add(n), mem));
    const float table[4] = {1.5f, 2.5f, 3.5f, 4.5f};
    for (int i = 0; i < n; ++i) {
      float r = 0.0f;
      for (int d = 7; d >= 0; --d) r = std::fma(r, x[i], coeffs[d]);
      float r2 = 0.0f;
      for (int d = 7; d >= 0; --d) r2 = r2 * x[i] + coeffs[d];
      INFO(i);
      REQUIRE((dy[i] == r + table[i & 3] || dy[i] == r2 + table[i & 3]));
      int f = 1;
      for (int k = 2; k <= i % 10; ++k) f *= k;
      REQUIRE(facts[i] == f);
    }
    REQUIRE(*static_cast<int*>(vars.at("counter")) == n);
  }
}

TEST_CASE("device printf", "[ptx][kernels]") {
  auto prog = compile_or_fail(read_ptx("misc.sm75.ptx"));
  HostMemory mem;
  bind_variables(*prog, mem);
  const char who_text[] = "emu";
  char* who = static_cast<char*>(mem.alloc(sizeof who_text));
  std::memcpy(who, who_text, sizeof who_text);
  const int base = 42;
  const double d = 3.14159;
  LaunchResult r;
  std::string out = capture_stdout([&] {
    r = run(*prog, "say_hello", {2}, {35},
            Args().add(base).add(d).add(static_cast<const char*>(who)), mem);
  });
  require_success(r);
  std::multiset<std::string> expected;
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 35; ++t) {
      char buf[256];
      std::snprintf(
          buf, sizeof buf, "hello %d from block %d thread %d: %.3f %s %c %5.1e|%-4d|%x|%lld", base,
          b, t, d, who_text, 'A' + t, d * 1000.0, t, 255 + base, (long long)base * 1000000000LL);
      expected.insert(buf);
    }
  REQUIRE(lines(out) == expected);
}

TEST_CASE("cooperative groups grid sync", "[ptx][kernels]") {
  for (const char* file : {"misc.sm75.ptx", "misc.sm90.ptx"}) {
    auto prog = compile_or_fail(read_ptx(file));
    HostMemory mem;
    bind_variables(*prog, mem);
    const int blocks = 6, threads = 64, n = blocks * threads - 10;
    std::vector<int> in(n);
    for (int i = 0; i < n; ++i) in[i] = i * 3 - 100;
    int* din = mem.upload(in);
    int* partial = mem.zeros<int>(blocks);
    int* out = mem.zeros<int>(1);
    require_success(run(*prog, "grid_sync_sum", {blocks}, {threads},
                        Args().add(din).add(partial).add(out).add(n), mem, 0, true));
    int e = 0;
    for (int v : in) e += v;
    REQUIRE(*out == e);
    // Without a cooperative launch the grid barrier has no workspace and traps, as on a GPU.
    auto bad = run(*prog, "grid_sync_sum", {blocks}, {threads},
                   Args().add(din).add(partial).add(out).add(n), mem);
    REQUIRE(bad.status == LaunchStatus::kIllegalInstruction);
  }
}

TEST_CASE("__syncwarp across divergent paths, shuffles, activemask, __syncthreads_count",
          "[ptx][kernels]") {
  auto prog = compile_or_fail(read_ptx("misc.sm75.ptx"));
  HostMemory mem;
  bind_variables(*prog, mem);
  int* out = mem.zeros<int>(128);
  require_success(run(*prog, "syncwarp_exchange", {1}, {64}, Args().add(out), mem));
  for (int t = 0; t < 64; ++t) {
    int lane = t & 31, other = t ^ 16, olane = other & 31;
    REQUIRE(out[t] == (olane < 16 ? olane * 3 : olane * 5));
    int up = lane == 0 ? 0 : lane - 1;
    REQUIRE(out[64 + t] == 21 + up * 1000 + 100000 + 32 * 10000000);
  }
}

TEST_CASE("device assert fails the launch with kAssert after printing", "[ptx][kernels]") {
  auto prog = compile_or_fail(read_ptx("misc.sm75.ptx"));
  HostMemory mem;
  bind_variables(*prog, mem);
  std::vector<int> in(64, 1);
  int* din = mem.upload(in);
  LaunchResult ok;
  std::string quiet =
      capture_stdout([&] { ok = run(*prog, "checked", {2}, {32}, Args().add(din).add(64), mem); });
  require_success(ok);
  REQUIRE(quiet.empty());
  in[37] = -5;
  int* bad = mem.upload(in);
  LaunchResult r;
  std::string out =
      capture_stdout([&] { r = run(*prog, "checked", {2}, {32}, Args().add(bad).add(64), mem); });
  REQUIRE(r.status == LaunchStatus::kAssert);
  REQUIRE(out.find("block: [1,0,0], thread: [5,0,0] Assertion `in[i] >= 0` failed.") !=
          std::string::npos);
}

TEST_CASE("out-of-bounds store is an illegal address naming kernel, block, thread and line",
          "[ptx][kernels]") {
  auto prog = compile_or_fail(read_ptx("misc.sm75.ptx"));
  HostMemory mem;
  bind_variables(*prog, mem);
  const int n = 64;
  float* p = mem.zeros<float>(n);
  auto r = run(*prog, "out_of_bounds", {1}, {32}, Args().add(p).add(n), mem);
  REQUIRE(r.status == LaunchStatus::kIllegalAddress);
  INFO(r.message);
  REQUIRE(r.message.find("kernel out_of_bounds") != std::string::npos);
  REQUIRE(r.message.find("block (0,0,0)") != std::string::npos);
  REQUIRE(r.message.find("thread (0,0,0)") != std::string::npos);
  REQUIRE(r.message.find("PTX line") != std::string::npos);
  char addr[64];
  std::snprintf(addr, sizeof addr, "0x%llx",
                static_cast<unsigned long long>(reinterpret_cast<uint64_t>(p + n)));
  REQUIRE(r.message.find(addr) != std::string::npos);
}

TEST_CASE("approximate math stays close to libm", "[ptx][kernels]") {
  auto prog = compile_or_fail(read_ptx("misc.sm75.ptx"));
  HostMemory mem;
  bind_variables(*prog, mem);
  const int n = 64;
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[i] = 0.05f + i * 0.37f;
  float* dx = mem.upload(x);
  float* dy = mem.zeros<float>(n * 4);
  require_success(run(*prog, "math_mix", {1}, {64}, Args().add(dx).add(dy).add(n), mem));
  for (int i = 0; i < n; ++i) {
    double v = x[i];
    auto close = [](double got, double want) {
      return std::abs(got - want) <= 1e-5 * std::max(1.0, std::abs(want));
    };
    REQUIRE(close(dy[i * 4 + 0], v / 3.0 + v / 7.0));
    REQUIRE(close(dy[i * 4 + 1], std::sin(v) + std::log(v + 2.0)));
    REQUIRE(close(dy[i * 4 + 2], 1.0 / std::sqrt(v + 1.0) + std::sqrt(v)));
    REQUIRE(dy[i * 4 + 3] ==
            std::fmin(x[i], 0.5f) + std::copysign(1.0f, x[i] - 0.5f) + std::fabs(x[i] - 1.0f));
  }
}

TEST_CASE("half precision", "[ptx][kernels]") {
  for (const char* file : {"half.sm75.ptx", "half.sm80.ptx"}) {
    auto prog = compile_or_fail(read_ptx(file));
    HostMemory mem;
    const int n = 100;
    Rng rng(12);
    std::vector<_Float16> x(n), y(n), y0;
    for (int i = 0; i < n; ++i) {
      x[i] = static_cast<_Float16>(rng.uniform() * 8 - 4);
      y[i] = static_cast<_Float16>(rng.uniform() * 2);
    }
    y0 = y;
    auto* dx = mem.upload(x);
    auto* dy = mem.upload(y);
    const float a = 1.75f;
    require_success(run(*prog, "half_axpy", {1}, {128}, Args().add(dx).add(dy).add(a).add(n), mem));
    for (int i = 0; i < n; ++i) {
      _Float16 e =
          static_cast<_Float16>(std::fma(a, static_cast<float>(x[i]), static_cast<float>(y0[i])));
      REQUIRE(static_cast<float>(dy[i]) == static_cast<float>(e));
    }
    auto* out = mem.zeros<_Float16>(n);
    require_success(
        run(*prog, "half2_mul", {1}, {64},
            Args().add(dx).add(static_cast<_Float16*>(mem.upload(y0))).add(out).add(n / 2), mem));
    for (int i = 0; i < n; ++i)
      REQUIRE(static_cast<float>(out[i]) ==
              static_cast<float>(
                  static_cast<_Float16>(static_cast<float>(x[i]) * static_cast<float>(y0[i]))));
    require_success(run(*prog, "half_fma", {1}, {128},
                        Args().add(dx).add(static_cast<_Float16*>(mem.upload(y0))).add(out).add(n),
                        mem));
    for (int i = 0; i < n; ++i)
      REQUIRE(static_cast<float>(out[i]) ==
              static_cast<float>(static_cast<_Float16>(
                  static_cast<double>(x[i]) * static_cast<double>(y0[i]) + 1.0)));
  }
}

TEST_CASE("divergence: nested branches, early return, reconvergence before a shuffle",
          "[ptx][divergence]") {
  auto prog = compile_or_fail(read_ptx("divergence.sm75.ptx"));
  HostMemory mem;
  const int n = 150;
  Rng rng(13);
  std::vector<int> in(n);
  for (int& v : in) v = static_cast<int>(rng.next() % 200);
  int* din = mem.upload(in);
  int* out = mem.zeros<int>(2 * n);
  require_success(run(*prog, "nested_branches", {3}, {64}, Args().add(din).add(out).add(n), mem));
  auto ref = [&](int v) {
    if (v % 3 == 0) return v % 2 == 0 ? v * 10 : v * 20;
    if (v % 3 == 1) return v > 50 ? -v - 1000 : -v;
    return 7;
  };
  for (int i = 0; i < n; ++i) {
    REQUIRE(out[i] == ref(in[i]));
    if ((i ^ 1) < n) REQUIRE(out[n + i] == ref(in[i ^ 1]));
  }
}

TEST_CASE("divergence: loops with per-lane trip counts, continue and break", "[ptx][divergence]") {
  auto prog = compile_or_fail(read_ptx("divergence.sm75.ptx"));
  HostMemory mem;
  const int n = 100;
  Rng rng(14);
  std::vector<int> trips(n);
  for (int& t : trips) t = static_cast<int>(rng.next() % 40);
  int* dt = mem.upload(trips);
  int* out = mem.zeros<int>(2 * n);
  require_success(run(*prog, "per_lane_loops", {2}, {64}, Args().add(dt).add(out).add(n), mem));
  std::vector<int> acc(n);
  for (int i = 0; i < n; ++i) {
    int a = 0;
    for (int k = 0; k < trips[i]; ++k) {
      if (k & 1) continue;
      a += k * i;
      if (a > 100000) break;
    }
    acc[i] = a;
    REQUIRE(out[i] == a);
  }
  for (int i = 0; i < n; ++i) {
    int warp_start = i / 32 * 32, count = 0;
    for (int j = warp_start; j < std::min(n, warp_start + 32); ++j) count += acc[j] > 50;
    REQUIRE(out[n + i] == count);
  }
}

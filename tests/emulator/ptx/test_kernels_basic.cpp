// Elementary kernels compiled by nvcc, checked against host references.
#include <cmath>

#include "harness.h"

using namespace cusnap::emu::ptx;
using namespace cusnap::emu::ptx::test;

namespace {
const char* kBasicArchs[] = {"basic.sm75.ptx", "basic.sm90.ptx"};
}

TEST_CASE("vector add end to end", "[ptx][kernels]") {
  for (const char* file : kBasicArchs) {
    INFO(file);
    auto prog = compile_or_fail(read_ptx(file));
    CHECK(prog->ptx_version() == 90);
    HostMemory mem;
    bind_variables(*prog, mem);
    const int n = 1000;
    Rng rng(7);
    std::vector<float> a(n), b(n);
    for (int i = 0; i < n; ++i) {
      a[i] = rng.uniform() * 100;
      b[i] = rng.uniform() - 0.5f;
    }
    float* da = mem.upload(a);
    float* db = mem.upload(b);
    float* dc = mem.zeros<float>(n);
    auto r = run(*prog, "vector_add", {(n + 127) / 128}, {128},
                 Args().add(da).add(db).add(dc).add(n), mem);
    require_success(r);
    CHECK(r.instructions > 0);
    for (int i = 0; i < n; ++i) REQUIRE(dc[i] == a[i] + b[i]);
  }
}

TEST_CASE("saxpy", "[ptx][kernels]") {
  for (const char* file : kBasicArchs) {
    auto prog = compile_or_fail(read_ptx(file));
    HostMemory mem;
    const int n = 777;
    Rng rng(3);
    std::vector<float> x(n), y(n);
    for (int i = 0; i < n; ++i) {
      x[i] = rng.uniform();
      y[i] = rng.uniform() * 4 - 2;
    }
    float* dx = mem.upload(x);
    float* dy = mem.upload(y);
    const float a = 2.5f;
    require_success(
        run(*prog, "saxpy", {(n + 63) / 64}, {64}, Args().add(n).add(a).add(dx).add(dy), mem));
    for (int i = 0; i < n; ++i) REQUIRE(dy[i] == std::fma(a, x[i], y[i]));
  }
}

static uint32_t brev32(uint32_t v) {
  uint32_t r = 0;
  for (int i = 0; i < 32; ++i) r |= ((v >> i) & 1u) << (31 - i);
  return r;
}

TEST_CASE("grid-stride loop with 64-bit and double math", "[ptx][kernels]") {
  for (const char* file : kBasicArchs) {
    auto prog = compile_or_fail(read_ptx(file));
    HostMemory mem;
    const int n = 5000;
    Rng rng(11);
    std::vector<int> in(n);
    for (int i = 0; i < n; ++i) in[i] = static_cast<int>(rng.next()) >> (i % 7);
    int* din = mem.upload(in);
    long long* dout = mem.zeros<long long>(n);
    double* dd = mem.zeros<double>(n);
    require_success(
        run(*prog, "grid_stride", {3}, {96}, Args().add(din).add(dout).add(dd).add(n), mem));
    for (int i = 0; i < n; ++i) {
      int v = in[i];
      long long e = (long long)v * v - (v >> 3) + __builtin_popcount(v) +
                    (v == 0 ? 32 : __builtin_clz(v)) + brev32(static_cast<uint32_t>(v));
      REQUIRE(dout[i] == e);
      REQUIRE(dd[i] == (double)v / 3.0 + std::sqrt((double)(v & 0xffff)));
    }
  }
}

struct Params {
  double scale;
  float offset[3];
  char tag;
  short bias;
  int idx[4];
};

TEST_CASE("struct passed by value", "[ptx][kernels]") {
  for (const char* file : kBasicArchs) {
    auto prog = compile_or_fail(read_ptx(file));
    int k = prog->find_kernel("struct_by_value");
    REQUIRE(k >= 0);
    REQUIRE(prog->kernels()[k].params.size() == 3);
    CHECK(prog->kernels()[k].params[0].size == sizeof(Params));
    HostMemory mem;
    Params p{0.75, {1.5f, -2.0f, 8.25f}, 'x', -300, {4, -9, 16, 25}};
    const int n = 100;
    float* out = mem.zeros<float>(n);
    require_success(run(*prog, "struct_by_value", {1}, {128}, Args().add(p).add(out).add(n), mem));
    for (int i = 0; i < n; ++i)
      REQUIRE(out[i] == (float)(p.scale * i) + p.offset[i % 3] + p.tag + p.bias + p.idx[i % 4]);
  }
}

struct Node {
  Node* next;
  int value;
};

TEST_CASE("pointer chasing through linked lists", "[ptx][kernels]") {
  auto prog = compile_or_fail(read_ptx("basic.sm75.ptx"));
  HostMemory mem;
  const int n = 50;
  std::vector<Node*> heads(n, nullptr);
  std::vector<int> esum(n, 0), elen(n, 0);
  Rng rng(5);
  for (int i = 0; i < n; ++i) {
    int len = i % 9;  // per-thread trip counts: divergent loop
    Node* prev = nullptr;
    for (int k = 0; k < len; ++k) {
      Node* node = static_cast<Node*>(mem.alloc(sizeof(Node)));
      node->value = static_cast<int>(rng.next() % 1000);
      node->next = prev;
      prev = node;
      esum[i] += node->value;
    }
    heads[i] = prev;
    elen[i] = len;
  }
  Node** dheads = mem.upload(heads);
  int* sums = mem.zeros<int>(n);
  int* lens = mem.zeros<int>(n);
  require_success(
      run(*prog, "pointer_chase", {2}, {32}, Args().add(dheads).add(sums).add(lens).add(n), mem));
  for (int i = 0; i < n; ++i) {
    REQUIRE(sums[i] == esum[i]);
    REQUIRE(lens[i] == elen[i]);
  }
}

TEST_CASE("vector loads and stores (.v4, .nc)", "[ptx][kernels]") {
  for (const char* file : kBasicArchs) {
    auto prog = compile_or_fail(read_ptx(file));
    HostMemory mem;
    const int n = 70;
    std::vector<float> in(n * 4);
    Rng rng(9);
    for (float& f : in) f = rng.uniform();
    float* din = mem.upload(in);
    float* dout = mem.zeros<float>(n * 4);
    require_success(run(*prog, "vec4_copy", {3}, {32}, Args().add(din).add(dout).add(n), mem));
    for (int i = 0; i < n; ++i) {
      REQUIRE(dout[i * 4 + 0] == in[i * 4 + 3]);
      REQUIRE(dout[i * 4 + 1] == in[i * 4 + 2] * 2.0f);
      REQUIRE(dout[i * 4 + 2] == in[i * 4 + 1] + 1.0f);
      REQUIRE(dout[i * 4 + 3] == in[i * 4 + 0]);
    }
  }
}

static uint32_t byte_perm(uint32_t x, uint32_t y, uint32_t s) {
  uint64_t v = (uint64_t{y} << 32) | x;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i)
    r |= static_cast<uint32_t>((v >> (((s >> (4 * i)) & 7) * 8)) & 0xff) << (8 * i);
  return r;
}

TEST_CASE("integer operations", "[ptx][kernels]") {
  for (const char* file : kBasicArchs) {
    auto prog = compile_or_fail(read_ptx(file));
    HostMemory mem;
    const int n = 200;
    Rng rng(21);
    std::vector<int> a(n), b(n);
    for (int i = 0; i < n; ++i) {
      a[i] = static_cast<int>(rng.next());
      b[i] = static_cast<int>(rng.next()) >> (i % 31);
    }
    b[0] = 0;
    int* da = mem.upload(a);
    int* db = mem.upload(b);
    int* out = mem.zeros<int>(n * 8);
    auto* wide = mem.zeros<unsigned long long>(n);
    require_success(
        run(*prog, "int_ops", {4}, {64}, Args().add(da).add(db).add(out).add(wide).add(n), mem));
    for (int i = 0; i < n; ++i) {
      int x = a[i], y = b[i];
      int yy = y == 0 ? 1 : y;
      INFO(i << " x=" << x << " y=" << y);
      REQUIRE(out[i * 8 + 0] == (x == INT32_MIN && yy == -1 ? x : x / yy));
      REQUIRE(out[i * 8 + 1] == (yy == -1 ? 0 : x % yy));
      REQUIRE(out[i * 8 + 2] == (std::min(x, y) ^ std::max(x, y)));
      REQUIRE(out[i * 8 + 3] == static_cast<int>((int64_t{x} * y) >> 32));
      REQUIRE(out[i * 8 + 4] == static_cast<int>(static_cast<uint32_t>(x) >> (y & 31)));
      REQUIRE(out[i * 8 + 5] ==
              static_cast<int>(static_cast<uint32_t>(x < 0 ? -static_cast<int64_t>(x) : x) +
                               (static_cast<uint32_t>(x) << (y & 15))));
      REQUIRE(static_cast<uint32_t>(out[i * 8 + 6]) == byte_perm(x, y, 0x5140));
      REQUIRE(out[i * 8 + 7] == ((x & 0xff00) | (y & 0xff)));
      unsigned long long ux = static_cast<unsigned long long>(static_cast<long long>(x));
      unsigned long long uy = static_cast<unsigned long long>(static_cast<long long>(y));
      unsigned long long hi =
          static_cast<unsigned long long>((static_cast<unsigned __int128>(ux) * uy) >> 64);
      REQUIRE(wide[i] == uint64_t{static_cast<uint32_t>(x)} * static_cast<uint32_t>(y) + hi);
    }
  }
}

// PTX from producers other than nvcc (corpus/: the sources, the checked-in PTX and
// regenerate.sh, which made it): LLVM 14's llc, the toolkit's libNVVM driven by a small C
// program, and Numba's compile_ptx. Each kernel runs on the engine against a host reference.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "harness.h"

using namespace cusnap::emu::ptx;
using namespace cusnap::emu::ptx::test;

namespace {

std::string read_corpus(const std::string& name) {
  std::ifstream f(std::string(CUSNAP_TEST_CORPUS_DIR) + "/" + name, std::ios::binary);
  REQUIRE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The one kernel whose (mangled) name contains `part`: Numba mangles names with ABI tags.
std::string kernel_named(const Program& p, const std::string& part) {
  std::string found;
  for (const KernelDesc& k : p.kernels()) {
    if (k.name.find(part) == std::string::npos) continue;
    REQUIRE(found.empty());
    found = k.name;
  }
  REQUIRE(!found.empty());
  return found;
}

// A 1-D Numba array argument: meminfo, parent, nitems, itemsize, data, shape[0], strides[0].
template <typename T>
Args& add_array(Args& args, T* data, int64_t n) {
  const int64_t item = static_cast<int64_t>(sizeof(T));
  return args.add(uint64_t{0})
      .add(uint64_t{0})
      .add(n)
      .add(item)
      .add(reinterpret_cast<uint64_t>(data))
      .add(n)
      .add(item);
}

}  // namespace

TEST_CASE("corpus: llc grid-stride stats (fma, minnum, switch, atomics, shfl)",
          "[ptx][corpus][llvm]") {
  auto prog = compile_or_fail(read_corpus("llc_stats.ptx"));
  HostMemory mem;
  bind_variables(*prog, mem);
  const int32_t n = 1000;
  std::vector<float> in(n);
  Rng rng(13);
  for (float& v : in) v = rng.uniform() * 6.0f - 3.0f;
  float* din = mem.upload(in);
  float* out = mem.zeros<float>(n);
  int32_t* hist = mem.zeros<int32_t>(9);
  require_success(run(*prog, "stats", {3}, {64}, Args().add(out).add(hist).add(din).add(n), mem));
  const float k[4] = {10.0f, 20.0f, 30.0f, 40.0f};
  int32_t expected_hist[9] = {};
  for (int32_t i = 0; i < n; ++i) {
    INFO("i = " << i << ", x = " << in[i]);
    const float y = std::fma(in[i], 1.5f, -0.25f);
    const float clamped = std::fmin(std::fmax(y, -2.0f), 2.0f);
    CHECK(out[i] == clamped + k[i % 4]);
    const int32_t bin = std::clamp(static_cast<int32_t>(in[i] * 2.0f) + 4, 0, 7);
    ++expected_hist[bin];
  }
  expected_hist[8] = n;  // every thread's count, summed by the warp shuffles
  for (int b = 0; b < 9; ++b) {
    INFO("bin " << b);
    CHECK(hist[b] == expected_hist[b]);
  }
}

TEST_CASE("corpus: libNVVM block sum in shared memory (64-bit div/rem, barriers)",
          "[ptx][corpus][nvvm]") {
  auto prog = compile_or_fail(read_corpus("nvvm_kernels.ptx"));
  HostMemory mem;
  bind_variables(*prog, mem);
  const int32_t n = 300, block = 128, grid = 3;
  std::vector<uint32_t> in(n);
  Rng rng(5);
  for (uint32_t& v : in) v = rng.next();
  uint32_t* din = mem.upload(in);
  uint64_t* out = mem.zeros<uint64_t>(grid);
  require_success(run(*prog, "block_sum", {grid}, {block}, Args().add(out).add(din).add(n), mem));
  for (int32_t b = 0; b < grid; ++b) {
    uint64_t sum = 0;
    for (int32_t t = 0; t < block; ++t) {
      const int32_t i = b * block + t;
      const uint64_t h = uint64_t{i < n ? in[i] : 0u} * 2654435761u;
      sum += h / 1000 + 7 * (h % 1000);
    }
    INFO("block " << b);
    CHECK(out[b] == sum);
  }
}

TEST_CASE("corpus: libNVVM f64 norms (contracted fma, sqrt.rn, div.rn)", "[ptx][corpus][nvvm]") {
  auto prog = compile_or_fail(read_corpus("nvvm_kernels.ptx"));
  HostMemory mem;
  bind_variables(*prog, mem);
  const int32_t n = 200;
  std::vector<double> in(2 * n);
  Rng rng(11);
  for (double& v : in) v = (static_cast<double>(rng.next()) - 2147483648.0) / 1048576.0;
  double* din = mem.upload(in);
  double* out = mem.zeros<double>(n);
  require_success(run(*prog, "norms", {4}, {64}, Args().add(out).add(din).add(n), mem));
  for (int32_t i = 0; i < n; ++i) {
    const double a = in[2 * i], b = in[2 * i + 1];
    // libNVVM contracts a * a + b * b into fma(a, a, b * b) (see nvvm_kernels.ptx).
    const double expected = std::sqrt(std::fma(a, a, b * b)) / (std::fabs(a) + 1.0);
    INFO("i = " << i);
    CHECK(out[i] == expected);
  }
}

TEST_CASE("corpus: Numba poly_clip (f64 fma, min/max, sqrt)", "[ptx][corpus][numba]") {
  auto prog = compile_or_fail(read_corpus("numba_poly_clip.ptx"));
  HostMemory mem;
  bind_variables(*prog, mem);
  const int64_t n = 333;
  std::vector<double> x(n), y(n);
  Rng rng(17);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = rng.uniform() * 4.0 - 2.0;
    y[i] = rng.uniform() * 2.0 - 1.0;
  }
  const double a = 0.75;
  double* dx = mem.upload(x);
  double* dy = mem.upload(y);
  double* out = mem.zeros<double>(n);
  Args args;
  add_array(add_array(add_array(args, out, n), dx, n), dy, n).add(a);
  require_success(run(*prog, kernel_named(*prog, "poly_clip"), {3}, {128}, args, mem));
  for (int64_t i = 0; i < n; ++i) {
    double v = std::fmin(std::fmax(std::fma(a, x[i], y[i]), -1.0), 1.0);
    if (i % 2 == 1) v += std::sqrt(std::fabs(x[i]));
    INFO("i = " << i);
    CHECK(out[i] == v);
  }
}

TEST_CASE("corpus: Numba shared-memory histogram (shared atomics, syncthreads)",
          "[ptx][corpus][numba]") {
  auto prog = compile_or_fail(read_corpus("numba_shared_histogram.ptx"));
  HostMemory mem;
  bind_variables(*prog, mem);
  const int64_t n = 5000;
  std::vector<int32_t> data(n);
  Rng rng(23);
  for (int32_t& v : data) v = static_cast<int32_t>(rng.next());
  int32_t* ddata = mem.upload(data);
  int32_t* hist = mem.zeros<int32_t>(16);
  Args args;
  add_array(add_array(args, hist, 16), ddata, n);
  require_success(run(*prog, kernel_named(*prog, "shared_histogram"), {4}, {96}, args, mem));
  int32_t expected[16] = {};
  for (int32_t v : data) ++expected[v & 15];
  for (int b = 0; b < 16; ++b) {
    INFO("bin " << b);
    CHECK(hist[b] == expected[b]);
  }
}

TEST_CASE("corpus: Numba int_mix (Python floor division and modulo in 64 bits)",
          "[ptx][corpus][numba]") {
  auto prog = compile_or_fail(read_corpus("numba_int_mix.ptx"));
  HostMemory mem;
  bind_variables(*prog, mem);
  const int64_t n = 256;
  std::vector<int64_t> x(n);
  Rng rng(29);
  for (int64_t i = 0; i < n; ++i)
    x[i] = static_cast<int64_t>((uint64_t{rng.next()} << 32) | rng.next());
  x[0] = 0;
  x[1] = -1;
  x[2] = -7;
  x[3] = -8;
  x[4] = INT64_MIN;
  x[5] = INT64_MAX;
  int64_t* dx = mem.upload(x);
  int64_t* out = mem.zeros<int64_t>(n);
  Args args;
  add_array(add_array(args, out, n), dx, n);
  require_success(run(*prog, kernel_named(*prog, "int_mix"), {2}, {128}, args, mem));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = x[i];
    int64_t q = v / 7, r = v % 7;
    if (r != 0 && (r < 0) != (7 < 0)) {  // Python rounds the quotient toward -infinity
      q -= 1;
      r += 7;
    }
    const uint64_t expected = (static_cast<uint64_t>(q) << 3) ^ static_cast<uint64_t>(r * 1000003) ^
                              static_cast<uint64_t>(v >> 5);
    INFO("x = " << v);
    CHECK(static_cast<uint64_t>(out[i]) == expected);
  }
}

TEST_CASE("corpus: llc bit intrinsics, 8/16-bit arithmetic and a cmpxchg loop",
          "[ptx][corpus][llvm]") {
  auto prog = compile_or_fail(read_corpus("llc_bits.ptx"));
  HostMemory mem;
  bind_variables(*prog, mem);
  const int32_t n = 300;
  std::vector<uint32_t> in(n);
  Rng rng(31);
  for (uint32_t& v : in) v = rng.next();
  in[0] = 0;
  in[1] = 0xffffffffu;
  in[2] = 0x80000000u;
  in[3] = 1;
  in[4] = 0x00ff00ffu;
  uint32_t* din = mem.upload(in);
  uint32_t* out = mem.zeros<uint32_t>(4 * n + 1);
  require_success(run(*prog, "bits", {3}, {128}, Args().add(out).add(din).add(n), mem));
  uint32_t top = 0;
  for (int32_t i = 0; i < n; ++i) {
    const uint32_t x = in[i];
    const uint32_t r0 = static_cast<uint32_t>(std::popcount(x) + 33 * std::countl_zero(x) +
                                              1089 * std::countr_zero(x));
    uint32_t rev = 0;
    for (int b = 0; b < 32; ++b) rev |= ((x >> b) & 1u) << (31 - b);
    const uint32_t r1 = rev ^ std::rotl(x, i & 31);
    const uint32_t r2 = static_cast<uint32_t>((uint64_t{x} * uint64_t{x ^ 0x9e3779b9u}) >> 32);
    const auto x16 = static_cast<int16_t>(x);
    const auto s8 = static_cast<int16_t>(static_cast<int8_t>(x) >> 1);
    const auto sum16 = static_cast<int16_t>(static_cast<uint16_t>(x16 * 7) + s8);
    const auto r3 = static_cast<uint32_t>(static_cast<int32_t>(sum16));
    INFO("i = " << i << ", x = 0x" << std::hex << x);
    CHECK(out[4 * i] == r0);
    CHECK(out[4 * i + 1] == r1);
    CHECK(out[4 * i + 2] == r2);
    CHECK(out[4 * i + 3] == r3);
    top = std::max(top, x ^ static_cast<uint32_t>(i));
  }
  CHECK(out[4 * n] == top);
}

TEST_CASE("corpus: Numba local-array sort and float atomic max", "[ptx][corpus][numba]") {
  auto prog = compile_or_fail(read_corpus("numba_local_sort.ptx"));
  HostMemory mem;
  bind_variables(*prog, mem);
  const int64_t n = 203;
  std::vector<float> x(n);
  Rng rng(37);
  for (float& v : x) v = rng.uniform() * 200.0f - 100.0f;
  float* dx = mem.upload(x);
  float* out = mem.zeros<float>(n);
  std::vector<float> top_init = {-1000.0f};
  float* top = mem.upload(top_init);
  Args args;
  add_array(add_array(add_array(args, out, n), top, 1), dx, n);
  require_success(run(*prog, kernel_named(*prog, "local_sort"), {2}, {128}, args, mem));
  float expected_top = -1000.0f;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<float> buf(8);
    for (int64_t k = 0; k < 8; ++k) buf[k] = x[(i + k * 5) % n];
    std::sort(buf.begin(), buf.end());
    INFO("i = " << i);
    CHECK(out[i] == buf[0] - buf[7]);
    expected_top = std::max(expected_top, buf[7]);
  }
  CHECK(top[0] == expected_top);
}

// PTX from producers other than nvcc (corpus/: the sources, the checked-in PTX and
// regenerate.sh, which made it): LLVM 14's llc, the toolkit's libNVVM driven by a small C
// program, and Numba's compile_ptx. Each kernel runs on the engine against a host reference.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
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

namespace {

// The same LLVM IR compiled by llc for several targets (regenerate.sh): each must give the
// host reference's answer.
std::vector<std::string> llc_targets(const std::string& name) {
  const char* low = name == "llc_vectors" ? "sm_50" : "sm_60";
  return {name + "." + low + ".ptx", name + ".sm_75.ptx", name + ".sm_86.ptx"};
}

template <typename T>
uint64_t bits_of(T v) {
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof v);
  return b;
}

// Equal bit patterns, or both NaN (no NaN payload is specified).
template <typename T>
bool same_float(T got, T want) {
  return bits_of(got) == bits_of(want) ||
         (std::isnan(static_cast<double>(got)) && std::isnan(static_cast<double>(want)));
}

}  // namespace

TEST_CASE("corpus: llc vector loads and stores, f16x2, f64 math, 16/64-bit lanes",
          "[ptx][corpus][llvm]") {
  const int32_t n = 300;
  Rng rng(41);
  std::vector<float> f4(4 * n);
  for (float& v : f4) v = rng.uniform() * 64.0f - 32.0f;
  const float fedge[] = {0.0f, -0.0f, 1e30f, -1e30f, 1e-40f, -1.0f, 3.0f, 3.0f};
  std::copy(std::begin(fedge), std::end(fedge), f4.begin());
  std::vector<_Float16> h2(2 * n);
  for (_Float16& v : h2) v = static_cast<_Float16>(rng.uniform() * 200.0f - 100.0f);
  const float hedge[] = {0.0f, -0.0f, 65504.0f, 65504.0f, 5.9604645e-8f, -2.0f, 1.0f, -1.0f};
  for (int k = 0; k < 8; ++k) h2[k] = static_cast<_Float16>(hedge[k]);
  std::vector<double> d(n);
  for (double& v : d) v = (static_cast<double>(rng.next()) - 2147483648.0) / 1048576.0;
  const double dedge[] = {0.0, -0.0, 1e300, -1e300, -4.9e-324, 0.5, -0.5, 1.0, -2.5};
  std::copy(std::begin(dedge), std::end(dedge), d.begin());
  std::vector<uint16_t> s4(4 * n);
  for (uint16_t& v : s4) v = static_cast<uint16_t>(rng.next());
  s4[0] = 0, s4[1] = 0xffff, s4[2] = 0x8000, s4[3] = 1000, s4[7] = 1001;
  std::vector<uint64_t> q2(2 * n);
  for (uint64_t& v : q2) v = (uint64_t{rng.next()} << 32) | rng.next();
  q2[0] = ~uint64_t{0}, q2[1] = 1;
  for (const std::string& file : llc_targets("llc_vectors")) {
    INFO(file);
    auto prog = compile_or_fail(read_corpus(file));
    HostMemory mem;
    bind_variables(*prog, mem);
    float* df4 = mem.upload(f4);
    _Float16* dh2 = mem.upload(h2);
    double* dd = mem.upload(d);
    uint16_t* ds4 = mem.upload(s4);
    uint64_t* dq2 = mem.upload(q2);
    require_success(run(*prog, "vectors", {3}, {128},
                        Args().add(df4).add(dh2).add(dd).add(ds4).add(dq2).add(n), mem));
    for (int32_t i = 0; i < n; ++i) {
      INFO("i = " << i);
      const float* v = &f4[4 * i];
      for (int k = 0; k < 4; ++k) {
        const float prod = v[k] * v[3 - k];
        const float want = prod + (v[0] > v[1] ? v[k] : -v[k]);
        CHECK(same_float(df4[4 * i + k], want));
      }
      const float h0 = static_cast<float>(h2[2 * i]), h1 = static_cast<float>(h2[2 * i + 1]);
      const float sum = static_cast<float>(static_cast<_Float16>(h0 + h1));
      CHECK(same_float(dh2[2 * i], static_cast<_Float16>(sum * h0)));
      CHECK(same_float(dh2[2 * i + 1], static_cast<_Float16>(sum * h1)));
      const double x = d[i], fl = std::floor(x);
      const double den = fl * fl + 1.0;
      const double q = std::sqrt(std::fabs(x)) / den;
      const double t = std::fmin(x, 0.5) * std::copysign(3.0, x);
      CHECK(same_float(dd[i], q + t));
      for (int k = 0; k < 3; ++k) {
        const uint16_t s = s4[4 * i + k];
        CHECK(ds4[4 * i + k] == static_cast<uint16_t>(s * 3 + (s >> 2)));
      }
      CHECK(ds4[4 * i + 3] == std::max<uint16_t>(s4[4 * i + 3], 1000));
      CHECK(dq2[2 * i] == q2[2 * i] + q2[2 * i + 1]);
      CHECK(dq2[2 * i + 1] == (q2[2 * i] ^ (q2[2 * i + 1] << 7)));
    }
  }
}

TEST_CASE("corpus: llc atomics of every operation on global, shared and generic addresses",
          "[ptx][corpus][llvm]") {
  const int32_t n = 500;
  Rng rng(43);
  std::vector<int32_t> x(n);
  for (int32_t& v : x) v = static_cast<int32_t>(rng.next());
  x[0] = 0, x[1] = -1, x[2] = INT32_MIN, x[3] = INT32_MAX, x[4] = 7, x[5] = 7;
  std::vector<uint32_t> c0(25, 0);
  c0[2] = 0xffffffffu, c0[5] = 0x80000000u, c0[6] = 0x7fffffffu, c0[8] = 0xffffffffu;
  c0[9] = 0x12345678u, c0[10] = 0xdeadbeefu;
  const std::vector<uint64_t> c64_0 = {0, uint64_t{1} << 63, ~uint64_t{0}, 0};
  for (const std::string& file : llc_targets("llc_atomics")) {
    INFO(file);
    auto prog = compile_or_fail(read_corpus(file));
    HostMemory mem;
    bind_variables(*prog, mem);
    uint32_t* c = mem.upload(c0);
    uint64_t* c64 = mem.upload(c64_0);
    float* f = mem.zeros<float>(1);
    double* dsum = mem.zeros<double>(1);
    uint32_t* olds = mem.zeros<uint32_t>(2 * n);
    int32_t* dx = mem.upload(x);
    require_success(run(*prog, "atomics", {4}, {128},
                        Args().add(c).add(c64).add(f).add(dsum).add(olds).add(dx).add(n), mem));
    uint32_t sum = 0, band = c0[2], bor = 0, bxor = 0, umax = 0, umin = c0[8], nand = c0[9];
    uint32_t odd = 0, even = 0;
    int32_t smax = INT32_MIN, smin = INT32_MAX;
    uint64_t sq = 0, umin64 = ~uint64_t{0}, xor64 = 0;
    int64_t max64 = INT64_MIN;
    float fsum = 0;
    double dtotal = 0;
    std::vector<uint32_t> exchanged = {c0[10]};
    std::set<uint32_t> slots;
    for (int32_t i = 0; i < n; ++i) {
      const auto v = static_cast<uint32_t>(x[i]);
      sum += v;
      band &= v | 0xff00ff00u;
      bor |= v & 0x01010101u;
      bxor ^= v;
      smax = std::max(smax, x[i]);
      smin = std::min(smin, x[i]);
      umax = std::max(umax, v);
      umin = std::min(umin, v);
      nand = ~(nand & 0x5a5a5a5au);
      exchanged.push_back(v);
      slots.insert(v & 7);
      (v & 1 ? odd : even) += v;
      sq += static_cast<uint64_t>(int64_t{x[i]} * int64_t{x[i]});
      max64 = std::max(max64, static_cast<int64_t>(static_cast<uint64_t>(int64_t{x[i]}) << 20));
      umin64 = std::min(umin64, uint64_t{v} ^ static_cast<uint64_t>(i));
      xor64 ^= uint64_t{v} << 32;
      fsum += static_cast<float>(v & 255);
      dtotal += static_cast<double>(v & 1023);
    }
    CHECK(c[0] == sum);
    CHECK(c[1] == 0u - sum);
    CHECK(c[2] == band);
    CHECK(c[3] == bor);
    CHECK(c[4] == bxor);
    CHECK(static_cast<int32_t>(c[5]) == smax);
    CHECK(static_cast<int32_t>(c[6]) == smin);
    CHECK(c[7] == umax);
    CHECK(c[8] == umin);
    CHECK(c[9] == nand);
    // exch: the old values and the final one are the initial value and every v, in some order.
    std::vector<uint32_t> seen = {c[10]};
    std::vector<uint32_t> counted;
    for (int32_t i = 0; i < n; ++i) {
      seen.push_back(olds[2 * i]);
      counted.push_back(olds[2 * i + 1]);
    }
    std::sort(seen.begin(), seen.end());
    std::sort(exchanged.begin(), exchanged.end());
    CHECK(seen == exchanged);
    std::sort(counted.begin(), counted.end());
    for (int32_t i = 0; i < n; ++i) CHECK(counted[i] == static_cast<uint32_t>(i));
    CHECK(c[11] == static_cast<uint32_t>(n));
    CHECK(c[12] == static_cast<uint32_t>(n % 7));            // atom.inc wraps after 6
    CHECK(c[13] == static_cast<uint32_t>((6 - n % 6) % 6));  // atom.dec from 0 wraps to 5
    CHECK(c[14] == slots.size());                            // one cmpxchg wins per slot used
    for (uint32_t s = 0; s < 8; ++s) {
      INFO("slot " << s);
      const uint32_t owner = c[16 + s];
      if (!slots.count(s)) {
        CHECK(owner == 0);
        continue;
      }
      REQUIRE(owner >= 1);
      REQUIRE(owner <= static_cast<uint32_t>(n));
      CHECK((static_cast<uint32_t>(x[owner - 1]) & 7) == s);
    }
    CHECK(c[15] == odd);
    CHECK(c[24] == even);
    CHECK(c64[0] == sq);
    CHECK(static_cast<int64_t>(c64[1]) == max64);
    CHECK(c64[2] == umin64);
    CHECK(c64[3] == xor64);
    CHECK(f[0] == fsum);  // integers below 2^24: exact in any order
    CHECK(dsum[0] == dtotal);
  }
}

namespace {

// The reference of llc_calls.ll's walk: an irreducible loop entered at A (odd x) or B.
uint32_t walk_reference(uint32_t x) {
  uint32_t s = x;
  bool at_a = (x & 1) != 0;
  for (uint32_t k = 1;; ++k) {
    if (at_a) {
      s = s * 3 + 1;
    } else {
      s ^= s >> 3;
    }
    if (k >= 40) return s;
    at_a = at_a ? false : (s & 4) != 0;
  }
}

uint32_t digit_sum(uint32_t x) { return x < 10 ? x : digit_sum(x / 10) + x % 10; }

}  // namespace

TEST_CASE(
    "corpus: llc calls (indirect, byval struct, struct return, .weak, recursion), "
    "switch, irreducible loop, inline asm blocks",
    "[ptx][corpus][llvm]") {
  const int32_t n = 300;
  Rng rng(47);
  std::vector<uint32_t> x(n);
  for (uint32_t& v : x) v = rng.next();
  const uint32_t edge[] = {0, 1, 9, 10, 0xffffffffu, 0x80000000u, 0x7fffffffu, 12, 13, 99999};
  std::copy(std::begin(edge), std::end(edge), x.begin());
  const std::map<uint32_t, uint32_t> table = {{0, 1000},  {1, 2001},  {2, 3003}, {3, 4006},
                                              {4, 5010},  {5, 6015},  {7, 7021}, {8, 8028},
                                              {10, 9036}, {12, 10045}};
  for (const std::string& file : llc_targets("llc_calls")) {
    INFO(file);
    auto prog = compile_or_fail(read_corpus(file));
    HostMemory mem;
    bind_variables(*prog, mem);
    uint32_t* dx = mem.upload(x);
    uint32_t* out = mem.zeros<uint32_t>(6 * n);
    require_success(run(*prog, "calls", {3}, {128}, Args().add(out).add(dx).add(n), mem));
    for (int32_t i = 0; i < n; ++i) {
      const uint32_t v = x[i], ui = static_cast<uint32_t>(i);
      INFO("i = " << i << ", v = " << v);
      const uint32_t op[4] = {v + ui, v - ui, v * ui, (v << 3) ^ ui};
      CHECK(out[6 * i] == op[i & 3]);
      CHECK(out[6 * i + 1] == v * 5 + 1);
      const auto c = static_cast<int8_t>(static_cast<uint8_t>(i) - 50);
      const uint64_t sc = static_cast<uint64_t>(int64_t{static_cast<int32_t>(v)}) << 8;
      const uint64_t ra = sc + static_cast<uint64_t>(int64_t{static_cast<int32_t>(v)} * c);
      const float sb = static_cast<float>(v & 1023) * 0.25f;
      const float b2 = sb * 2.0f;
      const float rb = b2 + static_cast<float>(c);
      CHECK(out[6 * i + 2] == static_cast<uint32_t>(ra));
      CHECK(out[6 * i + 3] == static_cast<uint32_t>(bits_of(rb)));
      const uint32_t u = v & 0x7fffffffu;
      auto hit = table.find(u % 13);
      const uint32_t sw = hit != table.end() ? hit->second : 0u - u % 13;
      CHECK(out[6 * i + 4] == digit_sum(u) + sw);
      const uint32_t m1 = (v * ui + v) ^ 0x55u;
      const uint32_t m2 = std::min(v, 7 * ui);
      CHECK(out[6 * i + 5] == (walk_reference(v) ^ m1 ^ m2));
    }
  }
}

TEST_CASE(
    "corpus: llc 128-bit integers, 8/16-bit globals, const/local/shared/generic spaces, "
    "pointer initializers",
    "[ptx][corpus][llvm]") {
  using u128 = unsigned __int128;
  using s128 = __int128;
  const int32_t n = 200, block = 64, grid = 4;
  Rng rng(53);
  std::vector<uint64_t> x(2 * n);
  for (uint64_t& v : x) v = (uint64_t{rng.next()} << 32) | rng.next();
  const uint64_t edge[] = {0,  0, ~uint64_t{0},     ~uint64_t{0}, uint64_t{1} << 63, 127, 64,
                           63, 1, uint64_t{1} << 63};
  std::copy(std::begin(edge), std::end(edge), x.begin());
  const int64_t bytes[16] = {1, -1, 127, -128, 5, -5, 16, -16, 0, 2, -2, 64, -64, 3, -3, 17};
  const int64_t half16[8] = {1, -1, 32767, -32768, 300, -300, 12345, -2};
  const int64_t weights[4] = {7, -11, 1099511627776, -3};
  const int64_t through_ptrs[2] = {123456789, weights[2]};
  const int64_t weakcell = 5;
  for (const std::string& file : llc_targets("llc_wide")) {
    INFO(file);
    auto prog = compile_or_fail(read_corpus(file));
    HostMemory mem;
    bind_variables(*prog, mem);
    uint64_t* dx = mem.upload(x);
    uint64_t* out = mem.zeros<uint64_t>(4 * n);
    require_success(run(*prog, "wide", {grid}, {block}, Args().add(out).add(dx).add(n), mem));
    for (int32_t i = 0; i < n; ++i) {
      const uint64_t a = x[2 * i], b = x[2 * i + 1];
      INFO("i = " << i << ", a = " << a << ", b = " << b);
      const u128 za = a, zb = b;
      const auto sa = static_cast<s128>(static_cast<int64_t>(a));
      const auto sb = static_cast<s128>(static_cast<int64_t>(b));
      const u128 w =
          za * zb + (static_cast<u128>(sb) << (a & 127)) - static_cast<u128>(sa >> (b & 63));
      CHECK(out[4 * i] == static_cast<uint64_t>(w));
      CHECK(out[4 * i + 1] == static_cast<uint64_t>(w >> 64));
      const u128 ab = (za << 64) | zb, ba = (zb << 64) | za;
      const auto shifted = static_cast<u128>(static_cast<s128>(ab) >> (b & 127));
      CHECK(out[4 * i + 2] == (static_cast<uint64_t>(shifted) ^ (ab < ba ? 1u : 2u)));
      const int64_t loc[4] = {static_cast<int64_t>(a), static_cast<int64_t>(b), bytes[i & 15],
                              half16[i & 7]};
      const int32_t j = i ^ 1;  // the neighbour in the block (block is even)
      const uint64_t neighbour = j < n ? x[2 * j] ^ x[2 * j + 1] : x[0] ^ x[1];
      const uint64_t s =
          static_cast<uint64_t>(bytes[i & 15]) + static_cast<uint64_t>(half16[i & 7]) +
          static_cast<uint64_t>(weights[i & 3]) + static_cast<uint64_t>(through_ptrs[i & 1]) +
          static_cast<uint64_t>(weakcell) + 3 * static_cast<uint64_t>(loc[a & 3]);
      CHECK(out[4 * i + 3] == (s ^ neighbour));
    }
  }
}

TEST_CASE("corpus: clang OpenCL with debug info at -O0/-O1/-O2 (.file, .loc, .debug_* sections)",
          "[ptx][corpus][clang]") {
  const int32_t n = 257;
  Rng rng(59);
  std::vector<int32_t> in(n);
  for (int32_t& v : in) v = static_cast<int32_t>(rng.next() % 200001) - 100000;
  in[0] = 0, in[1] = -100000, in[2] = 100000, in[3] = in[4];
  for (const char* file : {"clang_opencl.O0.ptx", "clang_opencl.O1.ptx", "clang_opencl.O2.ptx"}) {
    INFO(file);
    const std::string text = read_corpus(file);
    REQUIRE(text.find(".loc") != std::string::npos);
    REQUIRE(text.find(".section\t.debug_info") != std::string::npos);
    auto prog = compile_or_fail(text);
    HostMemory mem;
    bind_variables(*prog, mem);
    int32_t* din = mem.upload(in);
    int32_t* out = mem.zeros<int32_t>(n);
    require_success(run(*prog, "rank", {3}, {128}, Args().add(out).add(din).add(n), mem));
    for (int32_t i = 0; i < n; ++i) {
      std::vector<int32_t> v;
      for (int32_t k = 0; k < 5; ++k) {
        const int32_t j = (i + 3 * k) % n;
        v.push_back(in[j] * (1 + j % 5));
      }
      std::sort(v.begin(), v.end());
      INFO("i = " << i);
      CHECK(out[i] == v[2] * 3 + (v[4] - v[0]));
    }
  }
}

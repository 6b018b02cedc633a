// nvcc-compiled tensor-core kernels (kernels/tensor.cu, sm_80): inline mma.sync with ldmatrix
// fragment loads, for s8/u8 (.satfinite), tf32, f64 and f16 accumulators, each against a host
// GEMM. Integers are exact; the float references follow the accumulation docs/emulator.md
// documents (one f32 fma per product in increasing k; f16 D rounded at the end of each mma), so
// they too compare exactly.
#include <bit>
#include <climits>
#include <cmath>

#include "harness.h"

using namespace cusnap::emu::ptx;
using namespace cusnap::emu::ptx::test;

namespace {

std::unique_ptr<Program> tensor_program() { return compile_or_fail(read_ptx("tensor.sm80.ptx")); }

// cvt.rna.tf32.f32 for finite values: round to nearest, ties away, to 10 mantissa bits.
float to_tf32(float x) {
  uint32_t b = std::bit_cast<uint32_t>(x);
  return std::bit_cast<float>((b + 0x1000u) & 0xffffe000u);
}

}  // namespace

TEST_CASE("nvcc int8 GEMM: ldmatrix + mma.sync m16n8k32 s8 x u8 .satfinite",
          "[ptx][kernels][mma]") {
  const int m = 32, n = 24, k = 96;
  Rng rng(5);
  std::vector<int8_t> a(m * k);
  std::vector<uint8_t> bt(n * k);
  std::vector<int> c(m * n);
  for (auto& v : a) v = static_cast<int8_t>(rng.next());
  for (auto& v : bt) v = static_cast<uint8_t>(rng.next());
  for (int i = 0; i < m * n; ++i) {
    const uint32_t r = rng.next();
    c[i] = (i % 7 == 0)   ? INT_MAX - static_cast<int>(r % 1000000)  // saturates upward
           : (i % 7 == 1) ? INT_MIN + static_cast<int>(r % 1000000)
                          : static_cast<int>(r % 100000);
  }
  auto prog = tensor_program();
  HostMemory mem;
  int8_t* da = mem.upload(a);
  uint8_t* db = mem.upload(bt);
  int* dc = mem.upload(c);
  require_success(run(*prog, "igemm_s8u8", {n / 8, m / 16}, {32},
                      Args().add(da).add(db).add(dc).add(n).add(k), mem));
  int saturated = 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      // Saturation applies per mma (k step of 32), as each mma.satfinite clamps its own D.
      int64_t acc = c[i * n + j];
      for (int k0 = 0; k0 < k; k0 += 32) {
        for (int p = k0; p < k0 + 32; ++p) acc += int64_t{a[i * k + p]} * bt[j * k + p];
        acc = std::min<int64_t>(std::max<int64_t>(acc, INT_MIN), INT_MAX);
      }
      saturated += acc == INT_MAX || acc == INT_MIN;
      INFO(i << "," << j);
      REQUIRE(dc[i * n + j] == acc);
    }
  CHECK(saturated > 0);
}

TEST_CASE("nvcc tf32 GEMM: cvt.rna.tf32 + mma.sync m16n8k8", "[ptx][kernels][mma]") {
  const int m = 32, n = 16, k = 64;
  Rng rng(6);
  std::vector<float> a(m * k), b(k * n);
  for (auto& v : a) v = rng.uniform() * 2 - 1;
  for (auto& v : b) v = rng.uniform() * 2 - 1;
  auto prog = tensor_program();
  HostMemory mem;
  float* da = mem.upload(a);
  float* db = mem.upload(b);
  float* dc = mem.zeros<float>(m * n);
  require_success(run(*prog, "sgemm_tf32", {n / 8, m / 16}, {32},
                      Args().add(da).add(db).add(dc).add(n).add(k), mem));
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float acc = 0;
      for (int p = 0; p < k; ++p)
        acc = std::fmaf(to_tf32(a[i * k + p]), to_tf32(b[p * n + j]), acc);
      INFO(i << "," << j);
      REQUIRE(std::bit_cast<uint32_t>(dc[i * n + j]) == std::bit_cast<uint32_t>(acc));
    }
}

TEST_CASE("nvcc f64 GEMM: mma.sync m8n8k4", "[ptx][kernels][mma]") {
  const int m = 16, n = 24, k = 40;
  Rng rng(7);
  std::vector<double> a(m * k), b(k * n), c(m * n);
  for (auto& v : a) v = rng.uniform() * 2 - 1 + rng.uniform() * 1e-9;
  for (auto& v : b) v = rng.uniform() * 2 - 1 + rng.uniform() * 1e-9;
  for (auto& v : c) v = rng.uniform();
  auto prog = tensor_program();
  HostMemory mem;
  double* da = mem.upload(a);
  double* db = mem.upload(b);
  double* dc = mem.upload(c);
  require_success(run(*prog, "dgemm_mma", {n / 8, m / 8}, {32},
                      Args().add(da).add(db).add(dc).add(n).add(k), mem));
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double acc = c[i * n + j];
      for (int p = 0; p < k; ++p) acc = std::fma(a[i * k + p], b[p * n + j], acc);
      INFO(i << "," << j);
      REQUIRE(dc[i * n + j] == acc);
    }
}

TEST_CASE("nvcc f16-accumulator GEMM: ldmatrix.x2, ldmatrix.x1.trans, mma.sync m16n8k8 f16",
          "[ptx][kernels][mma]") {
  const int m = 32, n = 16, k = 48;
  Rng rng(8);
  std::vector<_Float16> a(m * k), b(k * n);
  for (auto& v : a) v = static_cast<_Float16>(rng.uniform() * 2 - 1);
  for (auto& v : b) v = static_cast<_Float16>(rng.uniform() * 2 - 1);
  auto prog = tensor_program();
  HostMemory mem;
  auto* da = mem.upload(a);
  auto* db = mem.upload(b);
  auto* dc = mem.zeros<_Float16>(m * n);
  require_success(run(*prog, "hgemm_f16acc", {n / 8, m / 16}, {32},
                      Args().add(da).add(db).add(dc).add(n).add(k), mem));
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      _Float16 acc = 0;
      for (int k0 = 0; k0 < k; k0 += 8) {
        float s = static_cast<float>(acc);
        for (int p = k0; p < k0 + 8; ++p)
          s = std::fmaf(static_cast<float>(a[i * k + p]), static_cast<float>(b[p * n + j]), s);
        acc = static_cast<_Float16>(s);
      }
      INFO(i << "," << j);
      REQUIRE(std::bit_cast<uint16_t>(dc[i * n + j]) == std::bit_cast<uint16_t>(acc));
    }
}

namespace {

// WMMA: host matrices in double (exact values of the element type), laid out with the kernel's
// layouts and leading dimensions; D = alpha * (A B + C) with the documented accumulation.
enum class El { kF16, kBF16, kTF32, kS8, kF64, kF32, kS32 };

size_t el_size(El e) {
  switch (e) {
    case El::kF16:
    case El::kBF16:
      return 2;
    case El::kS8:
      return 1;
    case El::kF64:
      return 8;
    default:
      return 4;
  }
}

// A random value exact in the element type, and its encoding.
double random_value(El e, Rng& rng) {
  switch (e) {
    case El::kS8:
      return static_cast<int8_t>(rng.next());
    case El::kS32:
      return static_cast<int32_t>(rng.next() % 200001) - 100000;
    case El::kBF16:
      return std::ldexp(static_cast<double>(static_cast<int>(rng.next() % 255) - 127), -7);
    case El::kF16:
      return std::ldexp(static_cast<double>(static_cast<int>(rng.next() % 2047) - 1023), -10);
    default:
      return rng.uniform() * 2 - 1 + std::ldexp(rng.uniform(), -20);
  }
}

void encode(El e, double v, uint8_t* p) {
  switch (e) {
    case El::kF16: {
      const _Float16 h = static_cast<_Float16>(v);
      std::memcpy(p, &h, 2);
      break;
    }
    case El::kBF16: {
      const uint16_t h =
          static_cast<uint16_t>(std::bit_cast<uint32_t>(static_cast<float>(v)) >> 16);
      std::memcpy(p, &h, 2);
      break;
    }
    case El::kS8:
      *reinterpret_cast<int8_t*>(p) = static_cast<int8_t>(v);
      break;
    case El::kS32: {
      const int32_t i = static_cast<int32_t>(v);
      std::memcpy(p, &i, 4);
      break;
    }
    case El::kF64:
      std::memcpy(p, &v, 8);
      break;
    default: {
      const float f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
    }
  }
}

double decode(El e, const uint8_t* p) {
  switch (e) {
    case El::kF16: {
      _Float16 h;
      std::memcpy(&h, p, 2);
      return static_cast<double>(h);
    }
    case El::kS32: {
      int32_t i;
      std::memcpy(&i, p, 4);
      return i;
    }
    case El::kF64: {
      double d;
      std::memcpy(&d, p, 8);
      return d;
    }
    default: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
  }
}

struct WmmaCase {
  const char* kernel;
  int m, n, k;
  El in, acc;
  bool a_col, b_col, c_col;
};

void run_wmma(const WmmaCase& wc) {
  INFO(wc.kernel);
  const int lda = (wc.a_col ? wc.m : wc.k) + 8, ldb = (wc.b_col ? wc.k : wc.n) + 8;
  const int ldc = (wc.c_col ? wc.m : wc.n) + 4;
  Rng rng(static_cast<uint32_t>(wc.m * 131 + wc.n * 7 + wc.k));
  std::vector<double> A(wc.m * wc.k), B(wc.k * wc.n), C(wc.m * wc.n);
  for (auto& v : A) v = random_value(wc.in, rng);
  for (auto& v : B) v = random_value(wc.in, rng);
  for (auto& v : C) v = random_value(wc.acc == El::kF32 ? El::kF16 : wc.acc, rng);
  const size_t ei = el_size(wc.in), ea = el_size(wc.acc);
  const size_t c_elems = static_cast<size_t>(ldc) * (wc.c_col ? wc.n : wc.m);
  std::vector<uint8_t> a_bytes(static_cast<size_t>(lda) * (wc.a_col ? wc.k : wc.m) * ei);
  std::vector<uint8_t> b_bytes(static_cast<size_t>(ldb) * (wc.b_col ? wc.n : wc.k) * ei);
  std::vector<uint8_t> c_bytes(c_elems * ea);
  for (int r = 0; r < wc.m; ++r)
    for (int q = 0; q < wc.k; ++q)
      encode(wc.in, A[r * wc.k + q], &a_bytes[(wc.a_col ? q * lda + r : r * lda + q) * ei]);
  for (int r = 0; r < wc.k; ++r)
    for (int q = 0; q < wc.n; ++q)
      encode(wc.in, B[r * wc.n + q], &b_bytes[(wc.b_col ? q * ldb + r : r * ldb + q) * ei]);
  auto c_at = [&](int r, int q) { return (wc.c_col ? q * ldc + r : r * ldc + q) * ea; };
  for (int r = 0; r < wc.m; ++r)
    for (int q = 0; q < wc.n; ++q) encode(wc.acc, C[r * wc.n + q], &c_bytes[c_at(r, q)]);
  HostMemory mem;
  auto* da = mem.upload(a_bytes);
  auto* db = mem.upload(b_bytes);
  auto* dc = mem.upload(c_bytes);
  std::vector<uint8_t> sentinel(c_bytes.size(), 0x5a);
  auto* dd = mem.upload(sentinel);
  auto prog = compile_or_fail(read_ptx("wmma.sm80.ptx"));
  Args args;
  args.add(da).add(db).add(dc).add(dd).add(lda).add(ldb).add(ldc);
  if (wc.acc == El::kF32) args.add(1.5f);
  if (wc.acc == El::kF64) args.add(1.5);
  if (wc.acc == El::kS32) args.add(3);
  if (wc.acc == El::kF16) args.add(static_cast<_Float16>(1.5));
  require_success(run(*prog, wc.kernel, {1}, {32}, args, mem));
  for (int r = 0; r < wc.m; ++r)
    for (int q = 0; q < wc.n; ++q) {
      double want;
      const double c0 = C[r * wc.n + q];
      if (wc.acc == El::kS32) {
        int64_t s = static_cast<int64_t>(c0);
        for (int p = 0; p < wc.k; ++p)
          s += static_cast<int64_t>(A[r * wc.k + p]) * static_cast<int64_t>(B[p * wc.n + q]);
        want = static_cast<int32_t>(static_cast<uint32_t>(s) * 3u);
      } else if (wc.acc == El::kF64) {
        double s = c0;
        for (int p = 0; p < wc.k; ++p) s = std::fma(A[r * wc.k + p], B[p * wc.n + q], s);
        want = s * 1.5;
      } else {
        auto in = [&](double v) {
          return wc.in == El::kTF32 ? to_tf32(static_cast<float>(v)) : static_cast<float>(v);
        };
        float s = static_cast<float>(c0);
        for (int p = 0; p < wc.k; ++p) s = std::fmaf(in(A[r * wc.k + p]), in(B[p * wc.n + q]), s);
        want = wc.acc == El::kF16 ? static_cast<double>(static_cast<_Float16>(
                                        static_cast<float>(static_cast<_Float16>(s)) * 1.5f))
                                  : static_cast<double>(s * 1.5f);
      }
      INFO(r << "," << q);
      REQUIRE(decode(wc.acc, dd + c_at(r, q)) == want);
    }
  // Padding between the rows (columns) of D is untouched.
  if (!wc.c_col) CHECK(dd[c_at(0, wc.n)] == 0x5a);
}

}  // namespace

TEST_CASE("nvcc WMMA (mma.h): load, mma, elementwise scale, store against a host GEMM",
          "[ptx][kernels][wmma]") {
  const WmmaCase cases[] = {
      {"wmma_f16_16x16x16", 16, 16, 16, El::kF16, El::kF32, false, true, false},
      {"wmma_f16_32x8x16", 32, 8, 16, El::kF16, El::kF16, true, false, true},
      {"wmma_bf16_8x32x16", 8, 32, 16, El::kBF16, El::kF32, false, false, true},
      {"wmma_s8_16x16x16", 16, 16, 16, El::kS8, El::kS32, false, true, false},
      {"wmma_f64_8x8x4", 8, 8, 4, El::kF64, El::kF64, true, false, false},
      {"wmma_tf32_16x16x8", 16, 16, 8, El::kTF32, El::kF32, false, false, false},
  };
  for (const WmmaCase& wc : cases) run_wmma(wc);
}

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

TEST_CASE("nvcc int8 GEMM: ldmatrix + mma.sync m16n8k32 s8 x u8 .satfinite", "[ptx][kernels][mma]") {
  const int m = 32, n = 24, k = 96;
  Rng rng(5);
  std::vector<int8_t> a(m * k);
  std::vector<uint8_t> bt(n * k);
  std::vector<int> c(m * n);
  for (auto& v : a) v = static_cast<int8_t>(rng.next());
  for (auto& v : bt) v = static_cast<uint8_t>(rng.next());
  for (int i = 0; i < m * n; ++i) {
    const uint32_t r = rng.next();
    c[i] = (i % 7 == 0) ? INT_MAX - static_cast<int>(r % 1000000)  // saturates upward
           : (i % 7 == 1) ? INT_MIN + static_cast<int>(r % 1000000)
                          : static_cast<int>(r % 100000);
  }
  auto prog = tensor_program();
  HostMemory mem;
  int8_t* da = mem.upload(a);
  uint8_t* db = mem.upload(bt);
  int* dc = mem.upload(c);
  require_success(run(*prog, "igemm_s8u8", {n / 8, m / 16}, {32}, Args().add(da).add(db).add(dc).add(n).add(k), mem));
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
  require_success(run(*prog, "sgemm_tf32", {n / 8, m / 16}, {32}, Args().add(da).add(db).add(dc).add(n).add(k), mem));
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float acc = 0;
      for (int p = 0; p < k; ++p) acc = std::fmaf(to_tf32(a[i * k + p]), to_tf32(b[p * n + j]), acc);
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
  require_success(run(*prog, "dgemm_mma", {n / 8, m / 8}, {32}, Args().add(da).add(db).add(dc).add(n).add(k), mem));
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
  require_success(run(*prog, "hgemm_f16acc", {n / 8, m / 16}, {32}, Args().add(da).add(db).add(dc).add(n).add(k), mem));
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

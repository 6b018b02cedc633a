// half_precision: __half / __half2 multiply, fma, add, divide and float/int conversions. The host
// reference rounds to half precision the way the hardware does (round to nearest even), so
// conversions compare exactly; arithmetic is allowed one half-precision ulp (and division,
// which is approximate, two).
#include "sample_common.h"

CUSNAP_EMBEDDED_IMAGE(half_kernels)

using namespace cusnap::samples;

namespace {

// Rounds to the nearest binary16 value (ties to even), subnormals included. Inputs are well
// inside the half range, so no overflow handling is needed.
double round_to_half(double x) {
  if (x == 0.0) return x;
  int exponent;
  std::frexp(x, &exponent);                    // x = m * 2^exponent, 0.5 <= |m| < 1
  int quantum = std::max(exponent - 11, -24);  // 11 significant bits; 2^-24 is the smallest step
  return std::nearbyint(std::ldexp(x, -quantum)) * std::ldexp(1.0, quantum);
}

}  // namespace

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv, 4096, " (pairs)");
  const size_t pairs = options.size;
  if (pairs > 0x01ffffff) fail_usage("--size must be below 2^25");

  std::vector<float> a(2 * pairs), b(2 * pairs);
  Lcg rng(12);
  for (size_t i = 0; i < 2 * pairs; ++i) {
    a[i] = rng.next_float(-4.0f, 4.0f);
    float magnitude = rng.next_float(0.5f, 4.0f);  // keeps divisors away from zero
    b[i] = (rng.next_u32() & 1) ? magnitude : -magnitude;
  }
  std::vector<float> reference_f(3 * pairs);
  std::vector<int> reference_i(2 * pairs);
  for (size_t p = 0; p < pairs; ++p) {
    for (int lane = 0; lane < 2; ++lane) {
      double ha = round_to_half(a[2 * p + lane]), hb = round_to_half(b[2 * p + lane]);
      double product = round_to_half(ha * hb);      // exact in double, one rounding
      double fused = round_to_half(ha * hb + 0.5);  // fma: one rounding
      reference_f[3 * p + lane] = float(round_to_half(product + fused));
    }
    double quotient = round_to_half(round_to_half(a[2 * p]) / round_to_half(b[2 * p + 1]));
    reference_f[3 * p + 2] = float(quotient);
    reference_i[2 * p] = int(std::nearbyint(round_to_half(double(a[2 * p] * 64.0f))));
    reference_i[2 * p + 1] = int(round_to_half(double(int((37 * p) % 6000) - 3000)));
  }
  maybe_inject_error(options, reference_f);

  PrimaryContext context;
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, half_kernels_image().data));
  CUfunction kernel;
  CU_CHECK(cuModuleGetFunction(&kernel, module, "half_ops"));

  CUdeviceptr d_a, d_b, d_f, d_i;
  CU_CHECK(cuMemAlloc(&d_a, a.size() * sizeof(float)));
  CU_CHECK(cuMemAlloc(&d_b, b.size() * sizeof(float)));
  CU_CHECK(cuMemAlloc(&d_f, reference_f.size() * sizeof(float)));
  CU_CHECK(cuMemAlloc(&d_i, reference_i.size() * sizeof(int)));
  CU_CHECK(cuMemcpyHtoD(d_a, a.data(), a.size() * sizeof(float)));
  CU_CHECK(cuMemcpyHtoD(d_b, b.data(), b.size() * sizeof(float)));
  int count = static_cast<int>(pairs);
  void* params[] = {&d_a, &d_b, &d_f, &d_i, &count};
  CU_CHECK(
      cuLaunchKernel(kernel, blocks_for(pairs, 128), 1, 1, 128, 1, 1, 0, nullptr, params, nullptr));
  std::vector<float> found_f(reference_f.size());
  std::vector<int> found_i(reference_i.size());
  CU_CHECK(cuMemcpyDtoH(found_f.data(), d_f, found_f.size() * sizeof(float)));
  CU_CHECK(cuMemcpyDtoH(found_i.data(), d_i, found_i.size() * sizeof(int)));

  // One half ulp relative is 2^-10; the division is approximate, so allow twice that.
  double max_error = 0.0;
  bool ok = compare_close(reference_f, found_f, 1e-7, 2.0 / 1024.0, &max_error) &&
            compare_exact(reference_i, found_i);

  CU_CHECK(cuMemFree(d_a));
  CU_CHECK(cuMemFree(d_b));
  CU_CHECK(cuMemFree(d_f));
  CU_CHECK(cuMemFree(d_i));
  CU_CHECK(cuModuleUnload(module));
  char detail[128];
  std::snprintf(detail, sizeof(detail), "%zu half2 pairs, max abs error %.3g, conversions exact",
                pairs, max_error);
  return finish("half_precision", ok, detail);
}

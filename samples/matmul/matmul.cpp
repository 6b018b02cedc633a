// matmul: tiled shared-memory SGEMM on a 2-D grid of 16x16 blocks, with sizes that are not
// multiples of the tile. Compared against a double-precision host product with a tolerance
// (the device accumulates in float with fused multiply-adds).
#include "gemm_common.h"

CUSNAP_EMBEDDED_IMAGE(matmul_kernels)

using namespace cusnap::samples;

int main(int argc, char** argv) {
  // --size scales m; n and k follow so that the default stays small for the emulator.
  Options options = parse_options(argc, argv, 72, " (m; n = m + 13, k = m + 25)");
  const size_t m = options.size, n = m + 13, k = m + 25;
  if (m > 16384) fail_usage("--size must be at most 16384");

  std::vector<float> a(m * k), b(k * n);
  Lcg rng(4);
  for (float& v : a) v = rng.next_float(-1.0f, 1.0f);
  for (float& v : b) v = rng.next_float(-1.0f, 1.0f);
  std::vector<float> reference = host_gemm(a, b, m, n, k);
  maybe_inject_error(options, reference);

  PrimaryContext context;
  std::vector<float> c = run_gemm(matmul_kernels_image(), "sgemm_tiled", a, b, m, n, k,
                                  {blocks_for(n, 16), blocks_for(m, 16), 16, 16});

  // Float accumulation of k products of magnitude <= 1: the worst-case rounding error grows like
  // k * 2^-24 * (partial sums of a few units); 1e-5 * k stays above that and far below the O(1)
  // error of a dropped or misplaced tile.
  const double tolerance = 1e-5 * double(k);
  double max_error = 0.0;
  bool ok = compare_close(reference, c, tolerance, 0.0, &max_error);
  char detail[160];
  std::snprintf(detail, sizeof(detail), "%zux%zux%zu, max abs error %.3g (tolerance %.3g)", m, n, k,
                max_error, tolerance);
  return finish("matmul", ok, detail);
}

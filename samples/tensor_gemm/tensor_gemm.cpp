// tensor_gemm: an sm_80 tensor-core GEMM (ldmatrix + mma.sync m16n8k16 f16 -> f32) on a 2-D grid
// of 32x32 tiles, with sizes that are not tile multiples. The inputs are multiples of 1/64 in
// [-1, 1], exact in f16, so every product and partial sum is exact in f32 (k <= 4096): the result
// must equal the host GEMM bit for bit, whatever order the tensor cores accumulate in.
#include <cmath>

#include "gemm_common.h"

CUSNAP_EMBEDDED_IMAGE(tensor_gemm_kernels)

using namespace cusnap::samples;

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv, 80, " (m; n = m + 24, k = m + 40)");
  const size_t m = options.size, n = m + 24, k = m + 40;
  if (k > 4096) fail_usage("--size must be at most 4056 (exact f32 sums need k <= 4096)");

  std::vector<float> a(m * k), b(k * n);
  Lcg rng(11);
  auto sixty_fourths = [&] { return std::round(rng.next_float(-64.0f, 64.0f)) / 64.0f; };
  for (float& v : a) v = sixty_fourths();
  for (float& v : b) v = sixty_fourths();
  std::vector<float> reference = host_gemm(a, b, m, n, k);
  maybe_inject_error(options, reference);

  PrimaryContext context;
  std::vector<float> c = run_gemm(tensor_gemm_kernels_image(), "hgemm_mma", a, b, m, n, k,
                                  {blocks_for(n, 32), blocks_for(m, 32), 128, 1});
  double max_error = 0.0;
  bool ok = compare_close(reference, c, 0.0, 0.0, &max_error);
  char detail[160];
  std::snprintf(detail, sizeof(detail), "%zux%zux%zu f16 mma.sync, max abs error %.3g (exact)", m,
                n, k, max_error);
  return finish("tensor_gemm", ok, detail);
}

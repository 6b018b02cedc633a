// tma_gemm: the sm_90a GEMM as Hopper kernels are written: the driver encodes two tensor maps
// (cuTensorMapEncodeTiled, f16, 64x64 boxes, 128B swizzle) that the kernel takes as
// __grid_constant__ CUtensorMap parameters; per 64-wide k stage one thread loads both boxes with
// cp.async.bulk.tensor onto an mbarrier and the warpgroup multiplies them with
// wgmma.mma_async m64n64k16 (f16 -> f32). Sizes are not tile multiples: the tensor copies fill
// what lies outside A and B with zeros. Inputs are multiples of 1/64 in [-1, 1], exact in f16, so
// the result must equal the host GEMM bit for bit. A tensor map's bytes are the driver's private
// encoding: a capture of this program replays only if the replay encodes the maps again on its
// own driver (docs/replay.md, "Tensor maps").
#include <cstdint>
#include <cstring>

#include "gemm_common.h"

CUSNAP_EMBEDDED_IMAGE(tma_gemm_kernels)

namespace {

uint16_t to_half(float v) {
  const _Float16 h = static_cast<_Float16>(v);
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
}

// A rows x cols f16 matrix, row-major (cols contiguous), as a 2-D map of 64 x 64 boxes.
void encode(CUtensorMap* map, CUdeviceptr base, size_t rows, size_t cols) {
  const cuuint64_t dims[2] = {cols, rows};
  const cuuint64_t strides[1] = {cols * 2};
  const cuuint32_t box[2] = {64, 64}, element_strides[2] = {1, 1};
  CU_CHECK(cuTensorMapEncodeTiled(
      map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, reinterpret_cast<void*>(base), dims, strides, box,
      element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
}

}  // namespace

int main(int argc, char** argv) {
  using namespace cusnap::samples;
  Options options = parse_options(argc, argv, 80, " (m, a multiple of 8; n = m + 24, k = m + 40)");
  const size_t m = options.size, n = m + 24, k = m + 40;
  if (m % 8 != 0)
    fail_usage(
        "--size must be a multiple of 8 (a tensor map's row pitch, k * 2 "
        "bytes, must be a multiple of 16)");
  if (k > 4096) fail_usage("--size must be at most 4056 (exact f32 sums need k <= 4096)");
  // A is m x k; B is given transposed (n x k), both K-major as wgmma reads them.
  std::vector<float> a(m * k), bt(n * k), b(k * n);
  Lcg rng(23);
  auto sixty_fourths = [&] { return std::round(rng.next_float(-64.0f, 64.0f)) / 64.0f; };
  for (float& v : a) v = sixty_fourths();
  for (float& v : bt) v = sixty_fourths();
  for (size_t j = 0; j < n; ++j)
    for (size_t p = 0; p < k; ++p) b[p * n + j] = bt[j * k + p];
  std::vector<float> reference = host_gemm(a, b, m, n, k);
  maybe_inject_error(options, reference);
  std::vector<uint16_t> ha(a.size()), hbt(bt.size());
  for (size_t i = 0; i < a.size(); ++i) ha[i] = to_half(a[i]);
  for (size_t i = 0; i < bt.size(); ++i) hbt[i] = to_half(bt[i]);

  PrimaryContext context;
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, tma_gemm_kernels_image().data));
  CUfunction kernel;
  CU_CHECK(cuModuleGetFunction(&kernel, module, "tma_gemm"));
  CUdeviceptr d_a, d_b, d_c;
  CU_CHECK(cuMemAlloc(&d_a, ha.size() * 2));
  CU_CHECK(cuMemAlloc(&d_b, hbt.size() * 2));
  CU_CHECK(cuMemAlloc(&d_c, m * n * sizeof(float)));
  CU_CHECK(cuMemcpyHtoD(d_a, ha.data(), ha.size() * 2));
  CU_CHECK(cuMemcpyHtoD(d_b, hbt.data(), hbt.size() * 2));
  CU_CHECK(cuMemsetD32(d_c, 0x7fc00000u, m * n));  // NaN: an element never written fails
  alignas(64) CUtensorMap a_map, b_map;
  encode(&a_map, d_a, m, k);
  encode(&b_map, d_b, n, k);
  int im = int(m), in = int(n), ik = int(k);
  void* params[] = {&a_map, &b_map, &d_c, &im, &in, &ik};
  CU_CHECK(cuLaunchKernel(kernel, blocks_for(n, 64), blocks_for(m, 64), 1, 128, 1, 1, 0, nullptr,
                          params, nullptr));
  CU_CHECK(cuCtxSynchronize());
  std::vector<float> c(m * n);
  CU_CHECK(cuMemcpyDtoH(c.data(), d_c, c.size() * sizeof(float)));
  CU_CHECK(cuMemFree(d_a));
  CU_CHECK(cuMemFree(d_b));
  CU_CHECK(cuMemFree(d_c));
  CU_CHECK(cuModuleUnload(module));

  double max_error = 0.0;
  bool ok = compare_close(reference, c, 0.0, 0.0, &max_error);
  char detail[160];
  std::snprintf(detail, sizeof(detail), "%zux%zux%zu f16 TMA + wgmma, max abs error %.3g (exact)",
                m, n, k, max_error);
  return finish("tma_gemm", ok, detail);
}

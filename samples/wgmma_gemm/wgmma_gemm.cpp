// wgmma_gemm: an sm_90a warpgroup tensor-core GEMM (wgmma.mma_async m64n64k16 f16 -> f32 from
// 128B-swizzled shared memory) on a 2-D grid of 64x64 tiles, with sizes that are not tile
// multiples. The inputs are multiples of 1/64 in [-1, 1], exact in f16, so every product and
// partial sum is exact in f32 (k <= 4096): the result must equal the host GEMM bit for bit,
// whatever order the tensor cores accumulate in.
#include "gemm_common.h"

CUSNAP_EMBEDDED_IMAGE(wgmma_gemm_kernels)

int main(int argc, char** argv) {
  return cusnap::samples::exact_f16_gemm_sample(
      argc, argv, "wgmma_gemm", wgmma_gemm_kernels_image(), "wgmma_gemm", 64, 128, 17, "f16 wgmma");
}

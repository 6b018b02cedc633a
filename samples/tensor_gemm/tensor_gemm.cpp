// tensor_gemm: an sm_80 tensor-core GEMM (ldmatrix + mma.sync m16n8k16 f16 -> f32) on a 2-D grid
// of 32x32 tiles, with sizes that are not tile multiples. The inputs are multiples of 1/64 in
// [-1, 1], exact in f16, so every product and partial sum is exact in f32 (k <= 4096): the result
// must equal the host GEMM bit for bit, whatever order the tensor cores accumulate in.
#include "gemm_common.h"

CUSNAP_EMBEDDED_IMAGE(tensor_gemm_kernels)

int main(int argc, char** argv) {
  return cusnap::samples::exact_f16_gemm_sample(argc, argv, "tensor_gemm",
                                                tensor_gemm_kernels_image(), "hgemm_mma", 32, 128,
                                                11, "f16 mma.sync");
}

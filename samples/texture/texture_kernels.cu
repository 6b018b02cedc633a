// Samples a 2-D float texture at per-thread normalized coordinates (tex2D on a texture object).
#include <cuda_runtime.h>

extern "C" __global__ void sample(cudaTextureObject_t texture, const float2* coords, float* out,
                                  int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex2D<float>(texture, coords[i].x, coords[i].y);
}

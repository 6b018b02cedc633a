// Texture and surface kernels for the emulator's texture tests (test_textures.cpp): CUDA C++
// texture/surface object intrinsics, plus inline PTX for the queries CUDA C++ does not expose.
#include <cuda_runtime.h>

extern "C" __global__ void sample2d(cudaTextureObject_t t, float4* out, const float* xs,
                                    const float* ys, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex2D<float4>(t, xs[i], ys[i]);
}

extern "C" __global__ void sample1d(cudaTextureObject_t t, float* out, const float* xs, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1D<float>(t, xs[i]);
}

extern "C" __global__ void fetch1d(cudaTextureObject_t t, int4* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1Dfetch<int4>(t, i - 2);  // two indices before and after the range
}

extern "C" __global__ void sample3d(cudaTextureObject_t t, float* out, const float* xs,
                                    const float* ys, const float* zs, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex3D<float>(t, xs[i], ys[i], zs[i]);
}

extern "C" __global__ void sample_layered(cudaTextureObject_t t, float* out, const float* xs,
                                          const float* ys, int layer, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex2DLayered<float>(t, xs[i], ys[i], layer);
}

extern "C" __global__ void sample_lod(cudaTextureObject_t t, float* out, const float* xs,
                                      const float* ys, float lod, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex2DLod<float>(t, xs[i], ys[i], lod);
}

extern "C" __global__ void gather(cudaTextureObject_t t, float4* out, const float* xs,
                                  const float* ys, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex2Dgather<float4>(t, xs[i], ys[i], 1);
}

extern "C" __global__ void sample2d_int(cudaTextureObject_t t, uchar4* out, const float* xs,
                                        const float* ys, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex2D<uchar4>(t, xs[i], ys[i]);
}

// Each thread adds 1 to the x channel of its uchar4 texel, then copies the texel as a 32-bit
// word one row down with clamp (the last row clamps onto itself) and zero (reads past the right
// edge give 0) boundary modes.
extern "C" __global__ void surface_rw(cudaSurfaceObject_t s, unsigned* edge) {
  int x = threadIdx.x, y = blockIdx.x;
  uchar4 v;
  surf2Dread(&v, s, x * 4, y);
  v.x += 1;
  surf2Dwrite(v, s, x * 4, y);
  unsigned past = 1234;
  surf2Dread(&past, s, (x + blockDim.x) * 4, y, cudaBoundaryModeZero);
  edge[y * blockDim.x + x] = past;
}

extern "C" __global__ void surface_clamp(cudaSurfaceObject_t s, int x, int y, unsigned* out) {
  unsigned v;
  surf2Dread(&v, s, x * 4, y, cudaBoundaryModeClamp);
  *out = v;
  surf2Dwrite(v + 1000u, s, x * 4, y, cudaBoundaryModeClamp);
}

extern "C" __global__ void surface_trap(cudaSurfaceObject_t s, int x) {
  unsigned v = 7;
  surf2Dwrite(v, s, x * 4, 0);  // cudaBoundaryModeTrap
}

extern "C" __global__ void queries(cudaTextureObject_t t, cudaSurfaceObject_t s, unsigned* out) {
  unsigned w, h, levels, sw, sh, is_tex, is_surf, tex_is_surf;
  asm("txq.width.b32 %0, [%1];" : "=r"(w) : "l"(t));
  asm("txq.height.b32 %0, [%1];" : "=r"(h) : "l"(t));
  asm("txq.num_mipmap_levels.b32 %0, [%1];" : "=r"(levels) : "l"(t));
  asm("suq.width.b32 %0, [%1];" : "=r"(sw) : "l"(s));
  asm("suq.height.b32 %0, [%1];" : "=r"(sh) : "l"(s));
  asm("{ .reg .pred p; istypep.texref p, %1; selp.u32 %0, 1, 0, p; }" : "=r"(is_tex) : "l"(t));
  asm("{ .reg .pred p; istypep.surfref p, %1; selp.u32 %0, 1, 0, p; }" : "=r"(is_surf) : "l"(s));
  asm("{ .reg .pred p; istypep.surfref p, %1; selp.u32 %0, 1, 0, p; }"
      : "=r"(tex_is_surf)
      : "l"(t));
  out[0] = w;
  out[1] = h;
  out[2] = levels;
  out[3] = sw;
  out[4] = sh;
  out[5] = is_tex;
  out[6] = is_surf;
  out[7] = tex_is_surf;
}

// Writes then reads a 2-D surface: `write_texels` stores a value computed from the coordinates with
// surf2Dwrite; `read_back` reads its own texel and its right neighbour (surf2Dread; the last
// column reads past the edge with cudaBoundaryModeZero, which returns 0).
#include <cuda_runtime.h>

extern "C" __global__ void write_texels(cudaSurfaceObject_t surface, int width, int height) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  int2 value = make_int2(x * 1000 + y, x - 7 * y);
  surf2Dwrite(value, surface, x * static_cast<int>(sizeof(int2)), y);
}

extern "C" __global__ void read_back(cudaSurfaceObject_t surface, int width, int height,
                                     int* out) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  int2 own, right;
  surf2Dread(&own, surface, x * static_cast<int>(sizeof(int2)), y);
  surf2Dread(&right, surface, (x + 1) * static_cast<int>(sizeof(int2)), y, cudaBoundaryModeZero);
  out[y * width + x] = own.x + 3 * own.y - right.x;
}

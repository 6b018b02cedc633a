// In-place 2-D and 3-D transforms on pitched memory: rows start `pitch` bytes apart, which is
// wider than the row itself.
extern "C" __global__ void transform_2d(int* image, size_t pitch, int width, int height) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  int* row = reinterpret_cast<int*>(reinterpret_cast<char*>(image) + y * pitch);
  row[x] = row[x] * 2 + x - 3 * y;
}

// `rows_per_slice` rows of `pitch` bytes make one z slice.
extern "C" __global__ void transform_3d(int* volume, size_t pitch, int rows_per_slice, int nx,
                                        int ny, int nz) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  int z = blockIdx.z * blockDim.z + threadIdx.z;
  if (x >= nx || y >= ny || z >= nz) return;
  char* base = reinterpret_cast<char*>(volume) + (static_cast<size_t>(z) * rows_per_slice + y) * pitch;
  int* cell = reinterpret_cast<int*>(base) + x;
  *cell = *cell * 3 + 100 * z;
}

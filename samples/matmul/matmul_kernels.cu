// C (m x n) = A (m x k) * B (k x n), row-major, 16x16 shared-memory tiles. Edges are handled by
// loading zeros, so any m, n, k work.
constexpr int kTile = 16;

extern "C" __global__ void sgemm_tiled(const float* a, const float* b, float* c, int m, int n,
                                       int k) {
  __shared__ float tile_a[kTile][kTile];
  __shared__ float tile_b[kTile][kTile + 1];  // padded: column reads avoid bank conflicts
  const int row = blockIdx.y * kTile + threadIdx.y;
  const int col = blockIdx.x * kTile + threadIdx.x;
  float acc = 0.0f;
  for (int t = 0; t < k; t += kTile) {
    const int ak = t + threadIdx.x;
    const int bk = t + threadIdx.y;
    tile_a[threadIdx.y][threadIdx.x] = (row < m && ak < k) ? a[row * k + ak] : 0.0f;
    tile_b[threadIdx.y][threadIdx.x] = (bk < k && col < n) ? b[bk * n + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kTile; ++i) acc += tile_a[threadIdx.y][i] * tile_b[i][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) c[row * n + col] = acc;
}

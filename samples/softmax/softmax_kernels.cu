// Row-wise softmax, one block per row: a block max reduction, expf of the shifted values, a
// block sum reduction, then the division. expf compiles to ex2.approx, so results are close to,
// not identical with, a host computation.
constexpr int kThreads = 128;

__device__ float block_reduce_max(float value, float* scratch) {
  for (int offset = 16; offset > 0; offset /= 2) value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x / 32] = value;
  __syncthreads();
  value = scratch[0];
  for (int w = 1; w < kThreads / 32; ++w) value = fmaxf(value, scratch[w]);
  __syncthreads();  // scratch is reused by the caller's next reduction
  return value;
}

__device__ float block_reduce_sum(float value, float* scratch) {
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x / 32] = value;
  __syncthreads();
  value = 0.0f;
  for (int w = 0; w < kThreads / 32; ++w) value += scratch[w];
  __syncthreads();
  return value;
}

// Launched with blockDim.x == kThreads and one block per row.
extern "C" __global__ void softmax_rows(const float* in, float* out, int cols) {
  __shared__ float scratch[kThreads / 32];
  const float* row_in = in + static_cast<size_t>(blockIdx.x) * cols;
  float* row_out = out + static_cast<size_t>(blockIdx.x) * cols;
  float row_max = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) row_max = fmaxf(row_max, row_in[c]);
  row_max = block_reduce_max(row_max, scratch);
  float sum = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    float e = expf(row_in[c] - row_max);
    row_out[c] = e;
    sum += e;
  }
  sum = block_reduce_sum(sum, scratch);
  const float inv = 1.0f / sum;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) row_out[c] *= inv;
}

// One block per row: max, sum of exp, normalise (expf compiles to ex2.approx.ftz).
extern "C" __global__ void softmax(const float* in, float* out, double* stats, int cols) {
  extern __shared__ float buf[];
  const float* row = in + (size_t)blockIdx.x * cols;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
  buf[threadIdx.x] = m;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) buf[threadIdx.x] = fmaxf(buf[threadIdx.x], buf[threadIdx.x + s]);
    __syncthreads();
  }
  m = buf[0];
  __syncthreads();
  float sum = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += expf(row[c] - m);
  buf[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
    __syncthreads();
  }
  sum = buf[0];
  for (int c = threadIdx.x; c < cols; c += blockDim.x) out[(size_t)blockIdx.x * cols + c] = expf(row[c] - m) / sum;
  if (threadIdx.x == 0) {
    stats[blockIdx.x * 4 + 0] = log((double)sum) + m;
    stats[blockIdx.x * 4 + 1] = (double)rintf(m * 3.7f) + truncf(m * 2.2f);
    stats[blockIdx.x * 4 + 2] = (double)(int)(m * 100.0f);
    stats[blockIdx.x * 4 + 3] = tanh((double)m * 0.1);
  }
}

// Reductions and atomics: shared-memory tree, warp shuffles, histogram, every atomic op.
extern "C" __global__ void shared_reduce(const float* in, float* out, int n) {
  __shared__ float sdata[256];
  unsigned tid = threadIdx.x;
  unsigned i = blockIdx.x * blockDim.x * 2 + threadIdx.x;
  float v = 0.0f;
  if (i < n) v += in[i];
  if (i + blockDim.x < n) v += in[i + blockDim.x];
  sdata[tid] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) sdata[tid] += sdata[tid + s];
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = sdata[0];
}

extern "C" __global__ void warp_reduce(const float* in, float* out, int* ballots, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? in[i] : 0.0f;
  unsigned ballot = __ballot_sync(0xffffffffu, v > 0.5f);
  bool any = __any_sync(0xffffffffu, v > 0.9f);
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  __shared__ float warp_sums[32];
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    warp_sums[warp] = v;
    ballots[blockIdx.x * 64 + warp * 2] = (int)ballot;
    ballots[blockIdx.x * 64 + warp * 2 + 1] = any;
  }
  __syncthreads();
  if (warp == 0) {
    float s = lane < (blockDim.x + 31) / 32 ? warp_sums[lane] : 0.0f;
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (lane == 0) atomicAdd(out, s);
  }
}

extern "C" __global__ void histogram(const unsigned char* data, unsigned* bins, int n) {
  __shared__ unsigned local[256];
  for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    atomicAdd(&local[data[i]], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += blockDim.x) atomicAdd(&bins[b], local[b]);
}

extern "C" __global__ void all_atomics(int* iv, unsigned* uv, float* fv, double* dv,
                                       unsigned long long* lv, const int* vals, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v = vals[i];
  atomicAdd(&iv[0], v);
  atomicMin(&iv[1], v);
  atomicMax(&iv[2], v);
  atomicAnd(&iv[3], v | 0x10000);
  atomicOr(&iv[4], v & 0xff);
  atomicXor(&iv[5], v);
  atomicInc(&uv[0], 17u);
  atomicDec(&uv[1], 1000u);
  atomicExch(&uv[2], 7u);
  atomicCAS(&iv[6], 0, i + 1);  // exactly one thread wins
  atomicAdd(&fv[0], 0.5f);
  atomicAdd(&dv[0], 0.25);
  atomicAdd(&lv[0], (unsigned long long)v);
}

// The stages of multi_stream: each reads what an earlier stage on another stream wrote, so a
// result is right only if the cross-stream dependencies held. Unsigned arithmetic wraps (exact
// on the host too); each thread loops a few rounds so a stage takes long enough for a missing
// dependency to show.
constexpr int kRounds = 8;

__device__ unsigned mix(unsigned v, unsigned i) {
  for (int r = 0; r < kRounds; ++r) v = v * 1664525u + 1013904223u + i;
  return v;
}

extern "C" __global__ void scale(unsigned* a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = mix(a[i], 1u);
}

extern "C" __global__ void flip(unsigned* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) b[i] = mix(b[i] ^ 0x5a5a5a5au, 2u);
}

extern "C" __global__ void offset(unsigned* c, const unsigned* a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = mix(a[i], static_cast<unsigned>(i));
}

extern "C" __global__ void add_seven(unsigned* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] += 7u;
}

extern "C" __global__ void multiply(unsigned* d, const unsigned* a, const unsigned* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) d[i] = mix(a[i] * b[i], 3u);
}

extern "C" __global__ void combine(unsigned* a, const unsigned* c, const unsigned* d, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = c[i] - d[i];
}

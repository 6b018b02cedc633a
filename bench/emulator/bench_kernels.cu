// Kernels of the emulator benchmark (bench/emulator). Both use explicit __fmaf_rn so that the
// host reference (std::fma in float) is bit-exact whatever nvcc decides about contraction.

// ALU-bound: a long dependent chain per thread of integer hashing (xorshift + LCG) and float
// fused multiply-adds; no memory traffic except one load of the seed and two stores at the end.
extern "C" __global__ void alu_chain(const unsigned* seeds, unsigned* out_hash, float* out_value,
                                     int iterations) {
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned h = seeds[t];
  float x = static_cast<float>(h & 1023u) * (1.0f / 1024.0f);
  float y = 0.5f;
  for (int i = 0; i < iterations; ++i) {
    h ^= h << 13;
    h ^= h >> 17;
    h ^= h << 5;
    h = h * 1664525u + 1013904223u;
    x = __fmaf_rn(x, 0.75f, 0.25f);
    y = __fmaf_rn(y, -0.5f, x);
    x = __fmaf_rn(static_cast<float>(h >> 24), 1.0f / 4096.0f, x);
  }
  out_hash[t] = h;
  out_value[t] = x + y;
}

// Memory-bound: STREAM triad a[i] = s * c[i] + b[i] with a grid-stride loop over n floats.
extern "C" __global__ void triad(float* a, const float* b, const float* c, float s, unsigned long long n) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    a[i] = __fmaf_rn(s, c[i], b[i]);
  }
}

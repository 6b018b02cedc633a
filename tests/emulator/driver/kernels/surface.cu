// Test kernels for the emulator's driver surface (legacy launches, function attributes,
// occupancy, timing). Compiled at test build time with nvcc -ptx.

// Parameters of every size and alignment, for the byte offsets of cuParamSet*: c at 8, d at 16,
// i at 24, f at 28 (natural alignment).
extern "C" __global__ void mixed_args(double* out, char c, double d, int i, float f) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  out[t] = static_cast<double>(c) + d + static_cast<double>(i) * f + t;
}

// Reverses each block's slice through dynamic shared memory (cuFuncSetSharedSize).
extern "C" __global__ void reverse_dynamic(int* data) {
  extern __shared__ int slice[];
  int t = threadIdx.x;
  int base = blockIdx.x * blockDim.x;
  slice[t] = data[base + t];
  __syncthreads();
  data[base + t] = slice[blockDim.x - 1 - t];
}

__constant__ float coefficients[64];
__constant__ int offsets_table[16];

// Static shared memory (4 KiB + 256 B), a local array indexed at run time (a local depot), and
// the module's __constant__ data (64 * 4 + 16 * 4 bytes).
extern "C" __global__ void __launch_bounds__(256) resources(float* out, int k) {
  __shared__ float tile[1024];
  __shared__ int extra[64];
  float scratch[32];
  int t = threadIdx.x;
  for (int j = 0; j < 32; ++j) scratch[j] = coefficients[(t + j) & 63] * j;
  tile[t] = scratch[k & 31];
  extra[t & 63] = offsets_table[t & 15];
  __syncthreads();
  out[blockIdx.x * blockDim.x + t] = tile[(t + 1) % blockDim.x] + extra[(t + 3) & 63];
}

// A trivial kernel: few registers, no shared memory.
extern "C" __global__ void tiny(int* out) { out[threadIdx.x] = threadIdx.x; }

// Sleeps `rounds` times `ns` nanoseconds per thread (__nanosleep), then stores the
// %globaltimer difference it observed.
extern "C" __global__ void sleepy(unsigned long long* elapsed, int rounds, unsigned ns) {
  unsigned long long start, end;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  for (int r = 0; r < rounds; ++r) __nanosleep(ns);
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(end));
  elapsed[blockIdx.x * blockDim.x + threadIdx.x] = end - start;
}

// Spins until %globaltimer has advanced by `ns` (the other common way to wait in a kernel).
extern "C" __global__ void spin_globaltimer(unsigned long long* elapsed, unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
  elapsed[threadIdx.x] = now - start;
}

// Spins until clock64() has advanced by `cycles`.
extern "C" __global__ void spin_clock(unsigned long long* elapsed, long long cycles) {
  long long start = clock64(), now;
  do {
    now = clock64();
  } while (now - start < cycles);
  elapsed[threadIdx.x] = static_cast<unsigned long long>(now - start);
}

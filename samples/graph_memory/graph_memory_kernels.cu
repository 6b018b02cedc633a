// Kernels of the graph_memory sample: a temporary buffer that lives only inside a graph launch
// (written by one kernel, read by the next), and a fill of a buffer the graph allocates for the
// work after it.
extern "C" __global__ void square_into(const unsigned* in, unsigned* tmp, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) tmp[i] = in[i] * in[i] + static_cast<unsigned>(i);
}

extern "C" __global__ void fold(const unsigned* tmp, unsigned* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] += tmp[i] ^ tmp[n - 1 - i];
}

extern "C" __global__ void ramp(unsigned* buffer, unsigned base, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) buffer[i] += base * static_cast<unsigned>(i);
}

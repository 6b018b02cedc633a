// Fills and transforms a buffer that spans several separately created physical allocations
// mapped back to back: a kernel cannot tell, which is the point.
extern "C" __global__ void fill_pattern(unsigned* data, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    data[i] = static_cast<unsigned>(i) * 2654435761u ^ seed;
  }
}

extern "C" __global__ void add_neighbour(const unsigned* in, unsigned* out, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    out[i] = in[i] + in[(i + 1) % n];
  }
}

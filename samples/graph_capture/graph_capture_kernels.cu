// Two dependent steps captured into one graph: a recurrence and a running sum of it, so a graph
// launch that is dropped, repeated or reordered changes the final values.
extern "C" __global__ void step(unsigned* state, int n, unsigned increment) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) state[i] = state[i] * 3u + increment + static_cast<unsigned>(i);
}

extern "C" __global__ void accumulate(unsigned* sum, const unsigned* state, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) sum[i] += state[i] ^ 0x5a5a5a5au;
}

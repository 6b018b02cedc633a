// One tiny step of a recurrence: each launch depends on the previous one's result, so launches
// that run out of order or are dropped change the final values.
extern "C" __global__ void step(unsigned* state, int n, unsigned launch_index) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) state[i] = state[i] * 3u + launch_index + static_cast<unsigned>(i);
}

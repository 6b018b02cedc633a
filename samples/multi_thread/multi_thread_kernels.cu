// Two integer kernels that each host thread of multi_thread launches alternately on its own
// stream. `tag` encodes (thread << 16 | step): every launch changes the state in a way that
// depends on its position, so a launch that is lost, duplicated or reordered within a stream
// changes the result, and a capture's parameter bytes say which thread and step each launch was.
extern "C" __global__ void mix(unsigned* state, const unsigned* other, int n, unsigned tag) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) state[i] = state[i] * 5u + (other[i] ^ tag);
}

extern "C" __global__ void rotate_add(unsigned* state, int n, unsigned tag) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    unsigned v = state[i];
    state[i] = ((v << 3) | (v >> 29)) + tag + static_cast<unsigned>(i);
  }
}

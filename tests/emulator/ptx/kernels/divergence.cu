// Divergence and reconvergence.
extern "C" __global__ void nested_branches(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;  // early return
  int v = in[i], r;
  if (v % 3 == 0) {
    if (v % 2 == 0) r = v * 10;
    else r = v * 20;
  } else if (v % 3 == 1) {
    r = -v;
    if (v > 50) r -= 1000;
  } else {
    r = 7;
  }
  // After reconvergence the whole warp participates in a shuffle.
  int neighbour = __shfl_xor_sync(__activemask(), r, 1);
  out[i] = r + neighbour * 0;  // keep the shuffle; result independent of neighbour
  out[n + i] = neighbour;
}

extern "C" __global__ void per_lane_loops(const int* trips, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int acc = 0;
  for (int k = 0; k < trips[i]; ++k) {
    if (k & 1) continue;
    acc += k * i;
    if (acc > 100000) break;
  }
  unsigned mask = __ballot_sync(__activemask(), acc > 50);
  out[i] = acc;
  out[n + i] = __popc(mask);
}

// Kernels that legacy_launch_app.cpp launches through the legacy execution-control API. Built
// to PTX (nvcc -ptx) and loaded with cuModuleLoadData, as the old bindings did.

// y[i] = a * x[i] + b over a 2D grid of 1D blocks (cuLaunchGrid takes a width and a height).
extern "C" __global__ void axpb(float* y, const float* x, float a, float b, int n) {
  int block = blockIdx.y * gridDim.x + blockIdx.x;
  int i = block * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __fmaf_rn(a, x[i], b);
}

// Dynamic shared memory (cuFuncSetSharedSize): out[t] = base + (ntid-1-t)^2, through shared.
extern "C" __global__ void reverse_shared(unsigned* out, unsigned base) {
  extern __shared__ unsigned s[];
  unsigned t = threadIdx.x;
  s[t] = base + t * t;
  __syncthreads();
  out[t] = s[blockDim.x - 1 - t];
}

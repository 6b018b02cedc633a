// out[i] = in[i] * mul + add: the kernel of the mem_pools sample.
extern "C" __global__ void scale_add(unsigned* out, const unsigned* in, int n, unsigned mul,
                                     unsigned add) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * mul + add;
}

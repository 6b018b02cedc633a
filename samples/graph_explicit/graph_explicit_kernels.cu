// acc[i] += in[i] * mul: the kernel node of graph_explicit, whose `mul` the program changes.
extern "C" __global__ void combine(unsigned* acc, const unsigned* in, int n, unsigned mul) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) acc[i] += in[i] * mul;
}

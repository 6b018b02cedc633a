// Kernels of the extraction tests' hand-built captures. Integer arithmetic only, so the host
// reference in the tests is exact.
extern "C" __global__ void saxpy_int(const int* a, int* c, int scale, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = scale * a[i] + c[i];
}

// Reads a module variable: extraction must carry its globalGet and its contents.
__device__ int g_offset;
extern "C" __global__ void add_offset(int* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += g_offset;
}

// Writes every `stride`-th element of x (x[i * stride] = i for i < n) and reads nothing: the
// --minimize tests' strided subset.
extern "C" __global__ void strided_store(int* x, int stride, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i * stride] = i;
}

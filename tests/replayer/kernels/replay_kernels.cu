// Kernels of the replayer tests' hand-built captures. Integer arithmetic only, so the host
// reference in the tests is exact.
extern "C" __global__ void axpy_int(const int* a, const int* b, int* c, int scale, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = scale * a[i] + b[i];
}

// Not idempotent: repeating it without restoring its input changes the result.
extern "C" __global__ void increment(int* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1;
}

// Follows a pointer stored in device memory (an embedded pointer, invisible to relocation).
struct Indirect {
  int* data;
  int n;
};
extern "C" __global__ void through_struct(const Indirect* s, int add) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < s->n) s->data[i] += add;
}

// Kernels of the replayer tests' hand-built captures. Integer arithmetic only, so the host
// reference in the tests is exact.
#include <cuda_runtime.h>

#include <cassert>

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

// An approximate instruction (__expf: ex2.approx): results differ from a correctly rounded exp in
// the last bits, which is what snapshot tolerances are for.
extern "C" __global__ void fast_exp(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __expf(x[i]);
}

// Adds a module variable (__device__) to every element and counts its calls in another:
// snapshots cover module globals too.
__device__ int bias = 0;
__device__ int calls = 0;
extern "C" __global__ void add_bias(int* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += bias;
  if (i == 0) calls += 1;
}

// One ticket per block from a global counter (atomicInc: a value-returning atom.global.inc): which
// block gets which ticket is the order the device ran the blocks in, so the result is
// order-dependent (docs/emulator.md, "Determinism"; docs/replay.md, "Order-dependent results").
extern "C" __global__ void take_ticket(unsigned* counter, unsigned* ticket) {
  if (threadIdx.x == 0) ticket[blockIdx.x] = atomicInc(counter, 0xffffffffu);
}

// Never ends while *flag is 0, which nothing in the tests changes: the hung kernel of the replay
// time limits (--timeout-launch, --timeout).
extern "C" __global__ void spin(volatile int* flag) {
  while (*flag == 0) {
  }
}

// A device-side assert (__assertfail): a non-positive element makes the context's next
// synchronisation fail with the sticky CUDA_ERROR_ASSERT.
extern "C" __global__ void check_positive(const int* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) assert(x[i] > 0);
}

// Reads texel i of a 1-D int array through a texture object (point filtering, unnormalized
// coordinates) and writes 2 * texel + 1 into a surface over another array: the object handles
// are kernel parameters the replay must map to its driver's.
extern "C" __global__ void through_texture(cudaTextureObject_t texture, cudaSurfaceObject_t surface,
                                           int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) surf1Dwrite(2 * tex1D<int>(texture, i + 0.5f) + 1, surface, i * 4);
}

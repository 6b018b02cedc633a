// A plain CUDA runtime-API program as nvcc builds it by default (static cudart, <<<>>> launch),
// for interceptor.cudart_lookups. It is built twice, with and without
// `--default-stream per-thread`. Against the test's fake driver the runtime makes all its
// cuGetProcAddress look-ups at start-up and then fails (the fake refuses the runtime's private
// export tables): the test only reads the look-ups, never this program's results, so the program
// only reports what the runtime said (stderr) and exits non-zero on any error.
#include <cstdio>

__global__ void add_one(int* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1;
}

int main() {
  constexpr int kCount = 256;
  int host[kCount];
  for (int i = 0; i < kCount; ++i) host[i] = i;
  int* device = nullptr;
  cudaError_t error = cudaMalloc(&device, sizeof host);
  if (error == cudaSuccess) error = cudaMemcpy(device, host, sizeof host, cudaMemcpyHostToDevice);
  if (error == cudaSuccess) {
    add_one<<<1, kCount>>>(device, kCount);
    error = cudaGetLastError();
  }
  if (error == cudaSuccess) error = cudaMemcpy(host, device, sizeof host, cudaMemcpyDeviceToHost);
  if (error == cudaSuccess) error = cudaDeviceSynchronize();
  if (error != cudaSuccess) {
    std::fprintf(stderr, "cudart_app: %s\n", cudaGetErrorString(error));
    return 1;
  }
  for (int i = 0; i < kCount; ++i) {
    if (host[i] != i + 1) {
      std::fprintf(stderr, "cudart_app: element %d is %d, expected %d\n", i, host[i], i + 1);
      return 1;
    }
  }
  std::fprintf(stderr, "cudart_app: ok\n");
  return 0;
}

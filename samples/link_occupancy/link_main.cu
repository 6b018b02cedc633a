// The kernel module of link_occupancy: its device function and one variable are defined in the
// other module (link_lib.cu); only the driver's linker (cuLink*) can resolve them.
extern "C" __device__ float transform(float x, int i);
extern "C" __device__ int offset_value;

extern "C" __global__ void apply(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = transform(in[i], i) + static_cast<float>(offset_value);
}

// Cluster launches through the driver API (tests/emulator/driver/test_clusters.cpp): kernels
// with and without compile-time cluster shapes, and a distributed shared memory reduction.
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

// out[block] = rank | CTAs in the cluster << 8 | cluster index (x) << 16.
__device__ void record(unsigned* out) {
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x != 0) return;
  unsigned cx;
  asm("mov.u32 %0, %%clusterid.x;" : "=r"(cx));
  out[blockIdx.x] = cluster.block_rank() | cluster.num_blocks() << 8 | cx << 16;
}

extern "C" __global__ void any_rank(unsigned* out) { record(out); }
extern "C" __global__ void __cluster_dims__(2, 1, 1) fixed_rank(unsigned* out) { record(out); }
// __cluster_dims__() without a shape: .explicitcluster, the launch must give one.
extern "C" __global__ void __cluster_dims__() explicit_rank(unsigned* out) { record(out); }

// Each CTA sums its 128 inputs in shared memory; rank 0 adds the cluster's partial sums through
// distributed shared memory: out[cluster].
extern "C" __global__ void dsmem_sum(const int* in, int* out) {
  __shared__ int partial[128];
  cg::cluster_group cluster = cg::this_cluster();
  const int t = threadIdx.x;
  partial[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (t < s) partial[t] += partial[t + s];
    __syncthreads();
  }
  cluster.sync();
  if (cluster.block_rank() == 0 && t == 0) {
    int total = 0;
    for (unsigned r = 0; r < cluster.num_blocks(); ++r) total += *cluster.map_shared_rank(partial, r);
    out[blockIdx.x / cluster.num_blocks()] = total;
  }
  cluster.sync();
}

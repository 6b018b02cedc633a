// Thread block clusters through cooperative_groups (tests/emulator/ptx/test_cluster.cpp):
// cluster.sync() is barrier.cluster.arrive + wait, map_shared_rank is mapa on a generic address,
// block_rank / num_blocks / block_index / dim_blocks read the %cluster_* registers, and
// __cluster_dims__ becomes .reqnctapercluster + .explicitcluster.
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

// Distributed shared memory histogram: CTA r of a cluster owns bins [r * per, (r + 1) * per) in
// its shared memory; every thread adds its cluster's values into the owning CTA's bins. One
// histogram per cluster: out[cluster * bins + bin].
extern "C" __global__ void cluster_hist(const unsigned* in, int per_cluster, unsigned* out,
                                        int bins) {
  extern __shared__ unsigned smem[];
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned nb = cluster.num_blocks();
  const unsigned rank = cluster.block_rank();
  const int per = bins / static_cast<int>(nb);
  for (int i = threadIdx.x; i < per; i += blockDim.x) smem[i] = 0;
  cluster.sync();
  const unsigned cid = blockIdx.x / nb;  // clusters along x only in this test
  const unsigned* mine = in + static_cast<size_t>(cid) * per_cluster;
  for (int i = rank * blockDim.x + threadIdx.x; i < per_cluster; i += nb * blockDim.x) {
    const unsigned bin = mine[i] % static_cast<unsigned>(bins);
    unsigned* owner = cluster.map_shared_rank(smem, bin / per);
    atomicAdd(owner + bin % per, 1u);
  }
  cluster.sync();
  unsigned* o = out + static_cast<size_t>(cid) * bins + rank * per;
  for (int i = threadIdx.x; i < per; i += blockDim.x) o[i] = smem[i];
}

// Cluster reduction: each CTA reduces its slice into shared memory, then rank 0 adds the other
// CTAs' partial sums read through distributed shared memory. The second sync keeps the other
// CTAs (and their shared memory) alive until rank 0 has read them.
extern "C" __global__ void cluster_sum(const int* in, long long* out) {
  __shared__ long long partial[256];
  cg::cluster_group cluster = cg::this_cluster();
  const int t = threadIdx.x;
  const size_t base = static_cast<size_t>(blockIdx.x + gridDim.x * blockIdx.y) * blockDim.x;
  partial[t] = in[base + t];
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (t < s) partial[t] += partial[t + s];
    __syncthreads();
  }
  cluster.sync();
  if (cluster.block_rank() == 0 && t == 0) {
    long long total = 0;
    for (unsigned r = 0; r < cluster.num_blocks(); ++r) total += *cluster.map_shared_rank(partial, r);
    const dim3 ci = cluster.block_index();
    (void)ci;
    out[blockIdx.x / cluster.dim_blocks().x + (gridDim.x / cluster.dim_blocks().x) *
                                                  (blockIdx.y / cluster.dim_blocks().y)] = total;
  }
  cluster.sync();
}

// A ring: in every round each CTA writes a value into the next CTA's shared slot, syncs, reads
// its own slot and folds it into a running value; many rounds reuse the cluster barrier's phases.
extern "C" __global__ void cluster_ring(const unsigned* seeds, unsigned* out, int rounds) {
  __shared__ unsigned slot[128];
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned nb = cluster.num_blocks();
  const unsigned rank = cluster.block_rank();
  const int t = threadIdx.x;
  unsigned v = seeds[blockIdx.x * blockDim.x + t];
  unsigned* next = cluster.map_shared_rank(slot, (rank + 1) % nb);
  for (int r = 0; r < rounds; ++r) {
    next[t] = v * 2654435761u + static_cast<unsigned>(r);
    cluster.sync();
    v ^= slot[(t + r) % blockDim.x];
    cluster.sync();
  }
  out[blockIdx.x * blockDim.x + t] = v;
}

// Compile-time cluster shape: what the cluster registers read, per CTA.
extern "C" __global__ void __cluster_dims__(2, 2, 1) cluster_ids(unsigned* out) {
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x != 0) return;
  const unsigned b = blockIdx.x + gridDim.x * blockIdx.y;
  unsigned* o = out + b * 8;
  const dim3 idx = cluster.block_index();
  const dim3 dim = cluster.dim_blocks();
  o[0] = cluster.block_rank();
  o[1] = cluster.num_blocks();
  o[2] = idx.x;
  o[3] = idx.y;
  o[4] = dim.x;
  o[5] = dim.y;
  unsigned cx, cy;
  asm("mov.u32 %0, %%clusterid.x;" : "=r"(cx));
  asm("mov.u32 %0, %%clusterid.y;" : "=r"(cy));
  o[6] = cx;
  o[7] = cy;
}

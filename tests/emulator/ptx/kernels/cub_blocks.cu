// CUB block- and warp-level primitives: dense real-world PTX (inline asm, shfl with segment
// masks, bfe/bfi/prmt, shared-memory tricks) with simple host references.
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/warp/warp_scan.cuh>

constexpr int kThreads = 128;
constexpr int kItems = 4;

extern "C" __global__ void cub_block_ops(const int* in, int* sums, int* scans, int* sorted, int* warp_scans) {
  using Reduce = cub::BlockReduce<int, kThreads>;
  using Scan = cub::BlockScan<int, kThreads>;
  using Sort = cub::BlockRadixSort<int, kThreads, kItems>;
  using WScan = cub::WarpScan<int>;
  __shared__ union {
    typename Reduce::TempStorage reduce;
    typename Scan::TempStorage scan;
    typename Sort::TempStorage sort;
  } tmp;
  __shared__ typename WScan::TempStorage wtmp[kThreads / 32];
  const int base = blockIdx.x * kThreads * kItems;
  int items[kItems];
  for (int i = 0; i < kItems; ++i) items[i] = in[base + threadIdx.x * kItems + i];
  int total = Reduce(tmp.reduce).Sum(items);
  if (threadIdx.x == 0) sums[blockIdx.x] = total;
  __syncthreads();
  int scanned[kItems];
  Scan(tmp.scan).ExclusiveSum(items, scanned);
  for (int i = 0; i < kItems; ++i) scans[base + threadIdx.x * kItems + i] = scanned[i];
  __syncthreads();
  int winc;
  WScan(wtmp[threadIdx.x / 32]).InclusiveSum(items[0], winc);
  warp_scans[blockIdx.x * kThreads + threadIdx.x] = winc;
  Sort(tmp.sort).Sort(items);
  for (int i = 0; i < kItems; ++i) sorted[base + threadIdx.x * kItems + i] = items[i];
}

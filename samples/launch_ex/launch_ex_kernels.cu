// A two-phase kernel that needs a grid-wide barrier: phase 2 reads what other blocks wrote in
// phase 1. Only valid when launched cooperatively (all blocks co-resident).
#include <cooperative_groups.h>

#include <cstdio>

namespace cg = cooperative_groups;

extern "C" __global__ void two_phase(int* scratch, int* out, int n, int salt) {
  cg::grid_group grid = cg::this_grid();
  for (int i = static_cast<int>(grid.thread_rank()); i < n; i += static_cast<int>(grid.size())) {
    scratch[i] = i * 3 + salt;
  }
  grid.sync();
  // Reverse order: element i needs a value written by (almost always) another block.
  for (int i = static_cast<int>(grid.thread_rank()); i < n; i += static_cast<int>(grid.size())) {
    out[i] = scratch[n - 1 - i] - scratch[i];
  }
  if (threadIdx.x == 0) {
    printf("launch_ex: block %d of %d says hello (salt %d)\n", blockIdx.x, gridDim.x, salt);
  }
}

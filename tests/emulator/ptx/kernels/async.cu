// Asynchronous barriers and copies through libcu++ (tests/emulator/ptx/test_async.cpp): for
// sm_80 cuda::barrier becomes mbarrier.arrive/test_wait and cuda::memcpy_async cp.async with
// cp.async.mbarrier.arrive; for sm_90 mbarrier try_wait, and the block-wide memcpy_async a
// cp.async.bulk completing on the barrier (mbarrier.expect_tx).
#include <cooperative_groups.h>

#include <cuda/barrier>
#include <cuda/pipeline>

namespace cg = cooperative_groups;
using block_barrier = cuda::barrier<cuda::thread_scope_block>;

// Four phases of write / arrive_and_wait / read a neighbour's value / arrive_and_wait. Threads
// at or above `stay` leave with arrive_and_drop after the first phase.
extern "C" __global__ void barrier_phases(const float* in, float* out, int stay) {
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ block_barrier bar;
  __shared__ float tile[256];
  const int t = threadIdx.x;
  if (t == 0) init(&bar, blockDim.x);
  __syncthreads();
  const int n = blockDim.x;
  for (int phase = 0; phase < 4; ++phase) {
    const int members = phase == 0 ? n : stay;
    if (t >= members) break;
    tile[t] = in[blockIdx.x * n + t] * static_cast<float>(phase + 1);
    bar.arrive_and_wait();
    const float v = tile[(t + 1) % members];
    if (phase == 0 && t >= stay) {
      bar.arrive_and_drop();
    } else {
      bar.arrive_and_wait();
    }
    out[(phase * gridDim.x + blockIdx.x) * n + t] = v;
  }
}

// Split arrive / wait: the token of arrive() waited for after independent work.
extern "C" __global__ void barrier_split(const int* in, int* out) {
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ block_barrier bar;
  __shared__ int tile[128];
  const int t = threadIdx.x;
  if (t == 0) init(&bar, blockDim.x);
  __syncthreads();
  tile[t] = in[t] * 3;
  block_barrier::arrival_token token = bar.arrive();
  int local = in[t] ^ 0x55;
  bar.wait(std::move(token));
  out[t] = tile[blockDim.x - 1 - t] + local;
}

// A block-wide copy of 256 floats into shared memory, completing on a barrier.
extern "C" __global__ void memcpy_barrier(const float* in, float* out) {
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ block_barrier bar;
  __shared__ alignas(16) float tile[256];
  auto block = cg::this_thread_block();
  if (block.thread_rank() == 0) init(&bar, block.size());
  block.sync();
  cuda::memcpy_async(block, tile, in + blockIdx.x * 256, cuda::aligned_size_t<16>(sizeof(tile)),
                     bar);
  bar.arrive_and_wait();
  out[blockIdx.x * 256 + threadIdx.x] = tile[255 - threadIdx.x] + 1.0f;
}

// A per-thread two-stage pipeline: copy tile t + 1 while tile t is consumed.
extern "C" __global__ void pipeline_stages(const float* in, float* out, int tiles) {
  __shared__ alignas(16) float buf[2][128];
  auto pipe = cuda::make_pipeline();
  const int t = threadIdx.x;
  pipe.producer_acquire();
  cuda::memcpy_async(&buf[0][t], &in[t], sizeof(float), pipe);
  pipe.producer_commit();
  for (int k = 0; k < tiles; ++k) {
    if (k + 1 < tiles) {
      pipe.producer_acquire();
      cuda::memcpy_async(&buf[(k + 1) & 1][t], &in[(k + 1) * 128 + t], sizeof(float), pipe);
      pipe.producer_commit();
    }
    pipe.consumer_wait();
    out[k * 128 + t] = buf[k & 1][t] * 2.0f + static_cast<float>(k);
    pipe.consumer_release();
  }
}

// Tensor-map (TMA) copies written with inline PTX for sm_90a (test_tensor_maps.cpp): thread 0
// loads the box at the coordinates into shared memory on an mbarrier, every thread waits on the
// phase, dumps the box, and the block stores box * 2 + 1 back through a second map.
#include <cuda.h>

#include <cstdint>

namespace {

__device__ inline uint32_t smem(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

template <int R>
__device__ void tma_load(uint32_t dst, const CUtensorMap* map, const int* c, uint32_t bar) {
  const uint64_t m = reinterpret_cast<uint64_t>(map);
  if constexpr (R == 1)
    asm volatile(
        "cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2}], [%3];" ::"r"(dst),
        "l"(m), "r"(c[0]), "r"(bar)
        : "memory");
  if constexpr (R == 2)
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
        "l"(m), "r"(c[0]), "r"(c[1]), "r"(bar)
        : "memory");
  if constexpr (R == 3)
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(dst),
        "l"(m), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(bar)
        : "memory");
  if constexpr (R == 5)
    asm volatile(
        "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4, %5, %6}], [%7];" ::"r"(dst),
        "l"(m), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]), "r"(bar)
        : "memory");
}

template <int R>
__device__ void tma_store(const CUtensorMap* map, const int* c, uint32_t src) {
  const uint64_t m = reinterpret_cast<uint64_t>(map);
  if constexpr (R == 1)
    asm volatile("cp.async.bulk.tensor.1d.global.shared::cta.tile.bulk_group [%0, {%1}], [%2];" ::
                     "l"(m),
                 "r"(c[0]), "r"(src)
                 : "memory");
  if constexpr (R == 2)
    asm volatile(
        "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];" ::"l"(m),
        "r"(c[0]), "r"(c[1]), "r"(src)
        : "memory");
  if constexpr (R == 3)
    asm volatile(
        "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%1, %2, %3}], [%4];" ::
            "l"(m),
        "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(src)
        : "memory");
  if constexpr (R == 5)
    asm volatile(
        "cp.async.bulk.tensor.5d.global.shared::cta.tile.bulk_group"
        " [%0, {%1, %2, %3, %4, %5}], [%6];" ::"l"(m),
        "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]), "r"(src)
        : "memory");
}

struct Coords {
  int c[5];
};

// `shift` floats into a 1024-byte aligned buffer (a multiple of 32: the box stays 128-byte
// aligned), so a swizzled map's pattern is seen at an offset from its repeat boundary. The dump
// is the box's shared memory as it lies (a swizzled map's physical layout).
template <int R>
__device__ void tma_round_trip(const CUtensorMap* in_map, const CUtensorMap* out_map,
                               Coords at, uint32_t box_bytes, float* dump, uint32_t shift = 0) {
  __shared__ alignas(1024) float buffer[2048 + 256];
  float* box = buffer + shift;
  __shared__ alignas(8) uint64_t bar;
  const uint32_t b = smem(&bar);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(b) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(box_bytes)
                 : "memory");
    tma_load<R>(smem(box), in_map, at.c, b);
  }
  uint32_t done = 0;
  while (!done)
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, "
        "p; }"
        : "=r"(done)
        : "r"(b)
        : "memory");
  const uint32_t n = box_bytes / 4;
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) {
    dump[i] = box[i];
    box[i] = box[i] * 2.0f + 1.0f;
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (threadIdx.x == 0) {
    tma_store<R>(out_map, at.c, smem(box));
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
  }
}

}  // namespace

extern "C" __global__ void tma_1d(const __grid_constant__ CUtensorMap in_map,
                                  const __grid_constant__ CUtensorMap out_map, Coords at,
                                  uint32_t box_bytes, float* dump) {
  tma_round_trip<1>(&in_map, &out_map, at, box_bytes, dump);
}

extern "C" __global__ void tma_3d(const __grid_constant__ CUtensorMap in_map,
                                  const __grid_constant__ CUtensorMap out_map, Coords at,
                                  uint32_t box_bytes, float* dump) {
  tma_round_trip<3>(&in_map, &out_map, at, box_bytes, dump);
}

extern "C" __global__ void tma_5d(const __grid_constant__ CUtensorMap in_map,
                                  const __grid_constant__ CUtensorMap out_map, Coords at,
                                  uint32_t box_bytes, float* dump) {
  tma_round_trip<5>(&in_map, &out_map, at, box_bytes, dump);
}

// 2D, for the swizzled maps (test_tensor_maps.cpp, "swizzle").
extern "C" __global__ void tma_2d(const __grid_constant__ CUtensorMap in_map,
                                  const __grid_constant__ CUtensorMap out_map, Coords at,
                                  uint32_t box_bytes, float* dump, uint32_t shift) {
  tma_round_trip<2>(&in_map, &out_map, at, box_bytes, dump, shift);
}

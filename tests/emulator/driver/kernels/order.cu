// Kernels whose results depend on the order in which blocks run (emu_driver_probe "order",
// driver_probe.cmake): on a GPU they differ from run to run; the emulator must give the same
// results whatever CUSNAP_EMU_THREADS is.
#include <cooperative_groups.h>
#include <cstdio>

// Every thread takes a ticket with atomicInc and keeps it.
extern "C" __global__ void tickets(unsigned* counter, unsigned* out) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = atomicInc(counter, 0xffffffffu);
}

// Every thread swaps its id into one slot and keeps what it found there.
extern "C" __global__ void exchange(unsigned* slot, unsigned* out) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = atomicExch(slot, i + 1);
}

// A lock-free list push with atomicCAS: next[i] is the node pushed before node i.
extern "C" __global__ void cas_push(unsigned* head, unsigned* next) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned old = *(volatile unsigned*)head;
  for (;;) {
    unsigned seen = atomicCAS(head, old, i + 1);
    if (seen == old) break;
    old = seen;
  }
  next[i] = old;
}

// A float sum with atomicAdd over many blocks: the rounding depends on the order of the adds.
extern "C" __global__ void float_sum(const float* in, float* sum, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(sum, in[i]);
}

// Integer counting whose result is unused: commutative, stays parallel.
extern "C" __global__ void count_parallel(unsigned* count, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(count, 1u);
}

// Tickets before a grid-wide barrier, then everybody reads the total (a cooperative launch).
extern "C" __global__ void coop_tickets(unsigned* counter, unsigned* out, unsigned* total) {
  cooperative_groups::grid_group grid = cooperative_groups::this_grid();
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = atomicAdd(counter, 1u);
  grid.sync();
  total[i] = *(volatile unsigned*)counter;
}

// Device printf from many blocks of a parallel kernel: the launch's output is in block order.
// Early blocks work longer before they print, so that later blocks finish first when several
// workers run them.
extern "C" __global__ void hello(unsigned* sink) {
  unsigned x = threadIdx.x;
  for (unsigned i = 0; i < (gridDim.x - blockIdx.x) * 200u; ++i) x = x * 1664525u + 1013904223u;
  if (x == 0x12345678u) *sink = x;  // keeps the loop
  if (threadIdx.x % 16 == 0) printf("hello block %d thread %d\n", blockIdx.x, threadIdx.x);
}

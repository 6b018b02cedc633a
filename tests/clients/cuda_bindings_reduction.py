"""cuda-bindings client: shared-memory reduction and global atomics, checked on the host.

Integer sums (exact in any order of the blocks' atomicAdd), a float32 tree reduction per block
(compared with the same order on the host), and an atomicMax / atomicCAS histogram.
"""
import ctypes

from client_util import check, compile_ptx, finish, init_context  # first: skips without packages

import numpy as np
from cuda.bindings import driver as cu

BLOCK = 256
SOURCE = r"""
#define BLOCK 256
extern "C" __global__ void sum_int(const long long* values, int n, unsigned long long* total) {
  __shared__ long long shared[BLOCK];
  int tid = threadIdx.x, i = blockIdx.x * BLOCK + tid;
  shared[tid] = i < n ? values[i] : 0;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
    if (tid < stride) shared[tid] += shared[tid + stride];
    __syncthreads();
  }
  if (tid == 0) atomicAdd(total, (unsigned long long)shared[0]);
}
extern "C" __global__ void block_sums(const float* values, int n, float* sums) {
  extern __shared__ float dynamic[];
  int tid = threadIdx.x, i = blockIdx.x * blockDim.x + tid;
  dynamic[tid] = i < n ? values[i] : 0.0f;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (tid < stride) dynamic[tid] += dynamic[tid + stride];
    __syncthreads();
  }
  if (tid == 0) sums[blockIdx.x] = dynamic[0];
}
extern "C" __global__ void histogram(const int* values, int n, unsigned* bins, int* maximum) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  atomicAdd(&bins[values[i] & 15], 1u);
  atomicMax(maximum, values[i]);
  // atomicCAS loop: bins[16] counts odd values, the way atomics are built from CAS.
  if (values[i] & 1) {
    unsigned old = bins[16], seen;
    do {
      seen = old;
      old = atomicCAS(&bins[16], seen, seen + 1);
    } while (old != seen);
  }
}
"""


def tree_sums(values, blocks):
    padded = np.zeros(blocks * BLOCK, dtype=np.float32)
    padded[:values.size] = values
    shared = padded.reshape(blocks, BLOCK)
    stride = BLOCK // 2
    while stride > 0:
        shared = shared.copy()
        shared[:, :stride] = shared[:, :stride] + shared[:, stride:2 * stride]
        stride //= 2
    return shared[:, 0]


def to_device(array):
    pointer = check(cu.cuMemAlloc(array.nbytes))
    check(cu.cuMemcpyHtoD(pointer, array.ctypes.data, array.nbytes))
    return pointer


def from_device(pointer, like):
    out = np.empty_like(like)
    check(cu.cuMemcpyDtoH(out.ctypes.data, pointer, out.nbytes))
    return out


def launch(kernel, blocks, threads, args, types, shared=0):
    check(cu.cuLaunchKernel(kernel, blocks, 1, 1, threads, 1, 1, shared, 0, (args, types), 0))


def main():
    init_context()
    module = check(cu.cuModuleLoadData(compile_ptx(SOURCE)))
    n = 50000
    blocks = (n + BLOCK - 1) // BLOCK
    rng = np.random.default_rng(4)
    failures = []
    pointer, c_int = None, ctypes.c_int

    ints = rng.integers(-1000, 1000, n, dtype=np.int64)
    d_ints, d_total = to_device(ints), to_device(np.zeros(1, dtype=np.uint64))
    launch(check(cu.cuModuleGetFunction(module, b"sum_int")), blocks, BLOCK,
           (d_ints, n, d_total), (pointer, c_int, pointer))
    total = int(from_device(d_total, np.zeros(1, dtype=np.uint64))[0].astype(np.int64))
    if total != int(ints.sum()):
        failures.append(f"int64 sum {total} != {int(ints.sum())}")

    floats = rng.standard_normal(n).astype(np.float32)
    d_floats, d_sums = to_device(floats), check(cu.cuMemAlloc(blocks * 4))
    launch(check(cu.cuModuleGetFunction(module, b"block_sums")), blocks, BLOCK,
           (d_floats, n, d_sums), (pointer, c_int, pointer), shared=BLOCK * 4)
    sums = from_device(d_sums, np.zeros(blocks, dtype=np.float32))
    expected = tree_sums(floats, blocks)
    if not np.array_equal(sums, expected):
        bad = np.flatnonzero(sums != expected)
        failures.append(f"{bad.size} float32 block sums differ, first {bad[0]}: {sums[bad[0]]} "
                        f"!= {expected[bad[0]]}")

    values = rng.integers(0, 1 << 20, n, dtype=np.int32)
    d_values = to_device(values)
    d_bins = to_device(np.zeros(17, dtype=np.uint32))
    d_max = to_device(np.array([-1], dtype=np.int32))
    launch(check(cu.cuModuleGetFunction(module, b"histogram")), blocks, BLOCK,
           (d_values, n, d_bins, d_max), (pointer, c_int, pointer, pointer))
    check(cu.cuCtxSynchronize())
    bins = from_device(d_bins, np.zeros(17, dtype=np.uint32))
    expected_bins = np.append(np.bincount(values & 15, minlength=16), np.count_nonzero(values & 1))
    if not np.array_equal(bins, expected_bins):
        failures.append(f"histogram {bins.tolist()} != {expected_bins.tolist()}")
    maximum = int(from_device(d_max, np.zeros(1, dtype=np.int32))[0])
    if maximum != int(values.max()):
        failures.append(f"atomicMax {maximum} != {int(values.max())}")

    for d in (d_ints, d_total, d_floats, d_sums, d_values, d_bins, d_max):
        check(cu.cuMemFree(d))
    check(cu.cuModuleUnload(module))
    finish(failures, f"reductions and atomics over {n} elements")


if __name__ == "__main__":
    main()

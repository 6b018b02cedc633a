"""Numba client: a block reduction in shared memory, block sums combined with an atomic add.

Integers, so the result is exact whatever order the blocks' atomics land in; a float32 sum of
the same data goes through shared memory without atomics and is checked against the same tree
order computed on the host.
"""
from numba_setup import finish  # first: configures numba-cuda, skips without it

import numpy as np
from numba import cuda, float32, int64

BLOCK = 256


@cuda.jit
def sum_int(values, total):
    shared = cuda.shared.array(BLOCK, int64)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    shared[tid] = values[i] if i < values.size else 0
    cuda.syncthreads()
    stride = BLOCK // 2
    while stride > 0:
        if tid < stride:
            shared[tid] += shared[tid + stride]
        cuda.syncthreads()
        stride //= 2
    if tid == 0:
        cuda.atomic.add(total, 0, shared[0])


@cuda.jit
def block_sums_float(values, sums):
    shared = cuda.shared.array(BLOCK, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    shared[tid] = values[i] if i < values.size else float32(0)
    cuda.syncthreads()
    stride = BLOCK // 2
    while stride > 0:
        if tid < stride:
            shared[tid] += shared[tid + stride]
        cuda.syncthreads()
        stride //= 2
    if tid == 0:
        sums[cuda.blockIdx.x] = shared[0]


def tree_sums(values, blocks):
    """The kernel's float32 reduction order, on the host."""
    padded = np.zeros(blocks * BLOCK, dtype=np.float32)
    padded[:values.size] = values
    shared = padded.reshape(blocks, BLOCK)
    stride = BLOCK // 2
    while stride > 0:
        shared = shared.copy()
        shared[:, :stride] = shared[:, :stride] + shared[:, stride:2 * stride]
        stride //= 2
    return shared[:, 0]


def main():
    n = 50000
    blocks = (n + BLOCK - 1) // BLOCK
    rng = np.random.default_rng(3)
    failures = []

    ints = rng.integers(-1000, 1000, n, dtype=np.int64)
    d_total = cuda.to_device(np.zeros(1, dtype=np.int64))
    sum_int[blocks, BLOCK](cuda.to_device(ints), d_total)
    total = int(d_total.copy_to_host()[0])
    if total != int(ints.sum()):
        failures.append(f"int64 sum {total} != {int(ints.sum())}")

    floats = rng.standard_normal(n).astype(np.float32)
    d_sums = cuda.device_array(blocks, dtype=np.float32)
    block_sums_float[blocks, BLOCK](cuda.to_device(floats), d_sums)
    sums = d_sums.copy_to_host()
    expected = tree_sums(floats, blocks)
    if not np.array_equal(sums, expected):
        bad = np.flatnonzero(sums != expected)
        failures.append(f"{bad.size} float32 block sums differ, first block {bad[0]}: "
                        f"{sums[bad[0]]} != {expected[bad[0]]}")
    finish(failures, f"numba reductions of {n} int64 (atomics) and float32 (shared memory)")


if __name__ == "__main__":
    main()

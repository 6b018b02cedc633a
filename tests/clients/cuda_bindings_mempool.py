"""cuda-bindings client: stream-ordered allocation from an explicit pool and the default pool.

A pool made with cuMemPoolCreate serves cuMemAllocFromPoolAsync; the buffers are filled by a
kernel, copied back, freed in stream order and the pool trimmed; cuMemAllocAsync uses the
device's current (default) pool. Results and the pool's reserved/used attributes are checked.
"""
import ctypes

from client_util import check, compile_ptx, finish, init_context  # first: skips without packages

import numpy as np
from cuda.bindings import driver as cu

SOURCE = r"""
extern "C" __global__ void iota(unsigned* out, unsigned base, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = base + (unsigned)i * 3u;
}
"""


def pool_attribute(pool, attribute):
    return int(check(cu.cuMemPoolGetAttribute(pool, attribute)))


def main():
    device, _ = init_context()
    module = check(cu.cuModuleLoadData(compile_ptx(SOURCE)))
    iota = check(cu.cuModuleGetFunction(module, b"iota"))
    stream = check(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING))
    failures = []

    props = cu.CUmemPoolProps()
    props.allocType = cu.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    props.location.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    props.location.id = int(device)
    pool = check(cu.cuMemPoolCreate(props))

    sizes = [1000, 5000, 12345]
    buffers = []
    for index, n in enumerate(sizes):
        pointer = check(cu.cuMemAllocFromPoolAsync(n * 4, pool, stream))
        args = ((pointer, 1000 * index, n), (None, ctypes.c_uint, ctypes.c_int))
        check(cu.cuLaunchKernel(iota, (n + 255) // 256, 1, 1, 256, 1, 1, 0, stream, args, 0))
        buffers.append(pointer)
    default_pool_buffer = check(cu.cuMemAllocAsync(4096 * 4, stream))
    args = ((default_pool_buffer, 7, 4096), (None, ctypes.c_uint, ctypes.c_int))
    check(cu.cuLaunchKernel(iota, 16, 1, 1, 256, 1, 1, 0, stream, args, 0))
    check(cu.cuStreamSynchronize(stream))

    used = pool_attribute(pool, cu.CUmemPool_attribute.CU_MEMPOOL_ATTR_USED_MEM_CURRENT)
    if used < sum(sizes) * 4:
        failures.append(f"pool says {used} bytes in use, fewer than the {sum(sizes) * 4} allocated")
    for index, (n, pointer) in enumerate(zip(sizes, buffers)):
        out = np.empty(n, dtype=np.uint32)
        check(cu.cuMemcpyDtoH(out.ctypes.data, pointer, n * 4))
        expected = np.uint32(1000 * index) + np.arange(n, dtype=np.uint32) * np.uint32(3)
        if not np.array_equal(out, expected):
            failures.append(f"pool buffer {index} ({n} values) holds wrong values")
    out = np.empty(4096, dtype=np.uint32)
    check(cu.cuMemcpyDtoH(out.ctypes.data, default_pool_buffer, out.nbytes))
    if not np.array_equal(out, np.uint32(7) + np.arange(4096, dtype=np.uint32) * np.uint32(3)):
        failures.append("default-pool buffer holds wrong values")

    for pointer in buffers + [default_pool_buffer]:
        check(cu.cuMemFreeAsync(pointer, stream))
    check(cu.cuStreamSynchronize(stream))
    used = pool_attribute(pool, cu.CUmemPool_attribute.CU_MEMPOOL_ATTR_USED_MEM_CURRENT)
    if used != 0:
        failures.append(f"pool says {used} bytes in use after every buffer was freed")
    check(cu.cuMemPoolTrimTo(pool, 0))
    reserved = pool_attribute(pool, cu.CUmemPool_attribute.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
    if reserved != 0:
        failures.append(f"pool keeps {reserved} bytes reserved after trimming to 0")

    check(cu.cuMemPoolDestroy(pool))
    check(cu.cuStreamDestroy(stream))
    check(cu.cuModuleUnload(module))
    finish(failures, f"stream-ordered allocations of {len(sizes) + 1} buffers from two pools")


if __name__ == "__main__":
    main()

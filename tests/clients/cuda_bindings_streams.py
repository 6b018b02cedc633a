"""cuda-bindings client: two streams ordered by events, async copies, checked on the host.

Stream A scales x into y; stream B waits on A's event before adding y into z, then copies z back
asynchronously. Events also time A and are queried after synchronization.
"""
import ctypes

from client_util import check, compile_ptx, finish, init_context  # first: skips without packages

import numpy as np
from cuda.bindings import driver as cu

SOURCE = r"""
extern "C" __global__ void scale(const float* x, float* y, float factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * factor;
}
extern "C" __global__ void accumulate(const float* y, float* z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] += y[i];
}
"""


def main():
    init_context()
    module = check(cu.cuModuleLoadData(compile_ptx(SOURCE)))
    scale = check(cu.cuModuleGetFunction(module, b"scale"))
    accumulate = check(cu.cuModuleGetFunction(module, b"accumulate"))
    n, block = 20000, 256
    grid = (n + block - 1) // block
    rng = np.random.default_rng(5)
    x = rng.standard_normal(n).astype(np.float32)
    z0 = rng.standard_normal(n).astype(np.float32)
    # Page-locked host buffers, as asynchronous copies want.
    host_x = check(cu.cuMemHostAlloc(n * 4, 0))
    host_z = check(cu.cuMemHostAlloc(n * 4, 0))
    ctypes.memmove(host_x, x.ctypes.data, n * 4)
    ctypes.memmove(host_z, z0.ctypes.data, n * 4)
    d_x, d_y, d_z = (check(cu.cuMemAlloc(n * 4)) for _ in range(3))

    stream_a = check(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING))
    stream_b = check(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING))
    start = check(cu.cuEventCreate(cu.CUevent_flags.CU_EVENT_DEFAULT))
    scaled = check(cu.cuEventCreate(cu.CUevent_flags.CU_EVENT_DEFAULT))
    done = check(cu.cuEventCreate(cu.CUevent_flags.CU_EVENT_DISABLE_TIMING))

    check(cu.cuEventRecord(start, stream_a))
    check(cu.cuMemcpyHtoDAsync(d_x, host_x, n * 4, stream_a))
    args = ((d_x, d_y, 2.5, n), (None, None, ctypes.c_float, ctypes.c_int))
    check(cu.cuLaunchKernel(scale, grid, 1, 1, block, 1, 1, 0, stream_a, args, 0))
    check(cu.cuEventRecord(scaled, stream_a))
    check(cu.cuMemcpyHtoDAsync(d_z, host_z, n * 4, stream_b))
    check(cu.cuStreamWaitEvent(stream_b, scaled, 0))
    args = ((d_y, d_z, n), (None, None, ctypes.c_int))
    check(cu.cuLaunchKernel(accumulate, grid, 1, 1, block, 1, 1, 0, stream_b, args, 0))
    check(cu.cuMemcpyDtoHAsync(host_z, d_z, n * 4, stream_b))
    check(cu.cuEventRecord(done, stream_b))
    check(cu.cuEventSynchronize(done))

    failures = []
    z = np.ctypeslib.as_array((ctypes.c_float * n).from_address(int(host_z))).copy()
    expected = z0 + x * np.float32(2.5)
    if not np.array_equal(z, expected):
        bad = np.flatnonzero(z != expected)
        failures.append(f"{bad.size} elements differ, first {bad[0]}: {z[bad[0]]} != "
                        f"{expected[bad[0]]}")
    check(cu.cuStreamSynchronize(stream_a))
    for event in (start, scaled, done):
        if cu.cuEventQuery(event)[0] != cu.CUresult.CUDA_SUCCESS:
            failures.append("an event recorded before a synchronization is not complete")
    elapsed = check(cu.cuEventElapsedTime(start, scaled))
    if not elapsed >= 0.0:
        failures.append(f"elapsed time {elapsed} ms is negative")

    for event in (start, scaled, done):
        check(cu.cuEventDestroy(event))
    for stream in (stream_a, stream_b):
        check(cu.cuStreamDestroy(stream))
    for d in (d_x, d_y, d_z):
        check(cu.cuMemFree(d))
    check(cu.cuMemFreeHost(host_x))
    check(cu.cuMemFreeHost(host_z))
    check(cu.cuModuleUnload(module))
    finish(failures, f"two streams ordered by events over {n} floats")


if __name__ == "__main__":
    main()

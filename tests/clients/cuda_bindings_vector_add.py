"""cuda-bindings client: an NVRTC-compiled vector add launched with cuLaunchKernel, checked
on the host."""
import ctypes

from client_util import check, compile_ptx, finish, init_context  # first: skips without packages

import numpy as np
from cuda.bindings import driver as cu

SOURCE = r"""
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
"""


def main():
    _, context = init_context()
    module = check(cu.cuModuleLoadData(compile_ptx(SOURCE)))
    kernel = check(cu.cuModuleGetFunction(module, b"vector_add"))

    n = 10000  # not a multiple of the block size: the bounds check matters
    rng = np.random.default_rng(1)
    a = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    c = np.zeros(n, dtype=np.float32)
    d_a, d_b, d_c = (check(cu.cuMemAlloc(n * 4)) for _ in range(3))
    check(cu.cuMemcpyHtoD(d_a, a.ctypes.data, n * 4))
    check(cu.cuMemcpyHtoD(d_b, b.ctypes.data, n * 4))
    check(cu.cuMemsetD32(d_c, 0x7FC00000, n))  # NaN: an unwritten element cannot pass

    block = 128
    args = ((d_a, d_b, d_c, n), (None, None, None, ctypes.c_int))
    check(cu.cuLaunchKernel(kernel, (n + block - 1) // block, 1, 1, block, 1, 1, 0, 0, args, 0))
    check(cu.cuCtxSynchronize())
    check(cu.cuMemcpyDtoH(c.ctypes.data, d_c, n * 4))

    failures = []
    expected = a + b  # float32 addition, exactly what the kernel does
    if not np.array_equal(c, expected):
        bad = np.flatnonzero(c != expected)
        failures.append(f"{bad.size} elements differ, first at {bad[0]}: {c[bad[0]]} != "
                        f"{expected[bad[0]]}")
    for d in (d_a, d_b, d_c):
        check(cu.cuMemFree(d))
    check(cu.cuModuleUnload(module))
    finish(failures, f"vector_add of {n} floats")


if __name__ == "__main__":
    main()

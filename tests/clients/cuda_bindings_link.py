"""cuda-bindings client: two separately compiled PTX modules linked by the driver.

One module defines a device function and a __device__ variable, the other a kernel that calls
and reads them through extern declarations; cuLinkCreate / cuLinkAddData (twice) /
cuLinkComplete link them and cuModuleLoadData loads the result.
"""
import ctypes

from client_util import check, compile_ptx, finish, init_context  # first: skips without packages

import numpy as np
from cuda.bindings import driver as cu

LIBRARY = r"""
__device__ int bias = 17;
__device__ int transform(int x) { return x * x - 3 * x; }
"""
KERNEL = r"""
extern __device__ int bias;
__device__ int transform(int x);
extern "C" __global__ void apply(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = transform(in[i]) + bias;
}
"""


def main():
    init_context()
    library_ptx = compile_ptx(LIBRARY, "library.cu", relocatable=True)
    kernel_ptx = compile_ptx(KERNEL, "kernel.cu", relocatable=True)

    log_size = 8192
    error_log = bytearray(log_size)
    options = [cu.CUjit_option.CU_JIT_ERROR_LOG_BUFFER,
               cu.CUjit_option.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES]
    values = [error_log, log_size]
    state = check(cu.cuLinkCreate(len(options), options, values))
    ptx = cu.CUjitInputType.CU_JIT_INPUT_PTX
    try:
        check(cu.cuLinkAddData(state, ptx, library_ptx, len(library_ptx), b"library.ptx", 0, [],
                               []))
        check(cu.cuLinkAddData(state, ptx, kernel_ptx, len(kernel_ptx), b"kernel.ptx", 0, [], []))
        image, size = check(cu.cuLinkComplete(state))
        linked = ctypes.string_at(image, size)  # the image lives only as long as the link state
    except RuntimeError as error:
        log = bytes(error_log).rstrip(b"\0").decode(errors="replace")
        raise RuntimeError(f"{error}: {log}") from None
    check(cu.cuLinkDestroy(state))

    module = check(cu.cuModuleLoadData(linked))
    apply = check(cu.cuModuleGetFunction(module, b"apply"))
    n = 3000
    values_in = np.arange(-1500, 1500, dtype=np.int32)
    out = np.zeros(n, dtype=np.int32)
    d_in, d_out = check(cu.cuMemAlloc(n * 4)), check(cu.cuMemAlloc(n * 4))
    check(cu.cuMemcpyHtoD(d_in, values_in.ctypes.data, n * 4))
    args = ((d_in, d_out, n), (None, None, ctypes.c_int))
    check(cu.cuLaunchKernel(apply, (n + 127) // 128, 1, 1, 128, 1, 1, 0, 0, args, 0))
    check(cu.cuMemcpyDtoH(out.ctypes.data, d_out, n * 4))

    failures = []
    expected = values_in * values_in - 3 * values_in + 17
    if not np.array_equal(out, expected):
        bad = np.flatnonzero(out != expected)
        failures.append(f"{bad.size} elements differ, first {bad[0]}: {out[bad[0]]} != "
                        f"{expected[bad[0]]}")
    check(cu.cuMemFree(d_in))
    check(cu.cuMemFree(d_out))
    check(cu.cuModuleUnload(module))
    finish(failures, f"a kernel linked from two PTX modules over {n} ints")


if __name__ == "__main__":
    main()

"""cuda.core client: Program (NVRTC) to PTX, a kernel launched on a Stream with buffers from the
device's memory resource (a stream-ordered pool), copied back and checked on the host."""
import ctypes
import sys

from client_util import check, finish  # first: skips without packages

import numpy as np
from cuda.bindings import driver as cu

try:
    from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch
except ImportError as error:
    print(f"SKIPPED: {error} (scripts/python-env installs tests/requirements-clients.txt)")
    sys.exit(0)

SOURCE = r"""
extern "C" __global__ void saxpy(float a, const float* x, float* y, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = a * x[i] + y[i];
}
"""


def main():
    device = Device(0)
    device.set_current()
    stream = device.create_stream()
    program = Program(SOURCE, code_type="c++", options=ProgramOptions(arch="compute_90"))
    kernel = program.compile("ptx").get_kernel("saxpy")

    n = 30000
    rng = np.random.default_rng(6)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    d_x = device.memory_resource.allocate(x.nbytes, stream=stream)
    d_y = device.memory_resource.allocate(y.nbytes, stream=stream)
    check(cu.cuMemcpyHtoDAsync(int(d_x.handle), x.ctypes.data, x.nbytes, stream.handle))
    check(cu.cuMemcpyHtoDAsync(int(d_y.handle), y.ctypes.data, y.nbytes, stream.handle))
    # A grid smaller than the data: the grid-stride loop covers the rest.
    config = LaunchConfig(grid=16, block=256)
    launch(stream, config, kernel, np.float32(2.0), d_x, d_y, ctypes.c_size_t(n))
    out = np.empty_like(y)
    check(cu.cuMemcpyDtoHAsync(out.ctypes.data, int(d_y.handle), out.nbytes, stream.handle))
    stream.sync()

    failures = []
    expected = np.float32(2.0) * x + y
    if not np.array_equal(out, expected):
        bad = np.flatnonzero(out != expected)
        failures.append(f"{bad.size} elements differ, first {bad[0]}: {out[bad[0]]} != "
                        f"{expected[bad[0]]}")
    d_x.close(stream)
    d_y.close(stream)
    stream.sync()
    finish(failures, f"cuda.core saxpy over {n} floats")


if __name__ == "__main__":
    main()

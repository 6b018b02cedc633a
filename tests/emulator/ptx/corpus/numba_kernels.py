"""Numba kernels whose PTX (numba.cuda.compile_ptx, no GPU needed) the corpus test runs.

Run by regenerate.sh: writes numba_<name>.ptx next to this file. Each 1-D array argument becomes
seven kernel parameters in Numba's ABI: meminfo, parent, nitems, itemsize, data, shape, stride.
"""
import math
import os
import sys

os.environ["NUMBA_CUDA_USE_NVIDIA_BINDING"] = "0"  # the ctypes binding: no cuda.core needed

from numba import cuda, float32, float64, int32, int64, void  # noqa: E402


def poly_clip(out, x, y, a):
    # out[i] = clamp(a * x[i] + y[i], -1, 1) in f64, plus sqrt(|x[i]|) for odd i.
    i = cuda.grid(1)
    if i < out.shape[0]:
        v = a * x[i] + y[i]
        v = min(max(v, -1.0), 1.0)
        if i % 2 == 1:
            v += math.sqrt(abs(x[i]))
        out[i] = v


def shared_histogram(hist, data):
    # A 16-bin histogram of data[i] & 15, counted per block in shared memory, then added to hist.
    bins = cuda.shared.array(16, int32)
    t = cuda.threadIdx.x
    if t < 16:
        bins[t] = 0
    cuda.syncthreads()
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < data.shape[0]:
        cuda.atomic.add(bins, data[i] & 15, 1)
        i += stride
    cuda.syncthreads()
    if t < 16:
        cuda.atomic.add(hist, t, bins[t])


def int_mix(out, x):
    # 64-bit integer arithmetic: floor division and modulo with Python's signs, shifts, xor.
    i = cuda.grid(1)
    if i < out.shape[0]:
        v = x[i]
        q = v // 7
        r = v % 7
        out[i] = (q << 3) ^ (r * 1000003) ^ (v >> 5)


def local_sort(out, top, x):
    # Sorts 8 gathered float32 values in a local array; out[i] = smallest - largest, and the
    # largest of all goes to top[0] through Numba's float atomic max (a compare-and-swap loop).
    i = cuda.grid(1)
    n = x.shape[0]
    if i < out.shape[0]:
        buf = cuda.local.array(8, float32)
        for k in range(8):
            buf[k] = x[(i + k * 5) % n]
        for k in range(1, 8):
            v = buf[k]
            j = k - 1
            while j >= 0 and buf[j] > v:
                buf[j + 1] = buf[j]
                j -= 1
            buf[j + 1] = v
        out[i] = buf[0] - buf[7]
        cuda.atomic.max(top, 0, buf[7])


KERNELS = {
    "poly_clip": (poly_clip, void(float64[:], float64[:], float64[:], float64)),
    "shared_histogram": (shared_histogram, void(int32[:], int32[:])),
    "int_mix": (int_mix, void(int64[:], int64[:])),
    "local_sort": (local_sort, void(float32[:], float32[:], float32[:])),
}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    for name, (fn, sig) in KERNELS.items():
        ptx, _ = cuda.compile_ptx(fn, sig, cc=(7, 5))
        with open(os.path.join(here, "numba_" + name + ".ptx"), "w") as f:
            f.write(ptx)
    return 0


if __name__ == "__main__":
    sys.exit(main())

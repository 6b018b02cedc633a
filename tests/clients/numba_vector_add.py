"""Numba client: a @cuda.jit vector add on explicit device arrays, checked on the host."""
from numba_setup import finish  # first: configures numba-cuda, skips without it

import numpy as np
from numba import cuda


@cuda.jit
def vector_add(a, b, c):
    i = cuda.grid(1)
    if i < c.size:
        c[i] = a[i] + b[i]


def main():
    n = 10000  # not a multiple of the block size: the bounds check matters
    rng = np.random.default_rng(2)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    d_a, d_b = cuda.to_device(a), cuda.to_device(b)
    d_c = cuda.to_device(np.full(n, np.nan, dtype=np.float32))  # unwritten elements cannot pass
    block = 128
    vector_add[(n + block - 1) // block, block](d_a, d_b, d_c)
    c = d_c.copy_to_host()
    failures = []
    expected = a + b
    if not np.array_equal(c, expected):
        bad = np.flatnonzero(c != expected)
        failures.append(f"{bad.size} elements differ, first at {bad[0]}: {c[bad[0]]} != "
                        f"{expected[bad[0]]}")
    finish(failures, f"numba vector_add of {n} floats")


if __name__ == "__main__":
    main()

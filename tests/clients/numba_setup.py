"""Configures Numba's CUDA target to hand PTX to the driver; import it before numba.

numba-cuda 0.20 with NUMBA_CUDA_USE_NVIDIA_BINDING=0 binds the driver with ctypes (libcuda.so.1
from the loader's path) and links each kernel with the driver's own linker (cuLinkCreate,
cuLinkAddData of the PTX NVVM made, cuLinkComplete), so the driver receives PTX. Later
numba-cuda releases always link with cuda.core's Linker, which prefers nvJitLink and hands the
driver an SASS cubin (docs/emulator.md, "Third-party clients").
"""
import os
import sys

os.environ["NUMBA_CUDA_USE_NVIDIA_BINDING"] = "0"
os.environ.setdefault("NUMBA_DISABLE_PERFORMANCE_WARNINGS", "1")  # small grids on purpose

try:
    import numpy  # noqa: F401
    from numba import cuda  # noqa: F401
except ImportError as error:
    print(f"SKIPPED: {error} (scripts/python-env installs tests/requirements-clients.txt)")
    sys.exit(0)


def finish(failures, what):
    """Prints the verdict and exits: 0 when every check passed, 1 otherwise."""
    if failures:
        for failure in failures:
            print(f"FAIL: {failure}")
        sys.exit(1)
    print(f"OK: {what}")
    sys.exit(0)

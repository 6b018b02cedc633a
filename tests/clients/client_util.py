"""Helpers shared by the cuda-bindings clients: error checking, NVRTC compilation, a context.

The clients are ordinary users of NVIDIA's cuda-bindings; nothing here knows about the emulator.
The driver is whatever libcuda.so.1 the loader finds first (LD_LIBRARY_PATH).
"""
import sys

try:
    import numpy  # noqa: F401 (every client checks with it)
    from cuda.bindings import driver as cu
    from cuda.bindings import nvrtc
except ImportError as error:
    # scripts/python-env could not install tests/requirements-clients.txt (offline, no wheel).
    print(f"SKIPPED: {error} (scripts/python-env installs tests/requirements-clients.txt)")
    sys.exit(0)


def check(result):
    """Unpacks a cuda-bindings (err, *values) tuple, raising on any error."""
    err, *values = result
    if isinstance(err, cu.CUresult):
        if err != cu.CUresult.CUDA_SUCCESS:
            _, name = cu.cuGetErrorName(err)
            raise RuntimeError(f"driver error {int(err)} ({name.decode() if name else '?'})")
    elif isinstance(err, nvrtc.nvrtcResult):
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise RuntimeError(f"nvrtc error {int(err)}")
    if not values:
        return None
    return values[0] if len(values) == 1 else values


def compile_ptx(source, name="client.cu", relocatable=False):
    """CUDA C++ to PTX with NVRTC (libnvrtc from the toolkit), for sm_90 (the emulated device)."""
    prog = check(nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], []))
    options = [b"--gpu-architecture=compute_90"]
    if relocatable:
        options.append(b"--relocatable-device-code=true")
    err, = nvrtc.nvrtcCompileProgram(prog, len(options), options)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        size = check(nvrtc.nvrtcGetProgramLogSize(prog))
        log = b" " * size
        check(nvrtc.nvrtcGetProgramLog(prog, log))
        raise RuntimeError(f"nvrtc failed:\n{log.decode(errors='replace')}")
    size = check(nvrtc.nvrtcGetPTXSize(prog))
    ptx = b" " * size
    check(nvrtc.nvrtcGetPTX(prog, ptx))
    check(nvrtc.nvrtcDestroyProgram(prog))
    return ptx


def init_context():
    check(cu.cuInit(0))
    device = check(cu.cuDeviceGet(0))
    context = check(cu.cuDevicePrimaryCtxRetain(device))
    check(cu.cuCtxSetCurrent(context))
    return device, context


def finish(failures, what):
    """Prints the verdict and exits: 0 when every check passed, 1 otherwise."""
    if failures:
        for failure in failures:
            print(f"FAIL: {failure}")
        sys.exit(1)
    print(f"OK: {what}")
    sys.exit(0)

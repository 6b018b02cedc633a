"""cuda-bindings client: CUDA graphs, explicit and stream-captured, checked on the host.

An explicit graph (memset -> kernel -> kernel, parameters given as a pointer array) runs and is
updated with new parameters; a capture forks a second stream off the first and joins it back
(two independent kernels and an async copy), and the captured graph is launched 50 times.
"""
import ctypes

from client_util import check, compile_ptx, finish, init_context  # first: skips without packages

import numpy as np
from cuda.bindings import driver as cu

SOURCE = r"""
extern "C" __global__ void axpy(float* y, const float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}
extern "C" __global__ void scale(float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] *= a;
}
"""


def pointer_array(*values):
    """kernelParams for node parameters: one host pointer per argument (kept alive by caller)."""
    holders = list(values)
    pointers = np.array([h.ctypes.data for h in holders], dtype=np.uint64)
    return holders, pointers


def kernel_node_params(function, grid, block, pointers):
    params = cu.CUDA_KERNEL_NODE_PARAMS()
    params.func = function
    params.gridDimX, params.gridDimY, params.gridDimZ = grid, 1, 1
    params.blockDimX, params.blockDimY, params.blockDimZ = block, 1, 1
    params.sharedMemBytes = 0
    params.kernelParams = pointers.ctypes.data
    return params


def main():
    _, context = init_context()
    module = check(cu.cuModuleLoadData(compile_ptx(SOURCE)))
    axpy = check(cu.cuModuleGetFunction(module, b"axpy"))
    scale = check(cu.cuModuleGetFunction(module, b"scale"))
    n, block = 10000, 256
    grid = (n + block - 1) // block
    rng = np.random.default_rng(12)
    x = rng.integers(-8, 8, n).astype(np.float32)
    d_x, d_y, d_z = (check(cu.cuMemAlloc(n * 4)) for _ in range(3))
    check(cu.cuMemcpyHtoD(d_x, x.ctypes.data, n * 4))
    stream = check(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING))
    side = check(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING))
    failures = []
    out = np.empty(n, dtype=np.float32)

    # Explicit graph: y = 1.0; y += 3 x; y *= 2.
    graph = check(cu.cuGraphCreate(0))
    memset = cu.CUDA_MEMSET_NODE_PARAMS()
    memset.dst = d_y
    memset.value = 0x3F800000
    memset.elementSize = 4
    memset.width = n
    memset.height = 1
    set_node = check(cu.cuGraphAddMemsetNode(graph, None, 0, memset, context))
    keep1, axpy_args = pointer_array(np.array([int(d_y)], np.uint64), np.array([int(d_x)], np.uint64),
                                     np.array([3.0], np.float32), np.array([n], np.int32))
    axpy_node = check(cu.cuGraphAddKernelNode(graph, [set_node], 1,
                                              kernel_node_params(axpy, grid, block, axpy_args)))
    keep2, scale_args = pointer_array(np.array([int(d_y)], np.uint64), np.array([2.0], np.float32),
                                      np.array([n], np.int32))
    scale_node = check(cu.cuGraphAddKernelNode(graph, [axpy_node], 1,
                                               kernel_node_params(scale, grid, block, scale_args)))
    exec_ = check(cu.cuGraphInstantiate(graph, 0))
    check(cu.cuGraphLaunch(exec_, stream))
    check(cu.cuStreamSynchronize(stream))
    check(cu.cuMemcpyDtoH(out.ctypes.data, d_y, n * 4))
    if not np.array_equal(out, (1.0 + 3.0 * x) * 2.0):
        failures.append("explicit graph: y != (1 + 3x) * 2")
    # The exec's scale node takes a new factor; the next launch uses it.
    keep3, scale5 = pointer_array(np.array([int(d_y)], np.uint64), np.array([5.0], np.float32),
                                  np.array([n], np.int32))
    check(cu.cuGraphExecKernelNodeSetParams(exec_, scale_node,
                                            kernel_node_params(scale, grid, block, scale5)))
    check(cu.cuGraphLaunch(exec_, stream))
    check(cu.cuStreamSynchronize(stream))
    check(cu.cuMemcpyDtoH(out.ctypes.data, d_y, n * 4))
    if not np.array_equal(out, (1.0 + 3.0 * x) * 5.0):
        failures.append("updated exec: y != (1 + 3x) * 5")
    _, count = check(cu.cuGraphGetNodes(graph))  # no array: the count only
    if count != 3:
        failures.append(f"explicit graph has {count} nodes, not 3")
    check(cu.cuGraphExecDestroy(exec_))
    check(cu.cuGraphDestroy(graph))

    # Stream capture with a fork and a join: z += x on the side stream, y += 0.5 x on the main.
    check(cu.cuMemsetD32(d_y, 0, n))
    check(cu.cuMemsetD32(d_z, 0, n))
    fork = check(cu.cuEventCreate(cu.CUevent_flags.CU_EVENT_DISABLE_TIMING))
    join = check(cu.cuEventCreate(cu.CUevent_flags.CU_EVENT_DISABLE_TIMING))
    host_out = check(cu.cuMemHostAlloc(n * 4, 0))
    check(cu.cuStreamBeginCapture(stream, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL))
    check(cu.cuEventRecord(fork, stream))
    check(cu.cuStreamWaitEvent(side, fork, 0))
    args = ((d_z, d_x, 1.0, n), (None, None, ctypes.c_float, ctypes.c_int))
    check(cu.cuLaunchKernel(axpy, grid, 1, 1, block, 1, 1, 0, side, args, 0))
    check(cu.cuEventRecord(join, side))
    args = ((d_y, d_x, 0.5, n), (None, None, ctypes.c_float, ctypes.c_int))
    check(cu.cuLaunchKernel(axpy, grid, 1, 1, block, 1, 1, 0, stream, args, 0))
    check(cu.cuStreamWaitEvent(stream, join, 0))
    check(cu.cuMemcpyDtoHAsync(host_out, d_z, n * 4, stream))
    status = check(cu.cuStreamIsCapturing(side))
    if status != cu.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_ACTIVE:
        failures.append(f"the forked stream is not capturing: {status}")
    captured = check(cu.cuStreamEndCapture(stream))
    exec_ = check(cu.cuGraphInstantiate(captured, 0))
    launches = 50
    for _ in range(launches):
        check(cu.cuGraphLaunch(exec_, stream))
    check(cu.cuStreamSynchronize(stream))
    check(cu.cuMemcpyDtoH(out.ctypes.data, d_y, n * 4))
    if not np.array_equal(out, launches * 0.5 * x):
        failures.append("captured graph: y != 50 * 0.5 x")
    z = np.empty(n, dtype=np.float32)
    ctypes.memmove(z.ctypes.data, host_out, n * 4)
    if not np.array_equal(z, launches * x):
        failures.append("captured graph: the copied z != 50 x")
    check(cu.cuGraphExecDestroy(exec_))
    check(cu.cuGraphDestroy(captured))
    finish(failures, "explicit and captured graphs match numpy")


if __name__ == "__main__":
    main()

// graph_memory: memory a graph allocates itself. (1) cuMemAllocAsync / cuMemFreeAsync captured
// from a stream: a temporary buffer that exists only inside each launch of the graph, between
// two kernels; the graph is launched --size times (default 20), each time on new input copied in
// before it. (2) An explicit graph whose allocation node is not freed by the graph: a memset and
// a kernel fill the buffer, work after the launch reads it, cuMemFreeAsync frees it, launched
// three times. Checked against host computations of the same work.
#include "sample_common.h"

CUSNAP_EMBEDDED_IMAGE(graph_memory_kernels)

using namespace cusnap::samples;

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv, 20, " (launches of the captured graph)");
  const size_t launches = options.size;
  constexpr int kElements = 512;
  const size_t bytes = kElements * sizeof(unsigned);

  // Host reference of (1).
  std::vector<std::vector<unsigned>> inputs(launches, std::vector<unsigned>(kElements));
  Lcg rng(21);
  for (auto& in : inputs)
    for (unsigned& v : in) v = static_cast<unsigned>(rng.next_float(0.0f, 65536.0f));
  std::vector<unsigned> folded(kElements, 0), tmp(kElements);
  for (const auto& in : inputs) {
    for (int i = 0; i < kElements; ++i) tmp[i] = in[i] * in[i] + unsigned(i);
    for (int i = 0; i < kElements; ++i) folded[i] += tmp[i] ^ tmp[kElements - 1 - i];
  }
  maybe_inject_error(options, folded);
  // Host reference of (2): each launch fills the buffer with 0x01010101 and adds base * i.
  std::vector<std::vector<unsigned>> ramps(3, std::vector<unsigned>(kElements));
  for (unsigned k = 0; k < 3; ++k)
    for (int i = 0; i < kElements; ++i) ramps[k][i] = 0x01010101u + (k + 2) * unsigned(i);

  PrimaryContext context;
  CUcontext ctx;
  CU_CHECK(cuCtxGetCurrent(&ctx));
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, graph_memory_kernels_image().data));
  CUfunction square_into, fold, ramp;
  CU_CHECK(cuModuleGetFunction(&square_into, module, "square_into"));
  CU_CHECK(cuModuleGetFunction(&fold, module, "fold"));
  CU_CHECK(cuModuleGetFunction(&ramp, module, "ramp"));
  CUstream stream;
  CU_CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

  // (1) The temporary buffer is allocated and freed inside the captured graph.
  CUdeviceptr d_in, d_out;
  CU_CHECK(cuMemAlloc(&d_in, bytes));
  CU_CHECK(cuMemAlloc(&d_out, bytes));
  CU_CHECK(cuMemsetD32(d_out, 0, kElements));
  int n = kElements;
  CUdeviceptr d_tmp = 0;
  void* square_params[] = {&d_in, &d_tmp, &n};
  void* fold_params[] = {&d_tmp, &d_out, &n};
  CU_CHECK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CU_CHECK(cuMemAllocAsync(&d_tmp, bytes, stream));
  CU_CHECK(
      cuLaunchKernel(square_into, 2, 1, 1, kElements / 2, 1, 1, 0, stream, square_params, nullptr));
  CU_CHECK(cuLaunchKernel(fold, 4, 1, 1, kElements / 4, 1, 1, 0, stream, fold_params, nullptr));
  CU_CHECK(cuMemFreeAsync(d_tmp, stream));
  CUgraph captured;
  CU_CHECK(cuStreamEndCapture(stream, &captured));
  CUgraphExec captured_exec;
  CU_CHECK(cuGraphInstantiateWithFlags(&captured_exec, captured, 0));
  void* h_in = nullptr;  // pinned: the copies before each launch are asynchronous
  CU_CHECK(cuMemAllocHost(&h_in, bytes * launches));
  for (size_t k = 0; k < launches; ++k) {
    unsigned* slot = static_cast<unsigned*>(h_in) + k * kElements;
    std::copy(inputs[k].begin(), inputs[k].end(), slot);
    CU_CHECK(cuMemcpyHtoDAsync(d_in, slot, bytes, stream));
    CU_CHECK(cuGraphLaunch(captured_exec, stream));
  }
  std::vector<unsigned> got(kElements);
  CU_CHECK(cuMemcpyDtoHAsync(got.data(), d_out, bytes, stream));
  CU_CHECK(cuStreamSynchronize(stream));
  bool ok = compare_exact(folded, got);

  // (2) An allocation node the graph does not free: read after the launch, freed outside it.
  CUgraph explicit_graph;
  CU_CHECK(cuGraphCreate(&explicit_graph, 0));
  CUDA_MEM_ALLOC_NODE_PARAMS alloc{};
  alloc.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  alloc.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  alloc.poolProps.location.id = 0;
  alloc.bytesize = bytes;
  CUgraphNode alloc_node, memset_node, kernel_node;
  CU_CHECK(cuGraphAddMemAllocNode(&alloc_node, explicit_graph, nullptr, 0, &alloc));
  CUDA_MEMSET_NODE_PARAMS fill{};
  fill.dst = alloc.dptr;
  fill.value = 0x01010101u;
  fill.elementSize = 4;
  fill.width = kElements;
  fill.height = 1;
  CU_CHECK(cuGraphAddMemsetNode(&memset_node, explicit_graph, &alloc_node, 1, &fill, ctx));
  unsigned base = 2;
  CUdeviceptr d_buffer = alloc.dptr;
  void* ramp_params[] = {&d_buffer, &base, &n};
  CUDA_KERNEL_NODE_PARAMS kp{};
  kp.func = ramp;
  kp.gridDimX = 2;
  kp.gridDimY = kp.gridDimZ = 1;
  kp.blockDimX = kElements / 2;
  kp.blockDimY = kp.blockDimZ = 1;
  kp.kernelParams = ramp_params;
  CU_CHECK(cuGraphAddKernelNode(&kernel_node, explicit_graph, &memset_node, 1, &kp));
  CUgraphExec explicit_exec;
  CU_CHECK(cuGraphInstantiateWithFlags(&explicit_exec, explicit_graph, 0));
  for (unsigned k = 0; k < 3 && ok; ++k) {
    base = k + 2;
    CU_CHECK(cuGraphExecKernelNodeSetParams(explicit_exec, kernel_node, &kp));
    CU_CHECK(cuGraphLaunch(explicit_exec, stream));
    CU_CHECK(cuMemcpyDtoHAsync(got.data(), alloc.dptr, bytes, stream));
    CU_CHECK(cuMemFreeAsync(alloc.dptr, stream));
    CU_CHECK(cuStreamSynchronize(stream));
    ok = compare_exact(ramps[k], got);
  }

  CU_CHECK(cuGraphExecDestroy(explicit_exec));
  CU_CHECK(cuGraphDestroy(explicit_graph));
  CU_CHECK(cuGraphExecDestroy(captured_exec));
  CU_CHECK(cuGraphDestroy(captured));
  CU_CHECK(cuMemFreeHost(h_in));
  CU_CHECK(cuMemFree(d_out));
  CU_CHECK(cuMemFree(d_in));
  CU_CHECK(cuStreamDestroy(stream));
  CU_CHECK(cuModuleUnload(module));
  char detail[128];
  std::snprintf(detail, sizeof(detail),
                "%zu launches with a graph-scoped buffer, 3 with a graph allocation freed after, "
                "exact",
                launches);
  return finish("graph_memory", ok, detail);
}

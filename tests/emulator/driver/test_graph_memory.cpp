// Graph memory nodes (cuGraphAddMemAllocNode / cuGraphAddMemFreeNode, cuMemAllocAsync and
// cuMemFreeAsync under stream capture): results checked against host computations, and the
// documented rules of their lifetime and restrictions.
#include <cstring>
#include <vector>

#include "test_helpers.h"

using namespace cusnap_test;

#ifdef CUSNAP_TEST_HAVE_PTX_ENGINE

namespace {

constexpr int kN = 4096;
constexpr size_t kBytes = kN * sizeof(float);

struct Scale {
  CUmodule module = nullptr;
  CUfunction scale = nullptr;  // scale_and_count(data, factor, n): data *= factor
  Scale() {
    primary_context();
    std::string ptx = read_file(kernel_path("vector.ptx"));
    REQUIRE_CU(cuModuleLoadData(&module, ptx.c_str()));
    REQUIRE_CU(cuModuleGetFunction(&scale, module, "scale_and_count"));
  }
  ~Scale() { cuModuleUnload(module); }
};

template <class Params = CUDA_MEM_ALLOC_NODE_PARAMS>
Params alloc_params(size_t bytes) {
  Params p{};
  p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.poolProps.location.id = 0;
  p.bytesize = bytes;
  return p;
}

CUDA_MEMSET_NODE_PARAMS fill(CUdeviceptr dst, float value) {
  CUDA_MEMSET_NODE_PARAMS p{};
  p.dst = dst;
  std::memcpy(&p.value, &value, 4);
  p.elementSize = 4;
  p.width = kN;
  p.height = 1;
  return p;
}

CUDA_MEMCPY3D to_host(void* dst, CUdeviceptr src) {
  CUDA_MEMCPY3D p{};
  p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  p.srcDevice = src;
  p.dstMemoryType = CU_MEMORYTYPE_HOST;
  p.dstHost = dst;
  p.WidthInBytes = kBytes;
  p.Height = p.Depth = 1;
  return p;
}

cuuint64_t graph_mem(CUgraphMem_attribute attr) {
  cuuint64_t v = 0;
  REQUIRE_CU(cuDeviceGetGraphMemAttribute(0, attr, &v));
  return v;
}

// alloc -> memset(value) -> scale(factor) -> copy to `out` -> free (when `with_free`).
struct Pipeline {
  CUgraph graph = nullptr;
  CUgraphNode alloc = nullptr, set = nullptr, kernel = nullptr, copy = nullptr, free = nullptr;
  CUdeviceptr dptr = 0;
  float factor = 3.0f;
  int n = kN;
  void* args[3] = {&dptr, &factor, &n};
  std::vector<float> out = std::vector<float>(kN, -1.0f);

  Pipeline(CUfunction scale, float value, bool with_free) {
    CUcontext ctx;
    REQUIRE_CU(cuCtxGetCurrent(&ctx));
    REQUIRE_CU(cuGraphCreate(&graph, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS a = alloc_params(kBytes);
    REQUIRE_CU(cuGraphAddMemAllocNode(&alloc, graph, nullptr, 0, &a));
    dptr = a.dptr;
    REQUIRE(dptr != 0);
    CUDA_MEMSET_NODE_PARAMS m = fill(dptr, value);
    REQUIRE_CU(cuGraphAddMemsetNode(&set, graph, &alloc, 1, &m, ctx));
    CUDA_KERNEL_NODE_PARAMS k = kernel_node(scale, args, kN);
    REQUIRE_CU(cuGraphAddKernelNode(&kernel, graph, &set, 1, &k));
    CUDA_MEMCPY3D c = to_host(out.data(), dptr);
    REQUIRE_CU(cuGraphAddMemcpyNode(&copy, graph, &kernel, 1, &c, ctx));
    if (with_free) REQUIRE_CU(cuGraphAddMemFreeNode(&free, graph, &copy, 1, dptr));
  }
  ~Pipeline() { cuGraphDestroy(graph); }
};

}  // namespace

TEST_CASE("graph memory: an allocation made and freed by every launch", "[graphs]") {
  Scale k;
  Pipeline p(k.scale, 2.0f, true);
  CUDA_MEM_ALLOC_NODE_PARAMS got{};
  REQUIRE_CU(cuGraphMemAllocNodeGetParams(p.alloc, &got));
  CHECK(got.dptr == p.dptr);
  CHECK(got.bytesize == kBytes);
  CHECK(got.poolProps.location.type == CU_MEM_LOCATION_TYPE_DEVICE);
  CUdeviceptr freed = 0;
  REQUIRE_CU(cuGraphMemFreeNodeGetParams(p.free, &freed));
  CHECK(freed == p.dptr);
  CUgraphNodeType type;
  REQUIRE_CU(cuGraphNodeGetType(p.free, &type));
  CHECK(type == CU_GRAPH_NODE_TYPE_MEM_FREE);

  cuuint64_t zero = 0, one = 1;
  REQUIRE_CU(cuDeviceSetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &zero));
  CUgraphExec exec;
  REQUIRE_CU(cuGraphInstantiate(&exec, p.graph, 0));
  CUstream s;
  REQUIRE_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  for (float factor : {3.0f, 5.0f, 7.0f}) {
    p.factor = factor;  // not seen by the exec: its kernel node copied the parameters
    REQUIRE_CU(cuGraphLaunch(exec, s));
    REQUIRE_CU(cuStreamSynchronize(s));
    for (int i = 0; i < kN; ++i) REQUIRE(p.out[i] == 6.0f);
  }
  // Freed by the graph: used memory is back to zero, the pages stay reserved until trimmed.
  CHECK(graph_mem(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == 0);
  CHECK(graph_mem(CU_GRAPH_MEM_ATTR_USED_MEM_HIGH) >= kBytes);
  CHECK(graph_mem(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) >= kBytes);
  REQUIRE_CU(cuDeviceGraphMemTrim(0));
  CHECK(graph_mem(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) == 0);
  CHECK(graph_mem(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH) >= kBytes);
  REQUIRE_CU(cuDeviceSetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, &zero));
  CHECK(graph_mem(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH) == 0);
  CHECK(cuDeviceSetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &one) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(cuDeviceSetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &zero) ==
        CUDA_ERROR_INVALID_VALUE);

  // Outside its launches the address is not allocated: work on it is refused.
  std::vector<float> host(kN);
  CHECK(cuMemcpyDtoH(host.data(), p.dptr, kBytes) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemsetD32(p.dptr, 0, kN) == CUDA_ERROR_INVALID_VALUE);
  // ... and cannot be freed outside the graph that frees it.
  CHECK(cuMemFree(p.dptr) == CUDA_ERROR_INVALID_VALUE);
  // Launched again after a trim: the pages come back.
  REQUIRE_CU(cuGraphLaunch(exec, s));
  REQUIRE_CU(cuStreamSynchronize(s));
  for (int i = 0; i < kN; ++i) REQUIRE(p.out[i] == 6.0f);
  REQUIRE_CU(cuGraphExecDestroy(exec));
  REQUIRE_CU(cuStreamDestroy(s));
}

TEST_CASE("graph memory: an allocation the graph does not free outlives the launch", "[graphs]") {
  Scale k;
  Pipeline p(k.scale, 1.5f, false);
  CUgraphExec exec;
  REQUIRE_CU(cuGraphInstantiate(&exec, p.graph, 0));
  CUstream s;
  REQUIRE_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  REQUIRE_CU(cuGraphLaunch(exec, s));
  // Stream work ordered after the launch uses the memory, submitted before the launch ran.
  REQUIRE_CU(cuMemsetD32Async(p.dptr + kBytes - 4, 0x40000000u, 1, s));  // 2.0f
  std::vector<float> host(kN);
  REQUIRE_CU(cuMemcpyDtoHAsync(host.data(), p.dptr, kBytes, s));
  REQUIRE_CU(cuStreamSynchronize(s));
  for (int i = 0; i < kN - 1; ++i) REQUIRE(host[i] == 4.5f);
  CHECK(host[kN - 1] == 2.0f);
  CHECK(graph_mem(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) >= kBytes);
  // Not freed: the next launch is refused until something frees it.
  CHECK(cuGraphLaunch(exec, s) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuMemFree(p.dptr));
  CHECK(cuMemFree(p.dptr) == CUDA_ERROR_INVALID_VALUE);  // not allocated now
  REQUIRE_CU(cuGraphLaunch(exec, s));
  REQUIRE_CU(cuMemFreeAsync(p.dptr, s));
  REQUIRE_CU(cuGraphLaunch(exec, s));
  REQUIRE_CU(cuStreamSynchronize(s));
  for (int i = 0; i < kN; ++i) REQUIRE(p.out[i] == 4.5f);

  // A free node in another graph frees it too; then the owning graph may no longer free it.
  CUgraph freer;
  REQUIRE_CU(cuGraphCreate(&freer, 0));
  CUgraphNode free_node;
  REQUIRE_CU(cuGraphAddMemFreeNode(&free_node, freer, nullptr, 0, p.dptr));
  CUgraphNode second;
  CHECK(cuGraphAddMemFreeNode(&second, freer, nullptr, 0, p.dptr) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuGraphAddMemFreeNode(&second, p.graph, &p.copy, 1, p.dptr) == CUDA_ERROR_INVALID_VALUE);
  CUgraphExec free_exec;
  REQUIRE_CU(cuGraphInstantiate(&free_exec, freer, 0));
  REQUIRE_CU(cuGraphLaunch(free_exec, s));
  CHECK(cuGraphLaunch(free_exec, s) == CUDA_ERROR_INVALID_VALUE);  // nothing to free now
  REQUIRE_CU(cuGraphLaunch(exec, s));
  REQUIRE_CU(cuGraphLaunch(free_exec, s));
  REQUIRE_CU(cuStreamSynchronize(s));
  CHECK(graph_mem(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == 0);
  REQUIRE_CU(cuGraphExecDestroy(free_exec));
  REQUIRE_CU(cuGraphDestroy(freer));

  // AUTO_FREE_ON_LAUNCH: each launch frees what the previous one left allocated.
  REQUIRE_CU(cuGraphExecDestroy(exec));
  REQUIRE_CU(
      cuGraphInstantiateWithFlags(&exec, p.graph, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH));
  for (int i = 0; i < 3; ++i) REQUIRE_CU(cuGraphLaunch(exec, s));
  REQUIRE_CU(cuStreamSynchronize(s));
  for (int i = 0; i < kN; ++i) REQUIRE(p.out[i] == 4.5f);
  REQUIRE_CU(cuMemFreeAsync(p.dptr, s));
  REQUIRE_CU(cuStreamSynchronize(s));
  REQUIRE_CU(cuGraphExecDestroy(exec));
  REQUIRE_CU(cuStreamDestroy(s));
}

TEST_CASE("graph memory: the documented restrictions", "[graphs]") {
  Scale k;
  Pipeline p(k.scale, 1.0f, true);
  CUgraph clone;
  CHECK(cuGraphClone(&clone, p.graph) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuGraphDestroyNode(p.set) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuGraphRemoveDependencies(p.graph, &p.set, &p.kernel, nullptr, 1) ==
        CUDA_ERROR_INVALID_VALUE);
  CUgraph parent;
  REQUIRE_CU(cuGraphCreate(&parent, 0));
  CUgraphNode child;
  CHECK(cuGraphAddChildGraphNode(&child, parent, nullptr, 0, p.graph) == CUDA_ERROR_NOT_SUPPORTED);
  REQUIRE_CU(cuGraphDestroy(parent));
  // Freed twice in its graph; an address no allocation node returned.
  CUgraphNode extra;
  CHECK(cuGraphAddMemFreeNode(&extra, p.graph, &p.free, 1, p.dptr) == CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr plain;
  REQUIRE_CU(cuMemAlloc(&plain, 256));
  CHECK(cuGraphAddMemFreeNode(&extra, p.graph, &p.free, 1, plain) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuMemFree(plain));
  // A free in the allocation's own graph must be ordered after its allocation node.
  CUgraph g;
  REQUIRE_CU(cuGraphCreate(&g, 0));
  CUDA_MEM_ALLOC_NODE_PARAMS a = alloc_params(512);
  CUgraphNode alloc, root;
  REQUIRE_CU(cuGraphAddMemAllocNode(&alloc, g, nullptr, 0, &a));
  REQUIRE_CU(cuGraphAddEmptyNode(&root, g, nullptr, 0));
  CHECK(cuGraphAddMemFreeNode(&extra, g, &root, 1, a.dptr) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuGraphAddMemFreeNode(&extra, g, nullptr, 0, a.dptr) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuGraphAddMemFreeNode(&extra, g, &alloc, 1, a.dptr));
  REQUIRE_CU(cuGraphDestroy(g));
  // Bad allocation parameters.
  CUDA_MEM_ALLOC_NODE_PARAMS bad = alloc_params(0);
  CHECK(cuGraphAddMemAllocNode(&extra, p.graph, nullptr, 0, &bad) == CUDA_ERROR_INVALID_VALUE);
  bad = alloc_params(64);
  bad.poolProps.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CHECK(cuGraphAddMemAllocNode(&extra, p.graph, nullptr, 0, &bad) == CUDA_ERROR_INVALID_VALUE);
  // Memory nodes' parameters cannot be modified.
  CUgraphNodeParams set{};
  set.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
  set.alloc = alloc_params<CUDA_MEM_ALLOC_NODE_PARAMS_v2>(64);
  CHECK(cuGraphNodeSetParams(p.alloc, &set) == CUDA_ERROR_INVALID_VALUE);
  // One executable graph at a time.
  CUgraphExec exec, second;
  REQUIRE_CU(cuGraphInstantiate(&exec, p.graph, 0));
  CHECK(cuGraphInstantiate(&second, p.graph, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuGraphExecNodeSetParams(exec, p.alloc, &set) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuGraphExecDestroy(exec));
  REQUIRE_CU(cuGraphInstantiate(&second, p.graph, 0));
  REQUIRE_CU(cuGraphExecDestroy(second));
}

TEST_CASE("graph memory: the generic node API makes memory nodes", "[graphs]") {
  CUcontext ctx;
  primary_context();
  REQUIRE_CU(cuCtxGetCurrent(&ctx));
  CUgraph g;
  REQUIRE_CU(cuGraphCreate(&g, 0));
  CUgraphNodeParams alloc{};
  alloc.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
  alloc.alloc = alloc_params<CUDA_MEM_ALLOC_NODE_PARAMS_v2>(kBytes);
  CUgraphNode alloc_node, set_node, copy_node, free_node;
  REQUIRE_CU(cuGraphAddNode(&alloc_node, g, nullptr, nullptr, 0, &alloc));
  REQUIRE(alloc.alloc.dptr != 0);
  CUDA_MEMSET_NODE_PARAMS m = fill(alloc.alloc.dptr, 9.0f);
  REQUIRE_CU(cuGraphAddMemsetNode(&set_node, g, &alloc_node, 1, &m, ctx));
  std::vector<float> out(kN);
  CUDA_MEMCPY3D c = to_host(out.data(), alloc.alloc.dptr);
  REQUIRE_CU(cuGraphAddMemcpyNode(&copy_node, g, &set_node, 1, &c, ctx));
  CUgraphNodeParams free{};
  free.type = CU_GRAPH_NODE_TYPE_MEM_FREE;
  free.free.dptr = alloc.alloc.dptr;
  REQUIRE_CU(cuGraphAddNode(&free_node, g, &copy_node, nullptr, 1, &free));
  CUgraphExec exec;
  REQUIRE_CU(cuGraphInstantiate(&exec, g, 0));
  REQUIRE_CU(cuGraphLaunch(exec, nullptr));
  REQUIRE_CU(cuCtxSynchronize());
  for (int i = 0; i < kN; ++i) REQUIRE(out[i] == 9.0f);
  REQUIRE_CU(cuGraphExecDestroy(exec));
  REQUIRE_CU(cuGraphDestroy(g));
}

TEST_CASE("graph memory: cuMemAllocAsync and cuMemFreeAsync under stream capture", "[graphs]") {
  Scale k;
  CUstream s;
  REQUIRE_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  std::vector<float> out(kN, -1.0f);
  CUdeviceptr dptr = 0;
  float factor = 0.5f;
  int n = kN;
  void* args[] = {&dptr, &factor, &n};
  REQUIRE_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  REQUIRE_CU(cuMemAllocAsync(&dptr, kBytes, s));
  REQUIRE(dptr != 0);
  REQUIRE_CU(cuMemsetD32Async(dptr, 0x41200000u, kN, s));  // 10.0f
  REQUIRE_CU(cuLaunchKernel(k.scale, (kN + 127) / 128, 1, 1, 128, 1, 1, 0, s, args, nullptr));
  REQUIRE_CU(cuMemcpyDtoHAsync(out.data(), dptr, kBytes, s));
  REQUIRE_CU(cuMemFreeAsync(dptr, s));
  CUgraph graph;
  REQUIRE_CU(cuStreamEndCapture(s, &graph));
  size_t count = 0;
  REQUIRE_CU(cuGraphGetNodes(graph, nullptr, &count));
  std::vector<CUgraphNode> nodes(count);
  REQUIRE_CU(cuGraphGetNodes(graph, nodes.data(), &count));
  int allocs = 0, frees = 0;
  for (CUgraphNode node : nodes) {
    CUgraphNodeType type;
    REQUIRE_CU(cuGraphNodeGetType(node, &type));
    allocs += type == CU_GRAPH_NODE_TYPE_MEM_ALLOC;
    frees += type == CU_GRAPH_NODE_TYPE_MEM_FREE;
  }
  CHECK(allocs == 1);
  CHECK(frees == 1);
  CUgraphExec exec;
  REQUIRE_CU(cuGraphInstantiate(&exec, graph, 0));
  for (int launch = 0; launch < 4; ++launch) {
    std::fill(out.begin(), out.end(), -1.0f);
    REQUIRE_CU(cuGraphLaunch(exec, s));
    REQUIRE_CU(cuStreamSynchronize(s));
    for (int i = 0; i < kN; ++i) REQUIRE(out[i] == 5.0f);
  }
  CHECK(graph_mem(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == 0);
  REQUIRE_CU(cuGraphExecDestroy(exec));
  REQUIRE_CU(cuGraphDestroy(graph));
  REQUIRE_CU(cuStreamDestroy(s));
}

TEST_CASE("graph memory: device code outside the allocation's lifetime is an illegal address",
          "[graphs]") {
  Scale k;
  Pipeline p(k.scale, 1.0f, true);
  CUgraphExec exec;
  REQUIRE_CU(cuGraphInstantiate(&exec, p.graph, 0));
  REQUIRE_CU(cuGraphLaunch(exec, nullptr));
  REQUIRE_CU(cuCtxSynchronize());
  // The graph freed it: a kernel that writes it now faults, as memcheck would report.
  float factor = 2.0f;
  int n = kN;
  CUdeviceptr dptr = p.dptr;
  void* args[] = {&dptr, &factor, &n};
  REQUIRE_CU(cuLaunchKernel(k.scale, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr));
  CHECK(cuCtxSynchronize() == CUDA_ERROR_ILLEGAL_ADDRESS);
}

#endif  // CUSNAP_TEST_HAVE_PTX_ENGINE

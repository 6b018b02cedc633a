// CUDA graphs and stream capture, checked against host computations of the same work.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "test_helpers.h"

using namespace cusnap_test;

#ifdef CUSNAP_TEST_HAVE_PTX_ENGINE

namespace {

struct Kernels {
  CUmodule module = nullptr;
  CUfunction add = nullptr;    // vector_add(a, b, c, n): c = a + b
  CUfunction scale = nullptr;  // scale_and_count(data, factor, n): data *= factor
  Kernels() {
    primary_context();
    std::string ptx = read_file(kernel_path("vector.ptx"));
    REQUIRE_CU(cuModuleLoadData(&module, ptx.c_str()));
    REQUIRE_CU(cuModuleGetFunction(&add, module, "vector_add"));
    REQUIRE_CU(cuModuleGetFunction(&scale, module, "scale_and_count"));
  }
  ~Kernels() { cuModuleUnload(module); }
};

constexpr int kN = 1000;
constexpr size_t kBytes = kN * sizeof(float);

struct Buffers {
  CUdeviceptr a = 0, b = 0, c = 0;
  Buffers() {
    REQUIRE_CU(cuMemAlloc(&a, kBytes));
    REQUIRE_CU(cuMemAlloc(&b, kBytes));
    REQUIRE_CU(cuMemAlloc(&c, kBytes));
  }
  ~Buffers() {
    cuMemFree(a);
    cuMemFree(b);
    cuMemFree(c);
  }
};

CUDA_MEMCPY3D linear_copy(CUmemorytype dst_type, void* dst, CUmemorytype src_type, const void* src,
                          size_t bytes) {
  CUDA_MEMCPY3D p{};
  p.srcMemoryType = src_type;
  p.dstMemoryType = dst_type;
  if (src_type == CU_MEMORYTYPE_HOST) {
    p.srcHost = src;
  } else {
    p.srcDevice = reinterpret_cast<CUdeviceptr>(src);
  }
  if (dst_type == CU_MEMORYTYPE_HOST) {
    p.dstHost = dst;
  } else {
    p.dstDevice = reinterpret_cast<CUdeviceptr>(dst);
  }
  p.WidthInBytes = bytes;
  p.Height = 1;
  p.Depth = 1;
  return p;
}

void* dev(CUdeviceptr p) { return reinterpret_cast<void*>(p); }

// A host node / host function: counts its calls and reads the last element of `watch` (a copy's
// destination), to show it ran after the copy.
struct HostProbe {
  std::atomic<int> calls{0};
  float seen = -1;
  const float* watch = nullptr;
};

void CUDA_CB note_call(void* p) {
  auto* probe = static_cast<HostProbe*>(p);
  if (probe->watch != nullptr) probe->seen = probe->watch[kN - 1];
  probe->calls++;
}

std::vector<CUgraphNode> nodes_of(CUgraph g) {
  size_t count = 0;
  REQUIRE_CU(cuGraphGetNodes(g, nullptr, &count));
  std::vector<CUgraphNode> nodes(count);
  REQUIRE_CU(cuGraphGetNodes(g, nodes.data(), &count));
  return nodes;
}

size_t edge_count(CUgraph g) {
  size_t count = 0;
  REQUIRE_CU(cuGraphGetEdges(g, nullptr, nullptr, nullptr, &count));
  return count;
}

}  // namespace

TEST_CASE("graph: memset, memcpy, kernel and host nodes run in dependency order", "[graphs]") {
  Kernels k;
  Buffers d;
  std::vector<float> a(kN), b(kN), out(kN, -1.0f);
  for (int i = 0; i < kN; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = static_cast<float>(3 * i + 1);
  }
  CUgraph g = nullptr;
  REQUIRE_CU(cuGraphCreate(&g, 0));
  CHECK(cuGraphCreate(&g, 1) == CUDA_ERROR_INVALID_VALUE);
  CUcontext ctx = nullptr;
  REQUIRE_CU(cuCtxGetCurrent(&ctx));

  CUDA_MEMSET_NODE_PARAMS ms{};
  ms.dst = d.c;
  ms.value = 0x7f7f7f7f;
  ms.elementSize = 4;
  ms.width = kN;
  ms.height = 1;
  CUgraphNode memset_node, copy_a, copy_b, add_node, scale_node, host_node, copy_out;
  REQUIRE_CU(cuGraphAddMemsetNode(&memset_node, g, nullptr, 0, &ms, ctx));
  CUDA_MEMCPY3D pa =
      linear_copy(CU_MEMORYTYPE_DEVICE, dev(d.a), CU_MEMORYTYPE_HOST, a.data(), kBytes);
  CUDA_MEMCPY3D pb =
      linear_copy(CU_MEMORYTYPE_DEVICE, dev(d.b), CU_MEMORYTYPE_HOST, b.data(), kBytes);
  REQUIRE_CU(cuGraphAddMemcpyNode(&copy_a, g, nullptr, 0, &pa, ctx));
  REQUIRE_CU(cuGraphAddMemcpyNode(&copy_b, g, nullptr, 0, &pb, ctx));
  // Kernel parameters are copied when the node is added: changing them afterwards does nothing.
  int n = kN;
  void* add_args[] = {&d.a, &d.b, &d.c, &n};
  CUDA_KERNEL_NODE_PARAMS kp = kernel_node(k.add, add_args, kN);
  CUgraphNode add_deps[] = {memset_node, copy_a, copy_b};
  REQUIRE_CU(cuGraphAddKernelNode(&add_node, g, add_deps, 3, &kp));
  n = 0;
  float factor = 2.0f;
  int n2 = kN;
  void* scale_args[] = {&d.c, &factor, &n2};
  CUDA_KERNEL_NODE_PARAMS sp = kernel_node(k.scale, scale_args, kN);
  REQUIRE_CU(cuGraphAddKernelNode(&scale_node, g, &add_node, 1, &sp));
  factor = 100.0f;
  CUDA_MEMCPY3D po =
      linear_copy(CU_MEMORYTYPE_HOST, out.data(), CU_MEMORYTYPE_DEVICE, dev(d.c), kBytes);
  REQUIRE_CU(cuGraphAddMemcpyNode(&copy_out, g, &scale_node, 1, &po, ctx));
  HostProbe probe;
  probe.watch = out.data();
  CUDA_HOST_NODE_PARAMS hp{note_call, &probe};
  REQUIRE_CU(cuGraphAddHostNode(&host_node, g, &copy_out, 1, &hp));

  // Bad dependencies: a duplicate, a node of another graph.
  CUgraphNode bad;
  CUgraphNode dup[] = {copy_a, copy_a};
  CHECK(cuGraphAddEmptyNode(&bad, g, dup, 2) == CUDA_ERROR_INVALID_VALUE);
  CUgraph other = nullptr;
  REQUIRE_CU(cuGraphCreate(&other, 0));
  CHECK(cuGraphAddEmptyNode(&bad, other, &copy_a, 1) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuGraphDestroy(other));

  // Queries.
  CHECK(nodes_of(g).size() == 7);
  CHECK(edge_count(g) == 6);
  size_t roots = 0;
  REQUIRE_CU(cuGraphGetRootNodes(g, nullptr, &roots));
  CHECK(roots == 3);
  CUgraphNodeType type;
  REQUIRE_CU(cuGraphNodeGetType(add_node, &type));
  CHECK(type == CU_GRAPH_NODE_TYPE_KERNEL);
  REQUIRE_CU(cuGraphNodeGetType(host_node, &type));
  CHECK(type == CU_GRAPH_NODE_TYPE_HOST);
  CUDA_KERNEL_NODE_PARAMS got{};
  REQUIRE_CU(cuGraphKernelNodeGetParams(add_node, &got));
  CHECK(got.func == k.add);
  CHECK(got.gridDimX == kp.gridDimX);
  CHECK(*static_cast<int*>(got.kernelParams[3]) == kN);
  CHECK(cuGraphMemcpyNodeGetParams(add_node, &pa) == CUDA_ERROR_INVALID_VALUE);
  size_t deps = 0;
  REQUIRE_CU(cuGraphNodeGetDependencies(add_node, nullptr, nullptr, &deps));
  CHECK(deps == 3);
  std::vector<CUgraphNode> dep_list(5, reinterpret_cast<CUgraphNode>(1));
  deps = 5;
  REQUIRE_CU(cuGraphNodeGetDependencies(add_node, dep_list.data(), nullptr, &deps));
  CHECK(deps == 3);
  CHECK(dep_list[3] == nullptr);  // the rest of a larger array is NULL, as documented

  CUgraphExec exec = nullptr;
  REQUIRE_CU(cuGraphInstantiate(&exec, g, 0));
  CUstream s;
  REQUIRE_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  for (int launch = 0; launch < 3; ++launch) {
    std::fill(out.begin(), out.end(), -1.0f);
    REQUIRE_CU(cuGraphLaunch(exec, s));
    REQUIRE_CU(cuStreamSynchronize(s));
    for (int i = 0; i < kN; ++i) {
      INFO("launch " << launch << " element " << i);
      REQUIRE(out[i] == (a[i] + b[i]) * 2.0f);
    }
    CHECK(probe.calls == launch + 1);
    CHECK(probe.seen == (a[kN - 1] + b[kN - 1]) * 2.0f);  // the host node ran after the copy
  }
  // Memcpy nodes read host memory when they run.
  a[5] = 1000.0f;
  REQUIRE_CU(cuGraphLaunch(exec, s));
  REQUIRE_CU(cuStreamSynchronize(s));
  CHECK(out[5] == (1000.0f + b[5]) * 2.0f);
  REQUIRE_CU(cuGraphExecDestroy(exec));
  CHECK(cuGraphLaunch(exec, s) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuGraphDestroy(g));
  CHECK(cuGraphNodeGetType(add_node, &type) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuStreamDestroy(s));
}

TEST_CASE("graph: dependencies are added, removed and refused as the driver does", "[graphs]") {
  primary_context();
  CUgraph g;
  REQUIRE_CU(cuGraphCreate(&g, 0));
  CUgraphNode x, y, z;
  REQUIRE_CU(cuGraphAddEmptyNode(&x, g, nullptr, 0));
  REQUIRE_CU(cuGraphAddEmptyNode(&y, g, nullptr, 0));
  REQUIRE_CU(cuGraphAddEmptyNode(&z, g, &x, 1));
  CHECK(edge_count(g) == 1);
  REQUIRE_CU(cuGraphAddDependencies(g, &y, &z, nullptr, 1));
  CHECK(edge_count(g) == 2);
  CHECK(cuGraphAddDependencies(g, &y, &z, nullptr, 1) == CUDA_ERROR_INVALID_VALUE);  // exists
  CHECK(cuGraphAddDependencies(g, &y, &y, nullptr, 1) == CUDA_ERROR_INVALID_VALUE);  // self
  CUgraphEdgeData programmatic{};
  programmatic.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
  CHECK(cuGraphAddDependencies_v2(g, &x, &y, &programmatic, 1) == CUDA_ERROR_NOT_SUPPORTED);
  REQUIRE_CU(cuGraphRemoveDependencies(g, &x, &z, nullptr, 1));
  CHECK(cuGraphRemoveDependencies(g, &x, &z, nullptr, 1) == CUDA_ERROR_INVALID_VALUE);
  CHECK(edge_count(g) == 1);
  CUgraphNode from[1], to[1];
  size_t count = 1;
  REQUIRE_CU(cuGraphGetEdges(g, from, to, nullptr, &count));
  CHECK((from[0] == y && to[0] == z));
  size_t dependents = 0;
  REQUIRE_CU(cuGraphNodeGetDependentNodes(y, nullptr, nullptr, &dependents));
  CHECK(dependents == 1);
  // A cycle cannot be instantiated.
  REQUIRE_CU(cuGraphAddDependencies(g, &z, &y, nullptr, 1));
  CUgraphExec exec = nullptr;
  CHECK(cuGraphInstantiate(&exec, g, 0) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuGraphDestroyNode(z));
  CHECK(edge_count(g) == 0);
  CHECK(nodes_of(g).size() == 2);
  REQUIRE_CU(cuGraphInstantiate(&exec, g, 0));
  REQUIRE_CU(cuGraphExecDestroy(exec));
  // Clone: the nodes are found by their originals.
  CUgraph clone;
  REQUIRE_CU(cuGraphClone(&clone, g));
  CUgraphNode found = nullptr;
  REQUIRE_CU(cuGraphNodeFindInClone(&found, x, clone));
  CHECK(found != x);
  CUgraphNodeType type;
  REQUIRE_CU(cuGraphNodeGetType(found, &type));
  CHECK(type == CU_GRAPH_NODE_TYPE_EMPTY);
  REQUIRE_CU(cuGraphDestroy(clone));
  REQUIRE_CU(cuGraphDestroy(g));
}

TEST_CASE("graph: child graphs and event nodes", "[graphs]") {
  Kernels k;
  Buffers d;
  CUcontext ctx;
  REQUIRE_CU(cuCtxGetCurrent(&ctx));
  CUgraph child, parent;
  REQUIRE_CU(cuGraphCreate(&child, 0));
  REQUIRE_CU(cuGraphCreate(&parent, 0));
  CUDA_MEMSET_NODE_PARAMS ms{};
  ms.dst = d.c;
  ms.value = 0x40400000;  // 3.0f
  ms.elementSize = 4;
  ms.width = kN;
  ms.height = 1;
  CUgraphNode set, child_node, scale_node, record_node;
  REQUIRE_CU(cuGraphAddMemsetNode(&set, child, nullptr, 0, &ms, ctx));
  REQUIRE_CU(cuGraphAddChildGraphNode(&child_node, parent, nullptr, 0, child));
  REQUIRE_CU(cuGraphDestroy(child));  // the node holds its own copy
  CUgraph embedded = nullptr;
  REQUIRE_CU(cuGraphChildGraphNodeGetGraph(child_node, &embedded));
  CHECK(nodes_of(embedded).size() == 1);
  CHECK(cuGraphDestroy(embedded) == CUDA_ERROR_INVALID_VALUE);  // owned by the node
  float factor = 5.0f;
  int n = kN;
  void* args[] = {&d.c, &factor, &n};
  CUDA_KERNEL_NODE_PARAMS sp = kernel_node(k.scale, args, kN);
  REQUIRE_CU(cuGraphAddKernelNode(&scale_node, parent, &child_node, 1, &sp));
  CUevent done;
  REQUIRE_CU(cuEventCreate(&done, CU_EVENT_DISABLE_TIMING));
  REQUIRE_CU(cuGraphAddEventRecordNode(&record_node, parent, &scale_node, 1, done));
  CUevent got = nullptr;
  REQUIRE_CU(cuGraphEventRecordNodeGetEvent(record_node, &got));
  CHECK(got == done);
  CUgraphExec exec;
  REQUIRE_CU(cuGraphInstantiate(&exec, parent, 0));
  CUstream s1, s2;
  REQUIRE_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
  REQUIRE_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
  REQUIRE_CU(cuGraphLaunch(exec, s1));
  // Another stream ordered after the graph's event record node sees the graph's result.
  REQUIRE_CU(cuStreamWaitEvent(s2, done, 0));
  std::vector<float> out(kN);
  REQUIRE_CU(cuMemcpyDtoHAsync(out.data(), d.c, kBytes, s2));
  REQUIRE_CU(cuStreamSynchronize(s2));
  for (int i = 0; i < kN; ++i) REQUIRE(out[i] == 15.0f);
  REQUIRE_CU(cuGraphExecDestroy(exec));
  REQUIRE_CU(cuGraphDestroy(parent));
  REQUIRE_CU(cuEventDestroy(done));
  REQUIRE_CU(cuStreamDestroy(s1));
  REQUIRE_CU(cuStreamDestroy(s2));
}

TEST_CASE("stream capture: a forked and joined capture launched 100 times", "[graphs]") {
  Kernels k;
  Buffers d;
  std::vector<float> b(kN), c0(kN), out(kN);
  for (int i = 0; i < kN; ++i) {
    b[i] = static_cast<float>(i % 7);
    c0[i] = static_cast<float>(i);
  }
  REQUIRE_CU(cuMemcpyHtoD(d.b, b.data(), kBytes));
  REQUIRE_CU(cuMemcpyHtoD(d.c, c0.data(), kBytes));
  REQUIRE_CU(cuMemsetD32(d.a, 0, kN));
  CUstream s, side;
  REQUIRE_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  REQUIRE_CU(cuStreamCreate(&side, CU_STREAM_NON_BLOCKING));
  CUevent fork, join;
  REQUIRE_CU(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
  REQUIRE_CU(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));

  REQUIRE_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUstreamCaptureStatus status;
  REQUIRE_CU(cuStreamIsCapturing(s, &status));
  CHECK(status == CU_STREAM_CAPTURE_STATUS_ACTIVE);
  REQUIRE_CU(cuEventRecord(fork, s));
  REQUIRE_CU(cuStreamWaitEvent(side, fork, 0));  // the side stream joins the capture
  int n = kN;
  // c += b on the origin stream, a += b on the side stream: independent of each other.
  void* add_args[] = {&d.c, &d.b, &d.c, &n};
  REQUIRE_CU(cuLaunchKernel(k.add, (kN + 127) / 128, 1, 1, 128, 1, 1, 0, s, add_args, nullptr));
  REQUIRE_CU(cuStreamIsCapturing(side, &status));
  CHECK(status == CU_STREAM_CAPTURE_STATUS_ACTIVE);
  void* side_args[] = {&d.a, &d.b, &d.a, &n};
  REQUIRE_CU(cuLaunchKernel(k.add, (kN + 127) / 128, 1, 1, 128, 1, 1, 0, side, side_args, nullptr));
  REQUIRE_CU(cuEventRecord(join, side));
  REQUIRE_CU(cuStreamWaitEvent(s, join, 0));
  cuuint64_t id = 0;
  CUgraph capturing = nullptr;
  const CUgraphNode* deps = nullptr;
  const CUgraphEdgeData* edge_data = nullptr;
  size_t num_deps = 0;
  REQUIRE_CU(cuStreamGetCaptureInfo(s, &status, &id, &capturing, &deps, &edge_data, &num_deps));
  CHECK(status == CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CHECK(id != 0);
  CHECK(num_deps == 2);  // the last node of each stream
  CUgraph graph = nullptr;
  REQUIRE_CU(cuStreamEndCapture(s, &graph));
  CHECK(graph == capturing);
  REQUIRE_CU(cuStreamIsCapturing(side, &status));
  CHECK(status == CU_STREAM_CAPTURE_STATUS_NONE);
  CHECK(nodes_of(graph).size() == 2);
  CHECK(edge_count(graph) == 0);  // two independent kernels (the fork came first)
  // Nothing ran during capture.
  REQUIRE_CU(cuMemcpyDtoH(out.data(), d.c, kBytes));
  CHECK(out == c0);

  CUgraphExec exec;
  REQUIRE_CU(cuGraphInstantiate(&exec, graph, 0));
  REQUIRE_CU(cuGraphUpload(exec, s));
  for (int i = 0; i < 100; ++i) REQUIRE_CU(cuGraphLaunch(exec, s));
  REQUIRE_CU(cuStreamSynchronize(s));
  REQUIRE_CU(cuMemcpyDtoH(out.data(), d.c, kBytes));
  std::vector<float> side_out(kN);
  REQUIRE_CU(cuMemcpyDtoH(side_out.data(), d.a, kBytes));
  for (int i = 0; i < kN; ++i) {
    INFO("element " << i);
    REQUIRE(out[i] == c0[i] + 100.0f * b[i]);
    REQUIRE(side_out[i] == 100.0f * b[i]);
  }
  REQUIRE_CU(cuGraphExecDestroy(exec));
  REQUIRE_CU(cuGraphDestroy(graph));
  REQUIRE_CU(cuEventDestroy(fork));
  REQUIRE_CU(cuEventDestroy(join));
  REQUIRE_CU(cuStreamDestroy(s));
  REQUIRE_CU(cuStreamDestroy(side));
}

TEST_CASE("stream capture: copies, memsets and host functions become nodes", "[graphs]") {
  Kernels k;
  Buffers d;
  std::vector<float> in(kN), out(kN, -1.0f);
  for (int i = 0; i < kN; ++i) in[i] = static_cast<float>(i) * 0.5f;
  CUstream s;
  REQUIRE_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  HostProbe probe;
  probe.watch = out.data();
  float factor = 4.0f;
  int n = kN;
  void* args[] = {&d.c, &factor, &n};
  REQUIRE_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  REQUIRE_CU(cuMemsetD32Async(d.c, 0, kN, s));
  REQUIRE_CU(cuMemcpyHtoDAsync(d.c, in.data(), kBytes, s));
  REQUIRE_CU(cuLaunchKernel(k.scale, (kN + 127) / 128, 1, 1, 128, 1, 1, 0, s, args, nullptr));
  REQUIRE_CU(cuMemcpyDtoHAsync(out.data(), d.c, kBytes, s));
  REQUIRE_CU(cuLaunchHostFunc(s, note_call, &probe));
  CUgraph graph;
  REQUIRE_CU(cuStreamEndCapture(s, &graph));
  CHECK(probe.calls == 0);
  std::vector<CUgraphNode> nodes = nodes_of(graph);
  REQUIRE(nodes.size() == 5);
  CHECK(edge_count(graph) == 4);  // a chain
  const CUgraphNodeType expected[] = {CU_GRAPH_NODE_TYPE_MEMSET, CU_GRAPH_NODE_TYPE_MEMCPY,
                                      CU_GRAPH_NODE_TYPE_KERNEL, CU_GRAPH_NODE_TYPE_MEMCPY,
                                      CU_GRAPH_NODE_TYPE_HOST};
  for (size_t i = 0; i < nodes.size(); ++i) {
    CUgraphNodeType type;
    REQUIRE_CU(cuGraphNodeGetType(nodes[i], &type));
    CHECK(type == expected[i]);
  }
  CUDA_MEMCPY3D copy{};
  REQUIRE_CU(cuGraphMemcpyNodeGetParams(nodes[3], &copy));
  CHECK(copy.dstMemoryType == CU_MEMORYTYPE_HOST);
  CHECK(copy.dstHost == out.data());
  CHECK(copy.WidthInBytes == kBytes);
  CUgraphExec exec;
  REQUIRE_CU(cuGraphInstantiate(&exec, graph, 0));
  for (int launch = 1; launch <= 2; ++launch) {
    std::fill(out.begin(), out.end(), -1.0f);
    REQUIRE_CU(cuGraphLaunch(exec, s));
    REQUIRE_CU(cuStreamSynchronize(s));
    for (int i = 0; i < kN; ++i) REQUIRE(out[i] == in[i] * 4.0f);
    CHECK(probe.calls == launch);
    CHECK(probe.seen == in[kN - 1] * 4.0f);
  }
  REQUIRE_CU(cuGraphExecDestroy(exec));
  REQUIRE_CU(cuGraphDestroy(graph));
  REQUIRE_CU(cuStreamDestroy(s));
}

TEST_CASE("graph exec: update, node parameters and enabling", "[graphs]") {
  Kernels k;
  Buffers d;
  CUcontext ctx;
  REQUIRE_CU(cuCtxGetCurrent(&ctx));
  std::vector<float> ones(kN, 1.0f), out(kN);
  CUstream s;
  REQUIRE_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  auto build = [&](float factor, bool extra_node) {
    CUgraph g;
    REQUIRE_CU(cuGraphCreate(&g, 0));
    CUDA_MEMCPY3D up =
        linear_copy(CU_MEMORYTYPE_DEVICE, dev(d.c), CU_MEMORYTYPE_HOST, ones.data(), kBytes);
    CUgraphNode copy, kernel;
    REQUIRE_CU(cuGraphAddMemcpyNode(&copy, g, nullptr, 0, &up, ctx));
    int n = kN;
    void* args[] = {&d.c, &factor, &n};
    CUDA_KERNEL_NODE_PARAMS p = kernel_node(k.scale, args, kN);
    REQUIRE_CU(cuGraphAddKernelNode(&kernel, g, &copy, 1, &p));
    if (extra_node) {
      CUgraphNode empty;
      REQUIRE_CU(cuGraphAddEmptyNode(&empty, g, &kernel, 1));
    }
    return g;
  };
  auto run = [&](CUgraphExec exec) {
    REQUIRE_CU(cuGraphLaunch(exec, s));
    REQUIRE_CU(cuStreamSynchronize(s));
    REQUIRE_CU(cuMemcpyDtoH(out.data(), d.c, kBytes));
    return out[kN / 2];
  };
  CUgraph g2 = build(2.0f, false);
  CUgraphExec exec;
  REQUIRE_CU(cuGraphInstantiate(&exec, g2, 0));
  CHECK(run(exec) == 2.0f);

  // Same topology, new parameters: the update succeeds and the next launch uses them.
  CUgraph g3 = build(3.0f, false);
  CUgraphExecUpdateResultInfo info{};
  REQUIRE_CU(cuGraphExecUpdate(exec, g3, &info));
  CHECK(info.result == CU_GRAPH_EXEC_UPDATE_SUCCESS);
  CHECK(run(exec) == 3.0f);
  // Another topology is refused, naming the first node that differs.
  CUgraph g4 = build(4.0f, true);
  CHECK(cuGraphExecUpdate(exec, g4, &info) == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  CHECK(info.result == CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
  CHECK(run(exec) == 3.0f);

  // Exec node setters take a node of the instantiated graph; the graph itself is unchanged.
  std::vector<CUgraphNode> nodes = nodes_of(g2);
  float factor = 7.0f;
  int n = kN;
  void* args[] = {&d.c, &factor, &n};
  CUDA_KERNEL_NODE_PARAMS p = kernel_node(k.scale, args, kN);
  REQUIRE_CU(cuGraphExecKernelNodeSetParams(exec, nodes[1], &p));
  CHECK(cuGraphExecKernelNodeSetParams(exec, nodes[0], &p) == CUDA_ERROR_INVALID_VALUE);
  CHECK(run(exec) == 7.0f);
  CUDA_KERNEL_NODE_PARAMS got{};
  REQUIRE_CU(cuGraphKernelNodeGetParams(nodes[1], &got));
  CHECK(*static_cast<float*>(got.kernelParams[1]) == 2.0f);

  // A disabled kernel node does not run.
  unsigned enabled = 0;
  REQUIRE_CU(cuGraphNodeGetEnabled(exec, nodes[1], &enabled));
  CHECK(enabled == 1);
  REQUIRE_CU(cuGraphNodeSetEnabled(exec, nodes[1], 0));
  CHECK(run(exec) == 1.0f);
  REQUIRE_CU(cuGraphNodeSetEnabled(exec, nodes[1], 1));
  CHECK(run(exec) == 7.0f);

  REQUIRE_CU(cuGraphExecDestroy(exec));
  for (CUgraph g : {g2, g3, g4}) REQUIRE_CU(cuGraphDestroy(g));
  REQUIRE_CU(cuStreamDestroy(s));
}

TEST_CASE("stream capture: illegal calls return the driver's errors and invalidate", "[graphs]") {
  Kernels k;
  Buffers d;
  CUstream s, blocking;
  REQUIRE_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  REQUIRE_CU(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
  CUgraph graph = reinterpret_cast<CUgraph>(1);
  CUstreamCaptureStatus status;

  CHECK(cuStreamBeginCapture(CU_STREAM_LEGACY, CU_STREAM_CAPTURE_MODE_GLOBAL) ==
        CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CHECK(cuStreamEndCapture(s, &graph) == CUDA_ERROR_ILLEGAL_STATE);

  SECTION("synchronising a capturing stream") {
    REQUIRE_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_ERROR_ILLEGAL_STATE);
    CHECK(cuStreamSynchronize(s) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    REQUIRE_CU(cuStreamIsCapturing(s, &status));
    CHECK(status == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    CHECK(cuMemsetD32Async(d.c, 0, kN, s) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    CHECK(cuStreamEndCapture(s, &graph) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    CHECK(graph == nullptr);
  }
  SECTION("querying a capturing stream or a captured event") {
    REQUIRE_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CUevent e;
    REQUIRE_CU(cuEventCreate(&e, 0));
    REQUIRE_CU(cuEventRecord(e, s));
    CHECK(cuEventQuery(e) == CUDA_ERROR_CAPTURED_EVENT);
    CHECK(cuStreamEndCapture(s, &graph) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    // Still last recorded in a capture: nothing to query or wait for until recorded again.
    CHECK(cuEventSynchronize(e) == CUDA_ERROR_CAPTURED_EVENT);
    CHECK(cuStreamWaitEvent(blocking, e, 0) == CUDA_ERROR_CAPTURED_EVENT);
    REQUIRE_CU(cuEventRecord(e, s));
    REQUIRE_CU(cuEventSynchronize(e));
    REQUIRE_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK(cuStreamQuery(s) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CHECK(cuStreamEndCapture(s, &graph) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    REQUIRE_CU(cuEventDestroy(e));
  }
  SECTION("a synchronous copy on the legacy stream next to a capturing blocking stream") {
    REQUIRE_CU(cuStreamBeginCapture(blocking, CU_STREAM_CAPTURE_MODE_GLOBAL));
    std::vector<float> host(kN);
    CHECK(cuMemcpyHtoD(d.c, host.data(), kBytes) == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    CHECK(cuStreamIsCapturing(CU_STREAM_LEGACY, &status) == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    CHECK(cuStreamEndCapture(blocking, &graph) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    // A non-blocking stream's capture does not involve the legacy stream.
    REQUIRE_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    REQUIRE_CU(cuMemcpyHtoD(d.c, host.data(), kBytes));
    REQUIRE_CU(cuStreamEndCapture(s, &graph));
    REQUIRE_CU(cuGraphDestroy(graph));
  }
  SECTION("unsafe calls depend on the capture mode") {
    CUdeviceptr p = 0;
    REQUIRE_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK(cuMemAlloc(&p, 256) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CHECK(cuStreamEndCapture(s, &graph) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    // The calling thread in relaxed mode may make them.
    REQUIRE_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    REQUIRE_CU(cuThreadExchangeStreamCaptureMode(&mode));
    CHECK(mode == CU_STREAM_CAPTURE_MODE_GLOBAL);
    REQUIRE_CU(cuMemAlloc(&p, 256));
    REQUIRE_CU(cuMemFree(p));
    REQUIRE_CU(cuThreadExchangeStreamCaptureMode(&mode));
    REQUIRE_CU(cuStreamEndCapture(s, &graph));
    REQUIRE_CU(cuGraphDestroy(graph));
    // A thread-local capture of this thread does not restrict another thread in global mode,
    // but a global one does.
    for (CUstreamCaptureMode m :
         {CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, CU_STREAM_CAPTURE_MODE_GLOBAL}) {
      REQUIRE_CU(cuStreamBeginCapture(s, m));
      CUresult other = CUDA_ERROR_UNKNOWN;
      CUcontext ctx;
      REQUIRE_CU(cuCtxGetCurrent(&ctx));
      std::thread([&] {
        cuCtxSetCurrent(ctx);
        CUdeviceptr q = 0;
        other = cuMemAlloc(&q, 256);
        if (other == CUDA_SUCCESS) cuMemFree(q);
      }).join();
      if (m == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) {
        CHECK(other == CUDA_SUCCESS);
        REQUIRE_CU(cuStreamEndCapture(s, &graph));
        REQUIRE_CU(cuGraphDestroy(graph));
      } else {
        CHECK(other == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        CHECK(cuStreamEndCapture(s, &graph) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
      }
    }
  }
  SECTION("a forked stream that is not joined back") {
    CUstream side;
    REQUIRE_CU(cuStreamCreate(&side, CU_STREAM_NON_BLOCKING));
    CUevent e;
    REQUIRE_CU(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    REQUIRE_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    REQUIRE_CU(cuEventRecord(e, s));
    REQUIRE_CU(cuStreamWaitEvent(side, e, 0));
    REQUIRE_CU(cuMemsetD32Async(d.c, 0, kN, side));
    CHECK(cuStreamEndCapture(side, &graph) == CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
    CHECK(cuStreamEndCapture(s, &graph) == CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
    CHECK(graph == nullptr);
    REQUIRE_CU(cuStreamIsCapturing(side, &status));
    CHECK(status == CU_STREAM_CAPTURE_STATUS_NONE);
    // An event recorded outside the capture cannot be waited for inside it.
    REQUIRE_CU(cuEventRecord(e, side));
    REQUIRE_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK(cuStreamWaitEvent(s, e, 0) == CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
    CHECK(cuStreamEndCapture(s, &graph) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    REQUIRE_CU(cuEventDestroy(e));
    REQUIRE_CU(cuStreamDestroy(side));
  }
  SECTION("waiting for an event of another capture") {
    CUstream other;
    REQUIRE_CU(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
    CUevent e;
    REQUIRE_CU(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    REQUIRE_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    REQUIRE_CU(cuStreamBeginCapture(other, CU_STREAM_CAPTURE_MODE_GLOBAL));
    REQUIRE_CU(cuEventRecord(e, other));
    CHECK(cuStreamWaitEvent(s, e, 0) == CUDA_ERROR_STREAM_CAPTURE_MERGE);
    CHECK(cuStreamEndCapture(s, &graph) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    REQUIRE_CU(cuStreamEndCapture(other, &graph));
    REQUIRE_CU(cuGraphDestroy(graph));
    REQUIRE_CU(cuEventDestroy(e));
    REQUIRE_CU(cuStreamDestroy(other));
  }
  SECTION("another thread's event query during a global capture") {
    CUevent e;
    REQUIRE_CU(cuEventCreate(&e, 0));
    REQUIRE_CU(cuEventRecord(e, s));
    // Completed before the capture begins: a relaxed query then says SUCCESS, never NOT_READY
    // (the record is asynchronous; without this the answer depends on timing).
    REQUIRE_CU(cuEventSynchronize(e));
    REQUIRE_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUresult global = CUDA_SUCCESS, relaxed = CUDA_ERROR_UNKNOWN;
    std::thread([&] {
      global = cuEventQuery(e);  // a global-mode thread: prohibited, as documented
      CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
      cuThreadExchangeStreamCaptureMode(&mode);
      relaxed = cuEventQuery(e);
    }).join();
    CHECK(global == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CHECK(relaxed == CUDA_SUCCESS);
    CHECK(cuStreamEndCapture(s, &graph) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    REQUIRE_CU(cuEventDestroy(e));
  }
  SECTION("ending a global capture on another thread") {
    REQUIRE_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUresult other = CUDA_SUCCESS;
    std::thread([&] { other = cuStreamEndCapture(s, &graph); }).join();
    CHECK(other == CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
    REQUIRE_CU(cuStreamEndCapture(s, &graph));
    REQUIRE_CU(cuGraphDestroy(graph));
  }
  SECTION("a stream-ordered free of memory no graph allocated is refused") {
    CUdeviceptr p = 0;
    REQUIRE_CU(cuMemAllocAsync(&p, 256, s));
    REQUIRE_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK(cuMemFreeAsync(p, s) == CUDA_ERROR_NOT_SUPPORTED);
    CHECK(cuStreamEndCapture(s, &graph) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    REQUIRE_CU(cuMemFreeAsync(p, s));
  }
  REQUIRE_CU(cuStreamIsCapturing(s, &status));
  CHECK(status == CU_STREAM_CAPTURE_STATUS_NONE);
  REQUIRE_CU(cuStreamSynchronize(s));
  REQUIRE_CU(cuStreamDestroy(s));
  REQUIRE_CU(cuStreamDestroy(blocking));
}

TEST_CASE("stream capture: dependencies can be read and replaced during capture", "[graphs]") {
  Kernels k;
  Buffers d;
  CUstream s;
  REQUIRE_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  REQUIRE_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  REQUIRE_CU(cuMemsetD32Async(d.c, 0, kN, s));
  CUstreamCaptureStatus status;
  cuuint64_t id = 0;
  CUgraph g = nullptr;
  const CUgraphNode* deps = nullptr;
  size_t count = 0;
  REQUIRE_CU(cuStreamGetCaptureInfo(s, &status, &id, &g, &deps, nullptr, &count));
  REQUIRE(count == 1);
  CUgraphNode memset_node = deps[0];
  // A node added to the capture's graph by hand, then made the stream's dependency.
  CUgraphNode extra;
  REQUIRE_CU(cuGraphAddEmptyNode(&extra, g, &memset_node, 1));
  REQUIRE_CU(
      cuStreamUpdateCaptureDependencies(s, &extra, nullptr, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES));
  REQUIRE_CU(cuMemsetD32Async(d.a, 0, kN, s));
  // The capture's graph cannot be destroyed under it; a node it depends on can.
  CHECK(cuGraphDestroy(g) == CUDA_ERROR_ILLEGAL_STATE);
  REQUIRE_CU(cuStreamGetCaptureInfo(s, &status, &id, &g, &deps, nullptr, &count));
  REQUIRE(count == 1);
  CUgraphNode last = deps[0];
  REQUIRE_CU(cuMemsetD32Async(d.b, 0, kN, s));
  REQUIRE_CU(cuStreamGetCaptureInfo(s, &status, &id, &g, &deps, nullptr, &count));
  REQUIRE(count == 1);
  REQUIRE_CU(cuGraphDestroyNode(deps[0]));
  REQUIRE_CU(cuMemsetD32Async(d.b, 0, kN, s));  // now a root: its dependency is gone
  CUgraph graph;
  REQUIRE_CU(cuStreamEndCapture(s, &graph));
  CHECK(graph == g);
  CHECK(nodes_of(graph).size() == 4);
  CHECK(edge_count(graph) == 2);  // memset -> extra -> memset, and a root memset
  size_t dependents = 0;
  REQUIRE_CU(cuGraphNodeGetDependentNodes(last, nullptr, nullptr, &dependents));
  CHECK(dependents == 0);
  REQUIRE_CU(cuGraphDestroy(graph));
  // Capturing into an existing graph, after one of its nodes.
  CUgraph target;
  REQUIRE_CU(cuGraphCreate(&target, 0));
  CUgraphNode root;
  REQUIRE_CU(cuGraphAddEmptyNode(&root, target, nullptr, 0));
  REQUIRE_CU(
      cuStreamBeginCaptureToGraph(s, target, &root, nullptr, 1, CU_STREAM_CAPTURE_MODE_GLOBAL));
  REQUIRE_CU(cuMemsetD32Async(d.c, 0, kN, s));
  REQUIRE_CU(cuStreamEndCapture(s, &graph));
  CHECK(graph == target);
  CHECK(edge_count(target) == 1);
  REQUIRE_CU(cuGraphDestroy(target));
  REQUIRE_CU(cuStreamDestroy(s));
}

TEST_CASE("graph: the generic node API builds the same nodes", "[graphs]") {
  Kernels k;
  Buffers d;
  CUcontext ctx;
  REQUIRE_CU(cuCtxGetCurrent(&ctx));
  CUgraph g;
  REQUIRE_CU(cuGraphCreate(&g, 0));
  CUgraphNodeParams set{};
  set.type = CU_GRAPH_NODE_TYPE_MEMSET;
  set.memset.dst = d.c;
  set.memset.value = 0x3f800000;  // 1.0f
  set.memset.elementSize = 4;
  set.memset.width = kN;
  set.memset.height = 1;
  set.memset.ctx = ctx;
  CUgraphNode memset_node, kernel_node;
  REQUIRE_CU(cuGraphAddNode(&memset_node, g, nullptr, nullptr, 0, &set));
  float factor = 6.0f;
  int n = kN;
  void* args[] = {&d.c, &factor, &n};
  CUgraphNodeParams kernel{};
  kernel.type = CU_GRAPH_NODE_TYPE_KERNEL;
  CUDA_KERNEL_NODE_PARAMS kp = cusnap_test::kernel_node(k.scale, args, kN);
  kernel.kernel.func = kp.func;
  kernel.kernel.gridDimX = kp.gridDimX;
  kernel.kernel.gridDimY = kernel.kernel.gridDimZ = 1;
  kernel.kernel.blockDimX = kp.blockDimX;
  kernel.kernel.blockDimY = kernel.kernel.blockDimZ = 1;
  kernel.kernel.kernelParams = args;
  REQUIRE_CU(cuGraphAddNode(&kernel_node, g, &memset_node, nullptr, 1, &kernel));
  CUgraphNodeParams alloc{};
  alloc.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
  CUgraphNode refused;
  // Zeroed parameters: not pinned memory on a device (test_graph_memory.cpp makes real ones).
  CHECK(cuGraphAddNode(&refused, g, nullptr, nullptr, 0, &alloc) == CUDA_ERROR_INVALID_VALUE);
  set.reserved0[1] = 1;
  CHECK(cuGraphAddNode(&refused, g, nullptr, nullptr, 0, &set) == CUDA_ERROR_INVALID_VALUE);
  set.reserved0[1] = 0;
  CUgraphExec exec;
  REQUIRE_CU(cuGraphInstantiate(&exec, g, 0));
  CUstream s;
  REQUIRE_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  std::vector<float> out(kN);
  auto run = [&] {
    REQUIRE_CU(cuGraphLaunch(exec, s));
    REQUIRE_CU(cuStreamSynchronize(s));
    REQUIRE_CU(cuMemcpyDtoH(out.data(), d.c, kBytes));
  };
  run();
  for (int i = 0; i < kN; ++i) REQUIRE(out[i] == 6.0f);
  // The exec's memset changes; a memset node cannot be given kernel parameters.
  set.memset.value = 0x40000000;  // 2.0f
  REQUIRE_CU(cuGraphExecNodeSetParams(exec, memset_node, &set));
  CHECK(cuGraphExecNodeSetParams(exec, memset_node, &kernel) == CUDA_ERROR_INVALID_VALUE);
  run();
  for (int i = 0; i < kN; ++i) REQUIRE(out[i] == 12.0f);
  // The graph's own node is unchanged until cuGraphNodeSetParams.
  CUDA_MEMSET_NODE_PARAMS got{};
  REQUIRE_CU(cuGraphMemsetNodeGetParams(memset_node, &got));
  CHECK(got.value == 0x3f800000u);
  REQUIRE_CU(cuGraphNodeSetParams(memset_node, &set));
  REQUIRE_CU(cuGraphMemsetNodeGetParams(memset_node, &got));
  CHECK(got.value == 0x40000000u);
  REQUIRE_CU(cuGraphExecDestroy(exec));
  REQUIRE_CU(cuGraphDestroy(g));
  REQUIRE_CU(cuStreamDestroy(s));
}

TEST_CASE("graph: kernel node attributes", "[graphs]") {
  Kernels k;
  Buffers d;
  CUgraph g;
  REQUIRE_CU(cuGraphCreate(&g, 0));
  float factor = 3.0f;
  int n = kN;
  void* args[] = {&d.c, &factor, &n};
  CUDA_KERNEL_NODE_PARAMS p = kernel_node(k.scale, args, kN);
  CUgraphNode node, other;
  REQUIRE_CU(cuGraphAddKernelNode(&node, g, nullptr, 0, &p));
  REQUIRE_CU(cuGraphAddKernelNode(&other, g, nullptr, 0, &p));
  CUkernelNodeAttrValue value{};
  REQUIRE_CU(cuGraphKernelNodeGetAttribute(node, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &value));
  CHECK(value.cooperative == 0);
  value.cooperative = 1;
  REQUIRE_CU(cuGraphKernelNodeSetAttribute(node, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &value));
  value = {};
  value.priority = -2;
  REQUIRE_CU(cuGraphKernelNodeSetAttribute(node, CU_LAUNCH_ATTRIBUTE_PRIORITY, &value));
  value = {};
  value.clusterDim.x = 3;  // 8 blocks are not a multiple of 3
  value.clusterDim.y = value.clusterDim.z = 1;
  CHECK(cuGraphKernelNodeSetAttribute(node, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &value) ==
        CUDA_ERROR_INVALID_CLUSTER_SIZE);
  CHECK(cuGraphKernelNodeSetAttribute(node, CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE,
                                      &value) == CUDA_ERROR_NOT_SUPPORTED);
  REQUIRE_CU(cuGraphKernelNodeCopyAttributes(other, node));
  value = {};
  REQUIRE_CU(cuGraphKernelNodeGetAttribute(other, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &value));
  CHECK(value.cooperative == 1);
  REQUIRE_CU(cuGraphKernelNodeGetAttribute(other, CU_LAUNCH_ATTRIBUTE_PRIORITY, &value));
  CHECK(value.priority == -2);
  REQUIRE_CU(cuGraphKernelNodeGetAttribute(other, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &value));
  CHECK(value.clusterDim.x == 1);
  // The cooperative nodes still compute the same result.
  std::vector<float> ones(kN, 1.0f), out(kN);
  REQUIRE_CU(cuMemcpyHtoD(d.c, ones.data(), kBytes));
  CUgraphExec exec;
  REQUIRE_CU(cuGraphInstantiate(&exec, g, 0));
  REQUIRE_CU(cuGraphLaunch(exec, nullptr));
  REQUIRE_CU(cuCtxSynchronize());
  REQUIRE_CU(cuMemcpyDtoH(out.data(), d.c, kBytes));
  for (int i = 0; i < kN; ++i) REQUIRE(out[i] == 9.0f);
  REQUIRE_CU(cuGraphExecDestroy(exec));
  REQUIRE_CU(cuGraphDestroy(g));
}

namespace {
struct Destroyed {
  std::atomic<int> calls{0};
};
void CUDA_CB count_destroy(void* p) { static_cast<Destroyed*>(p)->calls++; }
// The destructor runs on a thread of its own: wait for it (bounded; it is started by the call
// that dropped the last reference, so it only ever takes scheduling time).
bool destroyed_within(const Destroyed& d, int expected) {
  for (int i = 0; i < 2000 && d.calls.load() < expected; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return d.calls.load() == expected;
}
}  // namespace

TEST_CASE("graph: user objects live as long as their last reference", "[graphs]") {
  primary_context();
  Destroyed d;
  CUuserObject object;
  CHECK(cuUserObjectCreate(&object, &d, count_destroy, 1, 0) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuUserObjectCreate(&object, &d, count_destroy, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC));
  CUgraph g;
  REQUIRE_CU(cuGraphCreate(&g, 0));
  REQUIRE_CU(cuGraphRetainUserObject(g, object, 1, CU_GRAPH_USER_OBJECT_MOVE));  // ours, moved
  CUgraphNode empty;
  REQUIRE_CU(cuGraphAddEmptyNode(&empty, g, nullptr, 0));
  CUgraphExec exec;
  REQUIRE_CU(cuGraphInstantiate(&exec, g, 0));
  CUgraph clone;
  REQUIRE_CU(cuGraphClone(&clone, g));
  CHECK(cuGraphReleaseUserObject(g, object, 2) == CUDA_ERROR_INVALID_VALUE);  // owns one
  REQUIRE_CU(cuGraphDestroy(g));
  REQUIRE_CU(cuGraphLaunch(exec, nullptr));
  REQUIRE_CU(cuCtxSynchronize());
  REQUIRE_CU(cuGraphDestroy(clone));
  CHECK(d.calls == 0);  // the exec still holds a reference
  REQUIRE_CU(cuGraphExecDestroy(exec));
  CHECK(destroyed_within(d, 1));
  CHECK(cuUserObjectRelease(object, 1) == CUDA_ERROR_INVALID_VALUE);  // gone
}

TEST_CASE("graph: cuGraphDebugDotPrint writes the nodes and edges", "[graphs]") {
  Kernels k;
  Buffers d;
  CUgraph g;
  REQUIRE_CU(cuGraphCreate(&g, 0));
  float factor = 2.0f;
  int n = kN;
  void* args[] = {&d.c, &factor, &n};
  CUDA_KERNEL_NODE_PARAMS p = kernel_node(k.scale, args, kN);
  CUgraphNode empty, kernel;
  REQUIRE_CU(cuGraphAddEmptyNode(&empty, g, nullptr, 0));
  REQUIRE_CU(cuGraphAddKernelNode(&kernel, g, &empty, 1, &p));
  char path[] = "/tmp/cusnap_graph_dot_XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  REQUIRE_CU(cuGraphDebugDotPrint(g, path, CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE));
  std::string dot = read_file(path);
  std::remove(path);
  CHECK(dot.find("digraph") == 0);
  CHECK(dot.find("\"n0\" -> \"n1\"") != std::string::npos);
  CHECK(dot.find("scale_and_count") != std::string::npos);
  CHECK(dot.find("<<<(8,1,1),(128,1,1),0>>>") != std::string::npos);
  CHECK(cuGraphDebugDotPrint(g, "/nonexistent/dir/graph.dot", 0) == CUDA_ERROR_OPERATING_SYSTEM);
  REQUIRE_CU(cuGraphDestroy(g));
}

namespace {
struct Ordered {
  std::mutex mutex;
  std::vector<int> log;
  std::atomic<bool> open{false};
};
struct Mark {
  Ordered* ordered;
  int value;
};
void CUDA_CB mark_and_open(void* p) {
  auto* mark = static_cast<Mark*>(p);
  std::lock_guard lock(mark->ordered->mutex);
  mark->ordered->log.push_back(mark->value);
  mark->ordered->open = true;
}
// Blocks its stream until a mark opens the gate, or 2 s have passed.
void CUDA_CB bounded_gate(void* p) {
  auto* ordered = static_cast<Ordered*>(p);
  for (int i = 0; i < 400 && !ordered->open; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
}
}  // namespace

TEST_CASE("graph: launches of one exec are ordered across streams", "[graphs]") {
  primary_context();
  Ordered ordered;
  Mark first{&ordered, 1}, second{&ordered, 2};
  CUgraph g;
  REQUIRE_CU(cuGraphCreate(&g, 0));
  CUDA_HOST_NODE_PARAMS hp{mark_and_open, &first};
  CUgraphNode host;
  REQUIRE_CU(cuGraphAddHostNode(&host, g, nullptr, 0, &hp));
  CUgraphExec exec;
  REQUIRE_CU(cuGraphInstantiate(&exec, g, 0));
  CUstream s1, s2;
  REQUIRE_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
  REQUIRE_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
  // The first launch waits behind a gate only the second launch's node would open: were the
  // launches not ordered, the second would run first (log 2, 1); ordered, the gate times out.
  REQUIRE_CU(cuLaunchHostFunc(s1, bounded_gate, &ordered));
  REQUIRE_CU(cuGraphLaunch(exec, s1));
  hp.userData = &second;
  REQUIRE_CU(cuGraphExecHostNodeSetParams(exec, host, &hp));
  REQUIRE_CU(cuGraphLaunch(exec, s2));
  REQUIRE_CU(cuStreamSynchronize(s2));
  CHECK(ordered.log == std::vector<int>{1, 2});
  REQUIRE_CU(cuStreamSynchronize(s1));
  REQUIRE_CU(cuGraphExecDestroy(exec));
  REQUIRE_CU(cuGraphDestroy(g));
  REQUIRE_CU(cuStreamDestroy(s1));
  REQUIRE_CU(cuStreamDestroy(s2));
}

TEST_CASE("graph exec: update limitations of memset and kernel nodes", "[graphs]") {
  Kernels k;
  Buffers d;
  CUcontext ctx;
  REQUIRE_CU(cuCtxGetCurrent(&ctx));
  // A 2D memset (4 rows of 64 floats at a 1024-byte pitch) and a kernel node.
  auto build = [&](unsigned value, size_t width, bool cooperative) {
    CUgraph g;
    REQUIRE_CU(cuGraphCreate(&g, 0));
    CUDA_MEMSET_NODE_PARAMS ms{};
    ms.dst = d.c;
    ms.pitch = 1024;
    ms.value = value;
    ms.elementSize = 4;
    ms.width = width;
    ms.height = 4;
    CUgraphNode set, kernel;
    REQUIRE_CU(cuGraphAddMemsetNode(&set, g, nullptr, 0, &ms, ctx));
    float factor = 1.0f;
    int n = kN;
    void* args[] = {&d.c, &factor, &n};
    CUDA_KERNEL_NODE_PARAMS p = kernel_node(k.scale, args, kN);
    REQUIRE_CU(cuGraphAddKernelNode(&kernel, g, &set, 1, &p));
    CUkernelNodeAttrValue v{};
    v.cooperative = cooperative ? 1 : 0;
    REQUIRE_CU(cuGraphKernelNodeSetAttribute(kernel, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &v));
    return g;
  };
  CUgraph base = build(1, 64, true);
  CUgraphExec exec;
  REQUIRE_CU(cuGraphInstantiate(&exec, base, 0));
  CUgraphExecUpdateResultInfo info{};
  CUgraph value_only = build(2, 64, true);
  REQUIRE_CU(cuGraphExecUpdate(exec, value_only, &info));  // a 2D memset's value may change
  CUgraph wider = build(2, 65, true);
  CHECK(cuGraphExecUpdate(exec, wider, &info) == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  CHECK(info.result == CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED);
  CHECK(info.errorNode == nodes_of(wider)[0]);
  CUgraph not_cooperative = build(2, 64, false);
  CHECK(cuGraphExecUpdate(exec, not_cooperative, &info) == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  CHECK(info.result == CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED);
  // The exec setter keeps the node's attributes: still cooperative, so an update from a
  // cooperative graph still succeeds.
  float factor = 3.0f;
  int n = kN;
  void* args[] = {&d.c, &factor, &n};
  CUDA_KERNEL_NODE_PARAMS p = kernel_node(k.scale, args, kN);
  REQUIRE_CU(cuGraphExecKernelNodeSetParams(exec, nodes_of(base)[1], &p));
  REQUIRE_CU(cuGraphExecUpdate(exec, value_only, &info));
  CUkernelNodeAttrValue v{};
  REQUIRE_CU(cuGraphKernelNodeSetParams(nodes_of(base)[1], &p));
  REQUIRE_CU(cuGraphKernelNodeGetAttribute(nodes_of(base)[1], CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &v));
  CHECK(v.cooperative == 1);
  REQUIRE_CU(cuGraphExecDestroy(exec));
  for (CUgraph g : {base, value_only, wider, not_cooperative}) REQUIRE_CU(cuGraphDestroy(g));
}

#endif  // CUSNAP_TEST_HAVE_PTX_ENGINE

// graph_generic: a graph built only with the generic node API (cuGraphAddNode, i.e. _v2, and
// CUgraphNodeParams) -- memset, host-to-device memcpy, kernel, a child graph (itself one kernel
// node made the same way), device-to-host memcpy and an empty node -- instantiated and launched;
// then the kernel node's parameters changed in the executable graph (cuGraphExecNodeSetParams)
// and launched again, and in the graph (cuGraphNodeSetParams) and instantiated and launched
// anew. Each launch's result is compared exactly with the host's.
#include "sample_common.h"

CUSNAP_EMBEDDED_IMAGE(graph_generic_kernels)

using namespace cusnap::samples;

namespace {

constexpr int kElements = 384;
constexpr unsigned kFill = 4;      // the memset value
constexpr unsigned kChildMul = 3;  // the child graph's kernel

struct Kernel {
  CUfunction f = nullptr;
  CUdeviceptr acc = 0, in = 0;
  int n = kElements;
  unsigned mul = 0;
  void* args[4] = {&acc, &in, &n, &mul};
};

CUgraphNodeParams kernel_node(Kernel& k) {
  CUgraphNodeParams p{};
  p.type = CU_GRAPH_NODE_TYPE_KERNEL;
  p.kernel.func = k.f;
  p.kernel.gridDimX = kElements / 128;
  p.kernel.gridDimY = p.kernel.gridDimZ = 1;
  p.kernel.blockDimX = 128;
  p.kernel.blockDimY = p.kernel.blockDimZ = 1;
  p.kernel.kernelParams = k.args;
  return p;
}

CUgraphNodeParams copy_node(CUcontext ctx, bool to_device, CUdeviceptr device, void* host) {
  CUgraphNodeParams p{};
  p.type = CU_GRAPH_NODE_TYPE_MEMCPY;
  p.memcpy.copyCtx = ctx;
  CUDA_MEMCPY3D& c = p.memcpy.copyParams;
  c.srcMemoryType = to_device ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
  c.dstMemoryType = to_device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
  if (to_device) {
    c.srcHost = host;
    c.dstDevice = device;
  } else {
    c.srcDevice = device;
    c.dstHost = host;
  }
  c.WidthInBytes = kElements * sizeof(unsigned);
  c.Height = 1;
  c.Depth = 1;
  return p;
}

bool check_launch(const char* what, const std::vector<unsigned>& in, unsigned mul,
                  const std::vector<unsigned>& out, bool inject) {
  std::vector<unsigned> expected(kElements);
  for (int i = 0; i < kElements; ++i) expected[i] = (kFill * mul + in[i]) * kChildMul + in[i];
  if (inject) expected[kElements / 3] ^= 1u;
  bool ok = compare_exact(expected, out);
  if (!ok) std::printf("%s: wrong result\n", what);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv, kElements);
  std::vector<unsigned> in(kElements);
  Lcg lcg(4242);
  for (int i = 0; i < kElements; ++i) in[i] = static_cast<unsigned>(lcg.next_u32() & 0xfff);

  PrimaryContext context;
  CUcontext ctx;
  CU_CHECK(cuCtxGetCurrent(&ctx));
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, graph_generic_kernels_image().data));
  CUstream stream;
  CU_CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  Kernel outer, inner;
  CU_CHECK(cuModuleGetFunction(&outer.f, module, "mul_add"));
  inner.f = outer.f;
  CU_CHECK(cuMemAlloc(&outer.acc, kElements * sizeof(unsigned)));
  CU_CHECK(cuMemAlloc(&outer.in, kElements * sizeof(unsigned)));
  inner.acc = outer.acc;
  inner.in = outer.in;
  inner.mul = kChildMul;
  std::vector<unsigned> out(kElements, 0);

  CUgraph child;
  CU_CHECK(cuGraphCreate(&child, 0));
  CUgraphNode child_kernel;
  CUgraphNodeParams p = kernel_node(inner);
  CU_CHECK(cuGraphAddNode(&child_kernel, child, nullptr, nullptr, 0, &p));

  CUgraph graph;
  CU_CHECK(cuGraphCreate(&graph, 0));
  CUgraphNode set, upload, kernel, nested, download, done;
  p = {};
  p.type = CU_GRAPH_NODE_TYPE_MEMSET;
  p.memset.dst = outer.acc;
  p.memset.value = kFill;
  p.memset.elementSize = 4;
  p.memset.width = kElements;
  p.memset.height = 1;
  p.memset.ctx = ctx;
  CU_CHECK(cuGraphAddNode(&set, graph, nullptr, nullptr, 0, &p));
  p = copy_node(ctx, true, outer.in, in.data());
  CU_CHECK(cuGraphAddNode(&upload, graph, nullptr, nullptr, 0, &p));
  CUgraphNode before_kernel[] = {set, upload};
  outer.mul = 2;
  p = kernel_node(outer);
  CU_CHECK(cuGraphAddNode(&kernel, graph, before_kernel, nullptr, 2, &p));
  p = {};
  p.type = CU_GRAPH_NODE_TYPE_GRAPH;
  p.graph.graph = child;
  CU_CHECK(cuGraphAddNode(&nested, graph, &kernel, nullptr, 1, &p));
  p = copy_node(ctx, false, outer.acc, out.data());
  CU_CHECK(cuGraphAddNode(&download, graph, &nested, nullptr, 1, &p));
  p = {};
  p.type = CU_GRAPH_NODE_TYPE_EMPTY;
  CU_CHECK(cuGraphAddNode(&done, graph, &download, nullptr, 1, &p));

  CUgraphExec exec;
  CU_CHECK(cuGraphInstantiateWithFlags(&exec, graph, 0));
  CU_CHECK(cuGraphLaunch(exec, stream));
  CU_CHECK(cuStreamSynchronize(stream));
  bool ok = check_launch("launch 1", in, 2, out, false);

  // The kernel node of the executable graph only: mul 5.
  outer.mul = 5;
  p = kernel_node(outer);
  CU_CHECK(cuGraphExecNodeSetParams(exec, kernel, &p));
  CU_CHECK(cuGraphLaunch(exec, stream));
  CU_CHECK(cuStreamSynchronize(stream));
  ok = check_launch("launch 2", in, 5, out, false) && ok;

  // The kernel node of the graph: mul 7, in a new executable graph.
  outer.mul = 7;
  p = kernel_node(outer);
  CU_CHECK(cuGraphNodeSetParams(kernel, &p));
  CU_CHECK(cuGraphExecDestroy(exec));
  CU_CHECK(cuGraphInstantiateWithFlags(&exec, graph, 0));
  CU_CHECK(cuGraphLaunch(exec, stream));
  CU_CHECK(cuStreamSynchronize(stream));
  ok = check_launch("launch 3", in, 7, out, options.inject_error) && ok;

  CU_CHECK(cuGraphExecDestroy(exec));
  CU_CHECK(cuGraphDestroy(graph));
  CU_CHECK(cuGraphDestroy(child));
  CU_CHECK(cuMemFree(outer.in));
  CU_CHECK(cuMemFree(outer.acc));
  CU_CHECK(cuStreamDestroy(stream));
  CU_CHECK(cuModuleUnload(module));
  return finish("graph_generic", ok,
                "memset, memcpy, kernel, child graph and empty nodes by cuGraphAddNode; node "
                "params set in the exec and in the graph, exact");
}

// graph_explicit: a graph built node by node -- memset, host-to-device memcpy, kernel,
// device-to-host memcpy and a host node -- instantiated and launched, then changed twice: the
// kernel node's parameters with cuGraphExecKernelNodeSetParams, and the whole executable graph
// with cuGraphExecUpdate from a second graph of the same shape. Each launch's result is checked
// on the host (by the program and by the host node).
#include <atomic>

#include "sample_common.h"

CUSNAP_EMBEDDED_IMAGE(graph_explicit_kernels)

using namespace cusnap::samples;

namespace {

constexpr int kElements = 512;
constexpr unsigned kFill = 3;  // the memset value

struct HostCheck {
  const unsigned* out = nullptr;
  std::atomic<unsigned long long> total{0};
};

// The host node: runs after the device-to-host copy of the same launch.
void CUDA_CB add_up(void* data) {
  auto* check = static_cast<HostCheck*>(data);
  unsigned long long total = 0;
  for (int i = 0; i < kElements; ++i) total += check->out[i];
  check->total = total;
}

struct Nodes {
  CUgraph graph = nullptr;
  CUgraphNode kernel = nullptr;
};

CUDA_KERNEL_NODE_PARAMS kernel_params(CUfunction f, void** args) {
  CUDA_KERNEL_NODE_PARAMS p{};
  p.func = f;
  p.gridDimX = kElements / 128;
  p.gridDimY = p.gridDimZ = 1;
  p.blockDimX = 128;
  p.blockDimY = p.blockDimZ = 1;
  p.kernelParams = args;
  return p;
}

Nodes build(CUcontext ctx, CUfunction f, void** args, CUdeviceptr d_acc, CUdeviceptr d_in,
            const unsigned* h_in, unsigned* h_out, HostCheck* check) {
  Nodes nodes;
  const size_t bytes = kElements * sizeof(unsigned);
  CU_CHECK(cuGraphCreate(&nodes.graph, 0));
  CUDA_MEMSET_NODE_PARAMS set{};
  set.dst = d_acc;
  set.value = kFill;
  set.elementSize = 4;
  set.width = kElements;
  set.height = 1;
  CUgraphNode memset_node, upload, download, host;
  CU_CHECK(cuGraphAddMemsetNode(&memset_node, nodes.graph, nullptr, 0, &set, ctx));
  CUDA_MEMCPY3D in{};
  in.srcMemoryType = CU_MEMORYTYPE_HOST;
  in.srcHost = h_in;
  in.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  in.dstDevice = d_in;
  in.WidthInBytes = bytes;
  in.Height = 1;
  in.Depth = 1;
  CU_CHECK(cuGraphAddMemcpyNode(&upload, nodes.graph, nullptr, 0, &in, ctx));
  CUgraphNode before_kernel[] = {memset_node, upload};
  CUDA_KERNEL_NODE_PARAMS kp = kernel_params(f, args);
  CU_CHECK(cuGraphAddKernelNode(&nodes.kernel, nodes.graph, before_kernel, 2, &kp));
  CUDA_MEMCPY3D out{};
  out.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  out.srcDevice = d_acc;
  out.dstMemoryType = CU_MEMORYTYPE_HOST;
  out.dstHost = h_out;
  out.WidthInBytes = bytes;
  out.Height = 1;
  out.Depth = 1;
  CU_CHECK(cuGraphAddMemcpyNode(&download, nodes.graph, &nodes.kernel, 1, &out, ctx));
  CUDA_HOST_NODE_PARAMS hp{};
  hp.fn = add_up;
  hp.userData = check;
  CU_CHECK(cuGraphAddHostNode(&host, nodes.graph, &download, 1, &hp));
  return nodes;
}

// What one launch must leave in h_out, and the host node's total of it.
bool check_launch(const char* what, const std::vector<unsigned>& in, unsigned mul,
                  const unsigned* h_out, const HostCheck& check, bool inject) {
  std::vector<unsigned> expected(kElements);
  unsigned long long total = 0;
  for (int i = 0; i < kElements; ++i) {
    expected[i] = kFill + in[i] * mul;
    total += expected[i];
  }
  if (inject) expected[kElements / 2] ^= 1u;
  std::vector<unsigned> found(h_out, h_out + kElements);
  bool ok = compare_exact(expected, found);
  if (check.total != total) {
    std::printf("%s: host node saw a total of %llu, expected %llu\n", what,
                static_cast<unsigned long long>(check.total), total);
    ok = false;
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv, kElements);
  std::vector<unsigned> in(kElements);
  Lcg lcg(12345);
  for (int i = 0; i < kElements; ++i) in[i] = static_cast<unsigned>(lcg.next_u32() & 0xffff);

  PrimaryContext context;
  CUcontext ctx;
  CU_CHECK(cuCtxGetCurrent(&ctx));
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, graph_explicit_kernels_image().data));
  CUfunction combine;
  CU_CHECK(cuModuleGetFunction(&combine, module, "combine"));
  CUstream stream;
  CU_CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

  const size_t bytes = kElements * sizeof(unsigned);
  CUdeviceptr d_acc, d_in;
  CU_CHECK(cuMemAlloc(&d_acc, bytes));
  CU_CHECK(cuMemAlloc(&d_in, bytes));
  std::vector<unsigned> h_out(kElements, 0);
  HostCheck check;
  check.out = h_out.data();

  int n = kElements;
  unsigned mul = 2;
  void* args[] = {&d_acc, &d_in, &n, &mul};
  Nodes first = build(ctx, combine, args, d_acc, d_in, in.data(), h_out.data(), &check);
  CUgraphExec exec;
  CU_CHECK(cuGraphInstantiateWithFlags(&exec, first.graph, 0));
  CU_CHECK(cuGraphLaunch(exec, stream));
  CU_CHECK(cuStreamSynchronize(stream));
  bool ok = check_launch("launch 1", in, 2, h_out.data(), check, false);

  // The kernel node of the executable graph only: mul 5.
  unsigned mul5 = 5;
  void* args5[] = {&d_acc, &d_in, &n, &mul5};
  CUDA_KERNEL_NODE_PARAMS kp = kernel_params(combine, args5);
  CU_CHECK(cuGraphExecKernelNodeSetParams(exec, first.kernel, &kp));
  CU_CHECK(cuGraphLaunch(exec, stream));
  CU_CHECK(cuStreamSynchronize(stream));
  ok = check_launch("launch 2", in, 5, h_out.data(), check, false) && ok;

  // The whole executable graph from a second graph of the same shape: mul 7.
  mul = 7;
  Nodes second = build(ctx, combine, args, d_acc, d_in, in.data(), h_out.data(), &check);
  CUgraphExecUpdateResultInfo info{};
  CU_CHECK(cuGraphExecUpdate(exec, second.graph, &info));
  CU_CHECK(cuGraphLaunch(exec, stream));
  CU_CHECK(cuStreamSynchronize(stream));
  ok = check_launch("launch 3", in, 7, h_out.data(), check, options.inject_error) && ok;

  CU_CHECK(cuGraphExecDestroy(exec));
  CU_CHECK(cuGraphDestroy(second.graph));
  CU_CHECK(cuGraphDestroy(first.graph));
  CU_CHECK(cuMemFree(d_in));
  CU_CHECK(cuMemFree(d_acc));
  CU_CHECK(cuStreamDestroy(stream));
  CU_CHECK(cuModuleUnload(module));
  return finish("graph_explicit", ok,
                "memset, memcpy, kernel and host nodes; exec node params and exec update, exact");
}

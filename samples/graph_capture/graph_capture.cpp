// graph_capture: two kernels and a device-to-host copy captured from a stream into a graph
// (cuStreamBeginCapture ... cuStreamEndCapture), instantiated once and launched many times
// (--size, default 100). Checks the copy made by the last launch and the device state after all
// of them against a host computation of the same recurrence.
#include "sample_common.h"

CUSNAP_EMBEDDED_IMAGE(graph_capture_kernels)

using namespace cusnap::samples;

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv, 100, " (number of graph launches)");
  const size_t launches = options.size;
  constexpr int kElements = 256;
  constexpr unsigned kIncrement = 5;

  std::vector<unsigned> state(kElements), sum(kElements, 0);
  for (int i = 0; i < kElements; ++i) state[i] = static_cast<unsigned>(i) * 7u;
  std::vector<unsigned> initial = state;
  for (size_t k = 0; k < launches; ++k) {
    for (int i = 0; i < kElements; ++i) {
      state[i] = state[i] * 3u + kIncrement + unsigned(i);
      sum[i] += state[i] ^ 0x5a5a5a5au;
    }
  }
  maybe_inject_error(options, sum);

  PrimaryContext context;
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, graph_capture_kernels_image().data));
  CUfunction step, accumulate;
  CU_CHECK(cuModuleGetFunction(&step, module, "step"));
  CU_CHECK(cuModuleGetFunction(&accumulate, module, "accumulate"));
  CUstream stream;
  CU_CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

  const size_t bytes = kElements * sizeof(unsigned);
  CUdeviceptr d_state, d_sum;
  CU_CHECK(cuMemAlloc(&d_state, bytes));
  CU_CHECK(cuMemAlloc(&d_sum, bytes));
  CU_CHECK(cuMemcpyHtoD(d_state, initial.data(), bytes));
  CU_CHECK(cuMemsetD32(d_sum, 0, kElements));
  void* h_sum = nullptr;  // pinned: the graph's copy writes it every launch
  CU_CHECK(cuMemAllocHost(&h_sum, bytes));

  int n = kElements;
  unsigned increment = kIncrement;
  void* step_params[] = {&d_state, &n, &increment};
  void* accumulate_params[] = {&d_sum, &d_state, &n};
  CU_CHECK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CU_CHECK(cuLaunchKernel(step, 1, 1, 1, kElements, 1, 1, 0, stream, step_params, nullptr));
  CU_CHECK(cuLaunchKernel(accumulate, 2, 1, 1, kElements / 2, 1, 1, 0, stream, accumulate_params,
                          nullptr));
  CU_CHECK(cuMemcpyDtoHAsync(h_sum, d_sum, bytes, stream));
  CUgraph graph;
  CU_CHECK(cuStreamEndCapture(stream, &graph));
  CUgraphExec exec;
  CU_CHECK(cuGraphInstantiateWithFlags(&exec, graph, 0));

  for (size_t k = 0; k < launches; ++k) CU_CHECK(cuGraphLaunch(exec, stream));
  CU_CHECK(cuStreamSynchronize(stream));

  std::vector<unsigned> copied(static_cast<unsigned*>(h_sum), static_cast<unsigned*>(h_sum) + n);
  std::vector<unsigned> final_state(kElements);
  CU_CHECK(cuMemcpyDtoH(final_state.data(), d_state, bytes));
  bool ok = compare_exact(sum, copied) && compare_exact(state, final_state);

  CU_CHECK(cuGraphExecDestroy(exec));
  CU_CHECK(cuGraphDestroy(graph));
  CU_CHECK(cuMemFreeHost(h_sum));
  CU_CHECK(cuMemFree(d_sum));
  CU_CHECK(cuMemFree(d_state));
  CU_CHECK(cuStreamDestroy(stream));
  CU_CHECK(cuModuleUnload(module));
  char detail[96];
  std::snprintf(detail, sizeof(detail), "%zu launches of a captured graph, exact", launches);
  return finish("graph_capture", ok, detail);
}

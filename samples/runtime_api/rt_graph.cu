// A CUDA graph made by stream capture (cudaStreamBeginCapture .. cudaStreamEndCapture),
// instantiated once and launched many times.
#include <cstdint>
#include <vector>

#include "rt_check.h"

namespace {

constexpr int kCount = 1 << 14;
constexpr int kLaunches = 200;

__global__ void mix(uint32_t* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * 2654435761u + static_cast<uint32_t>(i);
}

__global__ void rotate(uint32_t* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = (data[i] << 5) | (data[i] >> 27);
}

}  // namespace

int main() {
  std::vector<uint32_t> host(kCount), expected(kCount);
  for (int i = 0; i < kCount; ++i) host[i] = expected[i] = static_cast<uint32_t>(i) ^ 0x5a5a5a5au;
  uint32_t* device = nullptr;
  size_t bytes = kCount * sizeof(uint32_t);
  cudaStream_t stream;
  RT_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  RT_CHECK(cudaMalloc(&device, bytes));
  RT_CHECK(cudaMemcpy(device, host.data(), bytes, cudaMemcpyHostToDevice));

  cudaGraph_t graph;
  cudaGraphExec_t exec;
  RT_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  mix<<<(kCount + 127) / 128, 128, 0, stream>>>(device, kCount);
  rotate<<<(kCount + 127) / 128, 128, 0, stream>>>(device, kCount);
  RT_CHECK(cudaStreamEndCapture(stream, &graph));
  size_t nodes = 0;
  RT_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  RT_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int l = 0; l < kLaunches; ++l) RT_CHECK(cudaGraphLaunch(exec, stream));
  RT_CHECK(cudaStreamSynchronize(stream));
  RT_CHECK(cudaMemcpy(host.data(), device, bytes, cudaMemcpyDeviceToHost));
  std::printf("rt_graph: %zu nodes, %d graph launches\n", nodes, kLaunches);

  for (int l = 0; l < kLaunches; ++l) {
    for (int i = 0; i < kCount; ++i) {
      uint32_t v = expected[i] * 2654435761u + static_cast<uint32_t>(i);
      expected[i] = (v << 5) | (v >> 27);
    }
  }
  long mismatches = 0;
  if (nodes != 2) rt_report_mismatch(mismatches, "graph node count", 0, nodes, 2);
  for (int i = 0; i < kCount; ++i) {
    if (host[i] != expected[i]) rt_report_mismatch(mismatches, "data", i, host[i], expected[i]);
  }
  RT_CHECK(cudaGraphExecDestroy(exec));
  RT_CHECK(cudaGraphDestroy(graph));
  RT_CHECK(cudaFree(device));
  RT_CHECK(cudaStreamDestroy(stream));
  return rt_finish("rt_graph", mismatches);
}

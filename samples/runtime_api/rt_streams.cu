// <<<>>> launches with cudaMemcpyAsync on several streams, from pinned host memory. Built twice:
// rt_streams (legacy default stream) and rt_streams_ptds (`--default-stream per-thread`, where
// two host threads also launch on their own per-thread default stream, stream 0).
#include <cmath>
#include <thread>
#include <vector>

#include "rt_check.h"

namespace {

constexpr int kStreams = 4;
constexpr int kChunk = 1 << 16;
constexpr int kRounds = 8;

__global__ void saxpy_offset(float a, const float* x, float* y, int n, float offset) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaf(a, x[i], y[i]) + offset;
}

float input_x(int stream, int i) { return static_cast<float>((i * 7 + stream) % 1000) * 0.25f; }
float input_y(int stream, int i) { return static_cast<float>((i * 13 + stream * 3) % 500) * 0.5f; }

float reference(int stream, int i) {
  float y = input_y(stream, i);
  for (int round = 0; round < kRounds; ++round) {
    y = std::fmaf(1.5f, input_x(stream, i), y) + static_cast<float>(round);
  }
  return y;
}

long run_on_stream(cudaStream_t stream, int index, const char* what) {
  float* host = nullptr;
  float *dx = nullptr, *dy = nullptr;
  size_t bytes = kChunk * sizeof(float);
  RT_CHECK(cudaMallocHost(&host, 2 * bytes));
  RT_CHECK(cudaMalloc(&dx, bytes));
  RT_CHECK(cudaMalloc(&dy, bytes));
  for (int i = 0; i < kChunk; ++i) {
    host[i] = input_x(index, i);
    host[kChunk + i] = input_y(index, i);
  }
  RT_CHECK(cudaMemcpyAsync(dx, host, bytes, cudaMemcpyHostToDevice, stream));
  RT_CHECK(cudaMemcpyAsync(dy, host + kChunk, bytes, cudaMemcpyHostToDevice, stream));
  for (int round = 0; round < kRounds; ++round) {
    saxpy_offset<<<(kChunk + 255) / 256, 256, 0, stream>>>(1.5f, dx, dy, kChunk,
                                                           static_cast<float>(round));
    RT_CHECK_LAUNCH();
  }
  RT_CHECK(cudaMemcpyAsync(host, dy, bytes, cudaMemcpyDeviceToHost, stream));
  RT_CHECK(cudaStreamSynchronize(stream));
  long mismatches = 0;
  for (int i = 0; i < kChunk; ++i) {
    if (host[i] != reference(index, i)) rt_report_mismatch(mismatches, what, i, host[i], reference(index, i));
  }
  RT_CHECK(cudaFree(dx));
  RT_CHECK(cudaFree(dy));
  RT_CHECK(cudaFreeHost(host));
  return mismatches;
}

}  // namespace

int main() {
  long mismatches = 0;
  // Several created streams, issued from one thread and overlapping.
  std::vector<cudaStream_t> streams(kStreams);
  for (auto& s : streams) RT_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::vector<std::thread> workers;
  std::vector<long> results(kStreams + 2, 0);
  for (int s = 0; s < kStreams; ++s) {
    workers.emplace_back([&, s] { results[s] = run_on_stream(streams[s], s, "stream"); });
  }
#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
  // With --default-stream per-thread, stream 0 is each host thread's own stream.
  for (int t = 0; t < 2; ++t) {
    workers.emplace_back([&, t] { results[kStreams + t] = run_on_stream(0, kStreams + t, "per-thread stream"); });
  }
  std::printf("rt_streams: %d streams + 2 per-thread default streams\n", kStreams);
#else
  std::printf("rt_streams: %d streams (legacy default stream)\n", kStreams);
#endif
  for (auto& w : workers) w.join();
  for (long r : results) mismatches += r;
  for (auto& s : streams) RT_CHECK(cudaStreamDestroy(s));
  RT_CHECK(cudaDeviceSynchronize());
  return rt_finish("rt_streams", mismatches);
}

// saxpy_streams: overlapping work on several non-blocking streams. Pinned host buffers
// (cuMemAllocHost), per-stream async copies and launches on disjoint chunks, an event per
// stream that the first stream waits for (cuStreamWaitEvent) before a whole-array kernel, a
// host function (cuLaunchHostFunc) that marks completion, and timing events
// (cuEventElapsedTime).
#include <atomic>

#include "sample_common.h"

CUSNAP_EMBEDDED_IMAGE(saxpy_kernels)

using namespace cusnap::samples;

namespace {

constexpr int kStreams = 4;

struct HostMark {
  std::atomic<int> calls{0};
  const float* result = nullptr;
  float first_value_seen = 0.0f;
};

// Runs on a driver thread once everything before it on the stream has finished; it may read the
// pinned result but must not call into CUDA.
void CUDA_CB on_stream_done(void* user_data) {
  auto* mark = static_cast<HostMark*>(user_data);
  mark->first_value_seen = mark->result[0];
  mark->calls.fetch_add(1);
}

}  // namespace

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv, 1 << 14);
  const size_t n = options.size;
  if (n > 0x7fffffff) fail_usage("--size must fit in an int");
  const float a = 1.75f;

  PrimaryContext context;
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, saxpy_kernels_image().data));
  CUfunction saxpy, scale;
  CU_CHECK(cuModuleGetFunction(&saxpy, module, "saxpy"));
  CU_CHECK(cuModuleGetFunction(&scale, module, "scale_by_two"));

  const size_t bytes = n * sizeof(float);
  float *x = nullptr, *y = nullptr, *out = nullptr;
  CU_CHECK(cuMemAllocHost(reinterpret_cast<void**>(&x), bytes));
  CU_CHECK(cuMemAllocHost(reinterpret_cast<void**>(&y), bytes));
  CU_CHECK(cuMemAllocHost(reinterpret_cast<void**>(&out), bytes));
  std::vector<float> reference(n);
  Lcg rng(2);
  for (size_t i = 0; i < n; ++i) {
    x[i] = rng.next_float(-4.0f, 4.0f);
    y[i] = rng.next_float(-4.0f, 4.0f);
    reference[i] = 2.0f * (a * x[i] + y[i]);
    out[i] = 0.0f;
  }
  maybe_inject_error(options, reference);

  CUdeviceptr d_x, d_y;
  CU_CHECK(cuMemAlloc(&d_x, bytes));
  CU_CHECK(cuMemAlloc(&d_y, bytes));

  CUstream streams[kStreams];
  CUevent chunk_done[kStreams];
  for (int s = 0; s < kStreams; ++s) {
    CU_CHECK(cuStreamCreate(&streams[s], CU_STREAM_NON_BLOCKING));
    CU_CHECK(cuEventCreate(&chunk_done[s], CU_EVENT_DISABLE_TIMING));
  }
  CUevent start, stop;
  CU_CHECK(cuEventCreate(&start, CU_EVENT_DEFAULT));
  CU_CHECK(cuEventCreate(&stop, CU_EVENT_DEFAULT));

  CU_CHECK(cuEventRecord(start, streams[0]));
  // Every stream must also wait for `start` so that the timed range covers all of them.
  for (int s = 1; s < kStreams; ++s) CU_CHECK(cuStreamWaitEvent(streams[s], start, 0));

  const size_t chunk = (n + kStreams - 1) / kStreams;
  const unsigned block = 128;
  for (int s = 0; s < kStreams; ++s) {
    size_t begin = std::min(n, chunk * s);
    size_t count = std::min(n, begin + chunk) - begin;
    if (count > 0) {
      size_t offset = begin * sizeof(float);
      CU_CHECK(cuMemcpyHtoDAsync(d_x + offset, x + begin, count * sizeof(float), streams[s]));
      CU_CHECK(cuMemcpyHtoDAsync(d_y + offset, y + begin, count * sizeof(float), streams[s]));
      CUdeviceptr px = d_x + offset, py = d_y + offset;
      int cn = static_cast<int>(count);
      float ca = a;
      void* params[] = {&ca, &px, &py, &cn};
      CU_CHECK(cuLaunchKernel(saxpy, blocks_for(count, block), 1, 1, block, 1, 1, 0, streams[s],
                              params, nullptr));
    }
    CU_CHECK(cuEventRecord(chunk_done[s], streams[s]));
  }
  for (int s = 1; s < kStreams; ++s) CU_CHECK(cuStreamWaitEvent(streams[0], chunk_done[s], 0));

  int total = static_cast<int>(n);
  void* scale_params[] = {&d_y, &total};
  CU_CHECK(cuLaunchKernel(scale, 32, 1, 1, block, 1, 1, 0, streams[0], scale_params, nullptr));
  CU_CHECK(cuMemcpyDtoHAsync(out, d_y, bytes, streams[0]));
  HostMark mark;
  mark.result = out;
  CU_CHECK(cuLaunchHostFunc(streams[0], on_stream_done, &mark));
  CU_CHECK(cuEventRecord(stop, streams[0]));
  CU_CHECK(cuStreamSynchronize(streams[0]));

  float elapsed_ms = -1.0f;
  CU_CHECK(cuEventElapsedTime(&elapsed_ms, start, stop));

  std::vector<float> found(out, out + n);
  // nvcc contracts a*x+y into one fma; the host may round twice. Allow a few ulps.
  bool ok = compare_close(reference, found, 1e-6, 1e-6);
  if (ok && mark.calls.load() != 1) {
    std::printf("MISMATCH in host function: expected 1 call, found %d\n", mark.calls.load());
    ok = false;
  }
  if (ok && mark.first_value_seen != out[0]) {
    std::printf("MISMATCH in host function: it ran before the copy finished\n");
    ok = false;
  }
  if (ok && !(elapsed_ms >= 0.0f)) {
    std::printf("MISMATCH in elapsed time: %g ms\n", elapsed_ms);
    ok = false;
  }

  for (int s = 0; s < kStreams; ++s) {
    CU_CHECK(cuEventDestroy(chunk_done[s]));
    CU_CHECK(cuStreamDestroy(streams[s]));
  }
  CU_CHECK(cuEventDestroy(start));
  CU_CHECK(cuEventDestroy(stop));
  CU_CHECK(cuMemFree(d_x));
  CU_CHECK(cuMemFree(d_y));
  CU_CHECK(cuMemFreeHost(x));
  CU_CHECK(cuMemFreeHost(y));
  CU_CHECK(cuMemFreeHost(out));
  CU_CHECK(cuModuleUnload(module));
  char detail[128];
  std::snprintf(detail, sizeof(detail), "n=%zu, %d streams, %.3f ms", n, kStreams, elapsed_ms);
  return finish("saxpy_streams", ok, detail);
}

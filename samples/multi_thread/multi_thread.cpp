// multi_thread: several host threads sharing the primary context, each working on its own
// non-blocking stream at the same time. Every thread makes the primary context current
// (cuCtxSetCurrent is per thread), creates a stream, allocates device memory and pinned host
// buffers, copies its inputs host to device asynchronously, launches `--launches` kernels
// (alternating `mix` and `rotate_add`, each tagged with its thread and step), copies the state
// back asynchronously and synchronises its stream. The threads wait at a barrier before their
// first driver call, so their calls interleave. Each thread's result is compared exactly with a
// host reference of the same recurrence.
//
// Options besides the common ones: --threads T (default 4), --launches L per thread (default 8),
// --sync-every S (also synchronise the stream after every S launches: a long run then keeps
// issuing calls until its end instead of queueing everything at once; default: only at the end).
// --size N is the number of elements per thread. --inject-error corrupts thread 0's reference.
#include <barrier>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "sample_common.h"

CUSNAP_EMBEDDED_IMAGE(multi_thread_kernels)

using namespace cusnap::samples;

namespace {

constexpr unsigned kBlock = 128;

struct Kernels {
  CUfunction mix = nullptr;
  CUfunction rotate_add = nullptr;
};

// What one worker thread did: the first failing driver call (the main thread reports it and
// exits 2, since exiting from a worker while the others are inside the driver is not safe), or
// the comparison's outcome.
struct ThreadResult {
  const char* failed_call = nullptr;
  CUresult failed_result = CUDA_SUCCESS;
  int failed_line = 0;
  bool matched = false;
};

#define THREAD_CHECK(result_ref, call)                   \
  do {                                                   \
    CUresult thread_check_result_ = (call);              \
    if (thread_check_result_ != CUDA_SUCCESS) {          \
      (result_ref).failed_call = #call;                  \
      (result_ref).failed_result = thread_check_result_; \
      (result_ref).failed_line = __LINE__;               \
      return;                                            \
    }                                                    \
  } while (0)

unsigned tag_of(unsigned thread, unsigned step) { return (thread << 16) | step; }

// The inputs of thread `t` (deterministic, different per thread).
void make_inputs(unsigned t, size_t n, unsigned* state, unsigned* other) {
  Lcg rng(1000 + t);
  for (size_t i = 0; i < n; ++i) {
    state[i] = rng.next_u32();
    other[i] = rng.next_u32();
  }
}

// Host reference of what the device computes for thread `t`.
std::vector<unsigned> reference_for(unsigned t, size_t n, unsigned launches) {
  std::vector<unsigned> state(n), other(n);
  make_inputs(t, n, state.data(), other.data());
  for (unsigned step = 0; step < launches; ++step) {
    unsigned tag = tag_of(t, step);
    for (size_t i = 0; i < n; ++i) {
      unsigned v = state[i];
      state[i] = step % 2 == 0 ? v * 5u + (other[i] ^ tag)
                               : ((v << 3) | (v >> 29)) + tag + static_cast<unsigned>(i);
    }
  }
  return state;
}

struct Shape {
  size_t n = 0;
  unsigned launches = 0;
  unsigned sync_every = 0;  // 0: never before the end
};

void worker(unsigned t, CUcontext context, const Kernels& kernels, Shape shape,
            std::barrier<>& start, const std::vector<unsigned>& reference, ThreadResult& result) {
  start.arrive_and_wait();
  THREAD_CHECK(result, cuCtxSetCurrent(context));
  CUstream stream;
  THREAD_CHECK(result, cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  const size_t n = shape.n;
  const size_t bytes = n * sizeof(unsigned);
  unsigned *h_state = nullptr, *h_other = nullptr;
  THREAD_CHECK(result, cuMemAllocHost(reinterpret_cast<void**>(&h_state), bytes));
  THREAD_CHECK(result, cuMemAllocHost(reinterpret_cast<void**>(&h_other), bytes));
  make_inputs(t, n, h_state, h_other);
  CUdeviceptr d_state, d_other;
  THREAD_CHECK(result, cuMemAlloc(&d_state, bytes));
  THREAD_CHECK(result, cuMemAlloc(&d_other, bytes));
  THREAD_CHECK(result, cuMemcpyHtoDAsync(d_state, h_state, bytes, stream));
  THREAD_CHECK(result, cuMemcpyHtoDAsync(d_other, h_other, bytes, stream));

  int count = static_cast<int>(n);
  unsigned grid = blocks_for(n, kBlock);
  for (unsigned step = 0; step < shape.launches; ++step) {
    if (shape.sync_every != 0 && step != 0 && step % shape.sync_every == 0) {
      THREAD_CHECK(result, cuStreamSynchronize(stream));
    }
    unsigned tag = tag_of(t, step);  // parameters are copied at launch time
    if (step % 2 == 0) {
      void* params[] = {&d_state, &d_other, &count, &tag};
      THREAD_CHECK(result, cuLaunchKernel(kernels.mix, grid, 1, 1, kBlock, 1, 1, 0, stream, params,
                                          nullptr));
    } else {
      void* params[] = {&d_state, &count, &tag};
      THREAD_CHECK(result, cuLaunchKernel(kernels.rotate_add, grid, 1, 1, kBlock, 1, 1, 0, stream,
                                          params, nullptr));
    }
  }
  // The pinned input buffer is reused for the result: the async copies that read it are ordered
  // before this one on the stream.
  THREAD_CHECK(result, cuMemcpyDtoHAsync(h_state, d_state, bytes, stream));
  THREAD_CHECK(result, cuStreamSynchronize(stream));

  std::vector<unsigned> found(h_state, h_state + n);
  result.matched = compare_exact(reference, found);

  THREAD_CHECK(result, cuMemFree(d_state));
  THREAD_CHECK(result, cuMemFree(d_other));
  THREAD_CHECK(result, cuMemFreeHost(h_state));
  THREAD_CHECK(result, cuMemFreeHost(h_other));
  THREAD_CHECK(result, cuStreamDestroy(stream));
}

// Removes "--NAME V" from argv (the common parser rejects options it does not know) and returns
// V, or `fallback` when absent.
unsigned take_count_option(int& argc, char** argv, const char* name, unsigned fallback,
                           unsigned max) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], name) != 0) continue;
    if (i + 1 >= argc) fail_usage((std::string(name) + " expects a positive integer").c_str());
    char* end = nullptr;
    unsigned long long value = std::strtoull(argv[i + 1], &end, 0);
    if (end == argv[i + 1] || *end != '\0' || value == 0 || value > max) {
      fail_usage(
          (std::string(name) + " expects an integer from 1 to " + std::to_string(max)).c_str());
    }
    for (int j = i; j + 2 <= argc; ++j) argv[j] = argv[j + 2];  // argv[argc] (nullptr) moves too
    argc -= 2;
    return static_cast<unsigned>(value);
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const unsigned threads = take_count_option(argc, argv, "--threads", 4, 64);
  const unsigned launches = take_count_option(argc, argv, "--launches", 8, 0xffff);
  const unsigned sync_every = take_count_option(argc, argv, "--sync-every", 0, 0xffff);
  Options options =
      parse_options(argc, argv, 4096, " [--threads T] [--launches L] [--sync-every S]");
  const size_t n = options.size;
  if (n > 0x7fffffff) fail_usage("--size must fit in an int");

  std::vector<std::vector<unsigned>> references;
  for (unsigned t = 0; t < threads; ++t) references.push_back(reference_for(t, n, launches));
  maybe_inject_error(options, references[0]);

  PrimaryContext context;
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, multi_thread_kernels_image().data));
  Kernels kernels;
  CU_CHECK(cuModuleGetFunction(&kernels.mix, module, "mix"));
  CU_CHECK(cuModuleGetFunction(&kernels.rotate_add, module, "rotate_add"));

  std::vector<ThreadResult> results(threads);
  {
    std::barrier start(static_cast<std::ptrdiff_t>(threads));
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) {
      pool.emplace_back(worker, t, context.context(), std::cref(kernels),
                        Shape{n, launches, sync_every}, std::ref(start), std::cref(references[t]),
                        std::ref(results[t]));
    }
    for (std::thread& thread : pool) thread.join();
  }

  bool ok = true;
  for (unsigned t = 0; t < threads; ++t) {
    const ThreadResult& r = results[t];
    if (r.failed_call != nullptr) {
      std::fprintf(stderr, "thread %u: ", t);
      fail_call(r.failed_call, r.failed_result, __FILE__, r.failed_line);
    }
  }
  for (unsigned t = 0; t < threads; ++t) {
    if (!results[t].matched) {
      std::printf("thread %u: results differ from the host reference\n", t);
      ok = false;
    }
  }
  CU_CHECK(cuModuleUnload(module));
  char detail[128];
  std::snprintf(detail, sizeof(detail), "%u threads x %zu elements, %u launches each, exact",
                threads, n, launches);
  return finish("multi_thread", ok, detail);
}

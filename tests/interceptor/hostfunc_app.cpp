// The application for interceptor.snapshot.hostfunc_<mode> (issue #10): a selected launch whose
// stream waits on a host function that blocks until the main thread releases it, which it does
// only after the launch has returned. A snapshot that synchronised the stream before the launch
// would wait for the host function, which waits for the main thread: a deadlock.
//   hostfunc_app IMAGE MODE
// IMAGE: samples/many_launches' fatbin (kernel `step`). MODE: where the host function is and
// where the launch goes:
//   same      cuLaunchHostFunc on stream S, the launch on S
//   callback  cuStreamAddCallback on S, the launch on S
//   event     the host function on non-blocking stream A, an event recorded on A after it,
//             non-blocking stream B waits on the event, the launch on B
//   chain     as event, and B's wait passed on: an event recorded on B after its wait, non-blocking
//             stream C waits on it, the launch on C
//   legacy    the host function on blocking stream A, the launch on the legacy default stream
//             (which waits on A)
//   per_thread the host function and the launch on this thread's per-thread default stream
//             (CU_STREAM_PER_THREAD)
//   unrelated the host function on non-blocking stream A, the launch on non-blocking stream B
//             (B does not wait on A)
//   ran       the host function on S, S synchronised (it has run), the launch on S
//   race      nothing pending when the launch on S begins; then, inside the shim's snapshot,
//             between its host-function check and its wait (the shim calls the exported
//             hostfunc_app_host_func_checked there when the test-only CUSNAP_TEST_HOST_FUNC_CHECKED
//             names it), a second thread enqueues the host function on S and returns
// Prints the buffer's checksum and what the host function saw. If the main thread is never
// released for kWatchdogSeconds (a deadlock), it says so and exits with 3, so that the failure
// is an exit code rather than a process that never ends.
#include <cuda.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sample_common.h"  // samples/common: CU_CHECK, load_kernel_file

namespace {

constexpr int kWatchdogSeconds = 120;

// The condition the host function waits for; set by the main thread after the launch returned.
struct Gate {
  std::mutex mutex;
  std::condition_variable changed;
  bool released = false;  // main thread: the launch has returned
  bool done = false;      // main thread: the program is finishing normally
  int calls = 0;          // host function runs
  uint64_t user_tag = 0;  // what the host function got as its user data
};

Gate g_gate;

void wait_released(void* user_data) {
  std::unique_lock lock(g_gate.mutex);
  g_gate.changed.wait(lock, [] { return g_gate.released; });
  ++g_gate.calls;
  g_gate.user_tag = reinterpret_cast<uint64_t>(user_data);
}

void CUDA_CB host_fn(void* user_data) { wait_released(user_data); }

void CUDA_CB stream_callback(CUstream, CUresult status, void* user_data) {
  if (status != CUDA_SUCCESS) std::fprintf(stderr, "callback status %d\n", status);
  wait_released(user_data);
}

CUstream g_race_stream = nullptr;  // race: where the second thread enqueues the host function

}  // namespace

// race: called by the shim (test-only hook) between its host-function check and its wait for
// the launch's stream; the first call has a second thread enqueue the blocking host function on
// the stream, and returns once that enqueue has returned. Later calls do nothing.
extern "C" __attribute__((visibility("default"))) void hostfunc_app_host_func_checked() {
  static bool done = false;
  if (done || g_race_stream == nullptr) return;
  done = true;
  std::thread other([] {
    CU_CHECK(cuLaunchHostFunc(g_race_stream, host_fn, reinterpret_cast<void*>(uintptr_t{0x5eed})));
  });
  other.join();
}

namespace {

void release() {
  std::lock_guard lock(g_gate.mutex);
  g_gate.released = true;
  g_gate.changed.notify_all();
}

// Ends the process if the main thread is stuck (the deadlock this test is about).
void watchdog() {
  std::unique_lock lock(g_gate.mutex);
  if (!g_gate.changed.wait_for(lock, std::chrono::seconds(kWatchdogSeconds),
                               [] { return g_gate.released || g_gate.done; })) {
    std::fprintf(stderr, "hostfunc_app: deadlock: the launch did not return in %d s\n",
                 kWatchdogSeconds);
    std::fflush(stderr);
    _exit(3);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: hostfunc_app IMAGE MODE\n");
    return 2;
  }
  const std::string mode = argv[2];
  if (mode != "same" && mode != "callback" && mode != "event" && mode != "chain" &&
      mode != "legacy" && mode != "per_thread" && mode != "unrelated" && mode != "ran" &&
      mode != "race") {
    std::fprintf(stderr, "hostfunc_app: unknown mode %s\n", mode.c_str());
    return 2;
  }
  const auto loaded = cusnap::samples::load_kernel_file(argv[1], "step");
  const CUdevice device = loaded.device;
  const CUmodule module = loaded.module;
  const CUfunction step = loaded.function;
  constexpr int kWords = 64;
  std::vector<uint32_t> host(kWords);
  for (int i = 0; i < kWords; ++i) host[i] = 2654435761u * static_cast<uint32_t>(i + 1);
  CUdeviceptr buffer;
  CU_CHECK(cuMemAlloc(&buffer, sizeof(uint32_t) * kWords));
  CU_CHECK(cuMemcpyHtoD(buffer, host.data(), sizeof(uint32_t) * kWords));

  const unsigned host_flags =
      mode == "legacy" || mode == "same" || mode == "callback" || mode == "ran" || mode == "race"
          ? CU_STREAM_DEFAULT
          : CU_STREAM_NON_BLOCKING;
  CUstream a;
  CUstream b;
  CU_CHECK(cuStreamCreate(&a, host_flags));
  CU_CHECK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
  CUstream c;
  CU_CHECK(cuStreamCreate(&c, CU_STREAM_NON_BLOCKING));
  CUevent event;
  CU_CHECK(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING));
  CUevent passed_on;
  CU_CHECK(cuEventCreate(&passed_on, CU_EVENT_DISABLE_TIMING));
  void* tag = reinterpret_cast<void*>(uintptr_t{0x5eed});

  std::thread guard(watchdog);
  if (mode == "ran") release();  // the host function runs at once; the stream is synchronised
  if (mode == "race") {
    g_race_stream = a;  // enqueued from the shim's hook, or (direct run) right after the launch
  } else if (mode == "callback") {
    CU_CHECK(cuStreamAddCallback(a, stream_callback, tag, 0));
  } else if (mode == "per_thread") {
    CU_CHECK(cuLaunchHostFunc(CU_STREAM_PER_THREAD, host_fn, tag));
  } else {
    CU_CHECK(cuLaunchHostFunc(a, host_fn, tag));
  }
  CUstream launch_stream = a;
  if (mode == "event" || mode == "chain") {
    CU_CHECK(cuEventRecord(event, a));
    CU_CHECK(cuStreamWaitEvent(b, event, 0));
    launch_stream = b;
    if (mode == "chain") {
      CU_CHECK(cuEventRecord(passed_on, b));
      CU_CHECK(cuStreamWaitEvent(c, passed_on, 0));
      launch_stream = c;
    }
  } else if (mode == "unrelated") {
    launch_stream = b;
  } else if (mode == "legacy") {
    launch_stream = nullptr;
  } else if (mode == "per_thread") {
    launch_stream = CU_STREAM_PER_THREAD;
  } else if (mode == "ran") {
    CU_CHECK(cuStreamSynchronize(a));
  }
  int n = kWords;
  unsigned index = 7;
  void* params[] = {&buffer, &n, &index};
  CU_CHECK(cuLaunchKernel(step, 1, 1, 1, kWords, 1, 1, 0, launch_stream, params, nullptr));
  if (mode == "race") hostfunc_app_host_func_checked();  // no shim (direct run): enqueue it now
  release();
  CU_CHECK(cuCtxSynchronize());
  {
    std::lock_guard lock(g_gate.mutex);
    g_gate.done = true;
    g_gate.changed.notify_all();
  }
  guard.join();

  CU_CHECK(cuMemcpyDtoH(host.data(), buffer, sizeof(uint32_t) * kWords));
  uint64_t sum = 0;
  for (uint32_t word : host) sum = sum * 1099511628211ull + word;
  std::printf("mode %s checksum %016llx\n", mode.c_str(), static_cast<unsigned long long>(sum));
  std::printf("host function ran %d time(s), user data %llx\n", g_gate.calls,
              static_cast<unsigned long long>(g_gate.user_tag));
  CU_CHECK(cuEventDestroy(passed_on));
  CU_CHECK(cuEventDestroy(event));
  CU_CHECK(cuStreamDestroy(c));
  CU_CHECK(cuStreamDestroy(b));
  CU_CHECK(cuStreamDestroy(a));
  CU_CHECK(cuMemFree(buffer));
  CU_CHECK(cuModuleUnload(module));
  CU_CHECK(cuDevicePrimaryCtxRelease(device));
  return 0;
}

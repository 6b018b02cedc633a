// Stream ordering, legacy default stream semantics, host functions, events and timing.
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "test_helpers.h"

using namespace cusnap_test;
using namespace std::chrono_literals;

namespace {

struct Log {
  std::mutex mutex;
  std::vector<int> order;
  void add(int v) {
    std::lock_guard lock(mutex);
    order.push_back(v);
  }
};

struct Step {
  Log* log;
  int value;
  std::chrono::milliseconds delay;
};

void CUDA_CB run_step(void* p) {
  auto* step = static_cast<Step*>(p);
  std::this_thread::sleep_for(step->delay);
  step->log->add(step->value);
}

struct Gate {
  std::atomic<bool> open{false};
  std::atomic<bool> saw_open{false};
};

void CUDA_CB open_gate(void* p) { static_cast<Gate*>(p)->open = true; }

// Waits (bounded) for the gate: a stream that must not be blocked by this one opens it.
void CUDA_CB wait_gate(void* p) {
  auto* gate = static_cast<Gate*>(p);
  for (int i = 0; i < 200 && !gate->open; ++i) std::this_thread::sleep_for(5ms);
  gate->saw_open = gate->open.load();
}

}  // namespace

TEST_CASE("work on one stream runs in order, asynchronously to the host", "[stream]") {
  primary_context();
  CUstream s = nullptr;
  REQUIRE_CU(cuStreamCreate(&s, 0));
  Log log;
  std::vector<Step> steps;
  for (int i = 0; i < 6; ++i) steps.push_back({&log, i, std::chrono::milliseconds(i % 2 ? 1 : 15)});
  auto start = std::chrono::steady_clock::now();
  for (auto& step : steps) REQUIRE_CU(cuLaunchHostFunc(s, run_step, &step));
  CHECK(std::chrono::steady_clock::now() - start < 30ms);  // enqueueing does not wait
  CHECK(cuStreamQuery(s) == CUDA_ERROR_NOT_READY);
  REQUIRE_CU(cuStreamSynchronize(s));
  CHECK(cuStreamQuery(s) == CUDA_SUCCESS);
  CHECK(log.order == std::vector<int>{0, 1, 2, 3, 4, 5});
  unsigned flags = 99;
  REQUIRE_CU(cuStreamGetFlags(s, &flags));
  CHECK(flags == 0);
  REQUIRE_CU(cuStreamDestroy(s));
  CHECK(cuStreamQuery(s) == CUDA_ERROR_INVALID_HANDLE);
}

TEST_CASE("the legacy default stream synchronises with blocking streams only", "[stream]") {
  primary_context();
  CUstream blocking = nullptr, non_blocking = nullptr;
  REQUIRE_CU(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
  REQUIRE_CU(cuStreamCreateWithPriority(&non_blocking, CU_STREAM_NON_BLOCKING, -1));
  int priority = 0;
  REQUIRE_CU(cuStreamGetPriority(non_blocking, &priority));
  CHECK(priority == -1);

  SECTION("legacy work waits for earlier work of a blocking stream, and vice versa") {
    Log log;
    Step slow{&log, 1, 40ms}, legacy{&log, 2, 0ms}, after{&log, 3, 0ms};
    REQUIRE_CU(cuLaunchHostFunc(blocking, run_step, &slow));
    REQUIRE_CU(cuLaunchHostFunc(CU_STREAM_LEGACY, run_step, &legacy));
    REQUIRE_CU(cuLaunchHostFunc(blocking, run_step, &after));  // waits for the legacy work
    REQUIRE_CU(cuCtxSynchronize());
    CHECK(log.order == std::vector<int>{1, 2, 3});
  }
  SECTION("a non-blocking stream is not waited for by the legacy stream") {
    Gate gate;
    REQUIRE_CU(cuLaunchHostFunc(non_blocking, wait_gate, &gate));
    REQUIRE_CU(cuLaunchHostFunc(nullptr, open_gate, &gate));  // NULL = legacy stream
    REQUIRE_CU(cuCtxSynchronize());
    CHECK(gate.saw_open);
  }
  SECTION("a blocking stream is waited for (the gate stays closed until it times out)") {
    Gate gate;
    REQUIRE_CU(cuLaunchHostFunc(blocking, wait_gate, &gate));
    REQUIRE_CU(cuLaunchHostFunc(nullptr, open_gate, &gate));
    REQUIRE_CU(cuCtxSynchronize());
    CHECK_FALSE(gate.saw_open);
  }
  REQUIRE_CU(cuStreamDestroy(blocking));
  REQUIRE_CU(cuStreamDestroy(non_blocking));
}

TEST_CASE("cuStreamWaitEvent orders work across streams", "[stream][event]") {
  primary_context();
  CUstream a = nullptr, b = nullptr;
  REQUIRE_CU(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
  REQUIRE_CU(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
  CUevent e = nullptr;
  REQUIRE_CU(cuEventCreate(&e, CU_EVENT_DEFAULT));
  CHECK(cuEventQuery(e) == CUDA_SUCCESS);  // never recorded
  Log log;
  Step first{&log, 1, 40ms}, second{&log, 2, 0ms};
  REQUIRE_CU(cuLaunchHostFunc(a, run_step, &first));
  REQUIRE_CU(cuEventRecord(e, a));
  REQUIRE_CU(cuStreamWaitEvent(b, e, 0));
  REQUIRE_CU(cuLaunchHostFunc(b, run_step, &second));
  CHECK(cuEventQuery(e) == CUDA_ERROR_NOT_READY);
  REQUIRE_CU(cuEventSynchronize(e));
  REQUIRE_CU(cuStreamSynchronize(b));
  CHECK(log.order == std::vector<int>{1, 2});
  REQUIRE_CU(cuEventDestroy(e));
  REQUIRE_CU(cuStreamDestroy(a));
  REQUIRE_CU(cuStreamDestroy(b));
}

TEST_CASE("events: emulated, deterministic, monotonic timing", "[event]") {
  primary_context();
  CUstream s = nullptr;
  REQUIRE_CU(cuStreamCreate(&s, 0));
  constexpr size_t kBytes = 25 << 20;
  CUdeviceptr d = 0;
  REQUIRE_CU(cuMemAlloc(&d, kBytes));
  std::vector<char> host(kBytes, 1);
  CUevent e0, e1, e2, no_timing;
  REQUIRE_CU(cuEventCreate(&e0, 0));
  REQUIRE_CU(cuEventCreate(&e1, 0));
  REQUIRE_CU(cuEventCreate(&e2, CU_EVENT_BLOCKING_SYNC));
  REQUIRE_CU(cuEventCreate(&no_timing, CU_EVENT_DISABLE_TIMING));
  float ms = -1;
  CHECK(cuEventElapsedTime(&ms, e0, e1) == CUDA_ERROR_INVALID_HANDLE);  // not recorded yet

  REQUIRE_CU(cuEventRecord(e0, s));
  REQUIRE_CU(cuMemcpyHtoDAsync(d, host.data(), kBytes, s));
  REQUIRE_CU(cuEventRecord(e1, s));
  REQUIRE_CU(cuMemcpyHtoDAsync(d, host.data(), kBytes, s));
  REQUIRE_CU(cuMemcpyHtoDAsync(d, host.data(), kBytes, s));
  REQUIRE_CU(cuEventRecord(e2, s));
  REQUIRE_CU(cuEventRecord(no_timing, s));
  REQUIRE_CU(cuEventSynchronize(e2));
  REQUIRE_CU(cuEventSynchronize(no_timing));

  // A host-to-device copy is modelled at 25 GB/s: 25 MiB take ~1.05 ms whatever the host did.
  REQUIRE_CU(cuEventElapsedTime(&ms, e0, e1));
  double expected = (static_cast<double>(kBytes) / 25 + 1) / 1e6;
  CHECK(ms == Approx(expected).epsilon(1e-4));
  float ms2 = 0;
  REQUIRE_CU(cuEventElapsedTime_v2(&ms2, e1, e2));
  CHECK(ms2 == Approx(2 * expected).epsilon(1e-4));
  float back = 0;
  REQUIRE_CU(cuEventElapsedTime(&back, e2, e0));
  CHECK(back == Approx(-3 * expected).epsilon(1e-4));
  CHECK(cuEventElapsedTime(&ms, e0, no_timing) == CUDA_ERROR_INVALID_HANDLE);

  for (CUevent e : {e0, e1, e2, no_timing}) REQUIRE_CU(cuEventDestroy(e));
  REQUIRE_CU(cuMemFree(d));
  REQUIRE_CU(cuStreamDestroy(s));
}

TEST_CASE("host functions and stream callbacks run in stream order with the stream status",
          "[stream]") {
  primary_context();
  CUstream s = nullptr;
  REQUIRE_CU(cuStreamCreate(&s, 0));
  struct Record {
    Log log;
    CUresult status = CUDA_ERROR_UNKNOWN;
    CUstream stream = nullptr;
  } record;
  Step first{&record.log, 1, 10ms};
  REQUIRE_CU(cuLaunchHostFunc(s, run_step, &first));
  REQUIRE_CU(cuStreamAddCallback(
      s,
      [](CUstream stream, CUresult status, void* p) {
        auto* r = static_cast<Record*>(p);
        r->status = status;
        r->stream = stream;
        r->log.add(2);
      },
      &record, 0));
  Step third{&record.log, 3, 0ms};
  REQUIRE_CU(cuLaunchHostFunc(s, run_step, &third));
  REQUIRE_CU(cuStreamSynchronize(s));
  CHECK(record.log.order == std::vector<int>{1, 2, 3});
  CHECK(record.status == CUDA_SUCCESS);
  CHECK(record.stream == s);
  CHECK(cuStreamAddCallback(s, nullptr, nullptr, 0) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuStreamDestroy(s));
}

TEST_CASE("each thread has its own per-thread default stream", "[stream]") {
  CUcontext ctx = primary_context();
  CUstream_st* per_thread = CU_STREAM_PER_THREAD;
  unsigned long long main_id = 0, other_id = 0;
  REQUIRE_CU(cuStreamGetId(per_thread, &main_id));
  std::thread([&] {
    REQUIRE_CU(cuCtxSetCurrent(ctx));
    REQUIRE_CU(cuStreamGetId(per_thread, &other_id));
  }).join();
  unsigned long long legacy_id = 0;
  REQUIRE_CU(cuStreamGetId(CU_STREAM_LEGACY, &legacy_id));
  CHECK(main_id != other_id);
  CHECK(main_id != legacy_id);
}

TEST_CASE("capture status: a stream not capturing answers NONE, the capture mode is per thread",
          "[stream]") {
  primary_context();
  CUstream s = nullptr;
  REQUIRE_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  auto status = static_cast<CUstreamCaptureStatus>(99);
  REQUIRE_CU(cuStreamIsCapturing(s, &status));
  CHECK(status == CU_STREAM_CAPTURE_STATUS_NONE);
  status = static_cast<CUstreamCaptureStatus>(99);
  REQUIRE_CU(cuStreamIsCapturing(nullptr, &status));  // the legacy default stream
  CHECK(status == CU_STREAM_CAPTURE_STATUS_NONE);
  CHECK(cuStreamIsCapturing(s, nullptr) == CUDA_ERROR_INVALID_VALUE);

  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  REQUIRE_CU(cuThreadExchangeStreamCaptureMode(&mode));
  CHECK(mode == CU_STREAM_CAPTURE_MODE_GLOBAL);  // the default
  std::thread([] {
    CUstreamCaptureMode other = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
    CHECK(cuThreadExchangeStreamCaptureMode(&other) == CUDA_SUCCESS);
    CHECK(other == CU_STREAM_CAPTURE_MODE_GLOBAL);  // not this thread's RELAXED
  }).join();
  REQUIRE_CU(cuThreadExchangeStreamCaptureMode(&mode));
  CHECK(mode == CU_STREAM_CAPTURE_MODE_RELAXED);
  auto bad = static_cast<CUstreamCaptureMode>(7);
  CHECK(cuThreadExchangeStreamCaptureMode(&bad) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuStreamDestroy(s));
}

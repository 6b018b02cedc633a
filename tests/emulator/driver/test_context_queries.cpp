// The newer context entry points (cuCtxRecordEvent, cuCtxWaitEvent, cuCtxSynchronize_v2,
// cuCtxGetDevice_v2), the superseded ABIs cuda.h no longer binds to (reached through
// cuGetProcAddress with an old version, as old binaries bind them), async notifications.
// The old ABIs are what is tested here (and cuCtxAttach/Detach drive their usage count).
#define CUDA_ENABLE_DEPRECATED 1

#include <cudaTypedefs.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "test_helpers.h"

using namespace cusnap_test;

namespace {

struct Order {
  std::mutex mutex;
  std::vector<char> seen;
};
struct Mark {
  Order* order;
  char name;
};
void CUDA_CB mark(void* p) {
  auto* m = static_cast<Mark*>(p);
  std::lock_guard lock(m->order->mutex);
  m->order->seen.push_back(m->name);
}

// The old ABIs (cudaTypedefs.h declares these only for the driver's own build).
using CtxCreateV1 = CUresult(CUDAAPI*)(CUcontext*, unsigned, CUdevice);
using CtxDestroyV1 = CUresult(CUDAAPI*)(CUcontext);
using CtxPopV1 = CUresult(CUDAAPI*)(CUcontext*);
using CtxPushV1 = CUresult(CUDAAPI*)(CUcontext);
using PrimarySetFlagsV1 = CUresult(CUDAAPI*)(CUdevice, unsigned);
using PrimaryV1 = CUresult(CUDAAPI*)(CUdevice);
using StreamDestroyV1 = CUresult(CUDAAPI*)(CUstream);
using EventDestroyV1 = CUresult(CUDAAPI*)(CUevent);

template <class Fn>
Fn old_entry(const char* name, int version) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status;
  REQUIRE_CU(cuGetProcAddress(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &status));
  REQUIRE(fn != nullptr);
  return reinterpret_cast<Fn>(fn);
}

}  // namespace

TEST_CASE("cuCtxRecordEvent covers every stream, cuCtxWaitEvent orders all later work",
          "[context][events]") {
  CUcontext ctx = primary_context();
  CUstream a = nullptr, b = nullptr, c = nullptr;
  REQUIRE_CU(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
  REQUIRE_CU(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
  REQUIRE_CU(cuStreamCreate(&c, CU_STREAM_NON_BLOCKING));
  void* host_gate = nullptr;
  REQUIRE_CU(cuMemAllocHost(&host_gate, 4));
  auto* gate = static_cast<uint32_t*>(host_gate);
  *gate = 0;
  // Stream a is held by a wait only the host will satisfy; stream b's work completes.
  Order order;
  Mark on_a{&order, 'A'}, on_b{&order, 'B'}, on_c{&order, 'C'};
  REQUIRE_CU(
      cuStreamWaitValue32(a, reinterpret_cast<CUdeviceptr>(gate), 1, CU_STREAM_WAIT_VALUE_EQ));
  REQUIRE_CU(cuLaunchHostFunc(a, mark, &on_a));
  REQUIRE_CU(cuLaunchHostFunc(b, mark, &on_b));
  REQUIRE_CU(cuStreamSynchronize(b));
  CUevent all = nullptr;
  REQUIRE_CU(cuEventCreate(&all, CU_EVENT_DISABLE_TIMING));
  REQUIRE_CU(cuCtxRecordEvent(ctx, all));
  CHECK(cuEventQuery(all) == CUDA_ERROR_NOT_READY);  // stream a's work is in it
  // Every later submission in the context waits for it, on a stream that did nothing before.
  REQUIRE_CU(cuCtxWaitEvent(nullptr, all));  // NULL: the current context
  REQUIRE_CU(cuLaunchHostFunc(c, mark, &on_c));
  CHECK(cuStreamQuery(c) == CUDA_ERROR_NOT_READY);
  std::atomic_ref(*gate).store(1);
  REQUIRE_CU(cuCtxSynchronize_v2(ctx));
  CHECK(cuEventQuery(all) == CUDA_SUCCESS);
  REQUIRE(order.seen == std::vector<char>{'B', 'A', 'C'});
  CHECK_CU(cuEventDestroy(all));
  for (CUstream s : {a, b, c}) CHECK_CU(cuStreamDestroy(s));
  CHECK_CU(cuMemFreeHost(host_gate));
}

TEST_CASE("the context entry points with a context argument check it", "[context]") {
  CUcontext primary = primary_context();
  CUcontext other = nullptr;
  REQUIRE_CU(cuCtxCreate(&other, nullptr, 0, 0));  // now current
  CUevent of_other = nullptr;
  REQUIRE_CU(cuEventCreate(&of_other, 0));
  REQUIRE_CU(cuCtxSetCurrent(primary));
  // The event must be of the context recorded.
  CHECK(cuCtxRecordEvent(primary, of_other) == CUDA_ERROR_INVALID_HANDLE);
  REQUIRE_CU(cuCtxRecordEvent(other, of_other));
  // It may be waited for from another context.
  REQUIRE_CU(cuCtxWaitEvent(primary, of_other));
  CHECK(cuCtxRecordEvent(primary, reinterpret_cast<CUevent>(0x1234)) == CUDA_ERROR_INVALID_HANDLE);
  CHECK(cuCtxWaitEvent(reinterpret_cast<CUcontext>(0x1234), of_other) ==
        CUDA_ERROR_INVALID_CONTEXT);
  CUdevice dev = -1;
  REQUIRE_CU(cuCtxGetDevice_v2(&dev, other));
  CHECK(dev == 0);
  CHECK(cuCtxGetDevice_v2(nullptr, other) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuCtxGetDevice_v2(&dev, reinterpret_cast<CUcontext>(0x1234)) == CUDA_ERROR_INVALID_CONTEXT);
  REQUIRE_CU(cuCtxSynchronize_v2(other));
  REQUIRE_CU(cuCtxSynchronize_v2(nullptr));
  CHECK_CU(cuEventDestroy(of_other));
  CHECK_CU(cuCtxDestroy(other));
  CHECK(cuCtxSynchronize_v2(other) == CUDA_ERROR_INVALID_CONTEXT);
  // A thread with no context current: NULL names none.
  CUresult none = CUDA_SUCCESS;
  std::thread([&] { none = cuCtxGetDevice_v2(&dev, nullptr); }).join();
  CHECK(none == CUDA_ERROR_INVALID_CONTEXT);
}

TEST_CASE("cuCtxRecordEvent under capture is refused and invalidates it", "[context][capture]") {
  CUcontext ctx = primary_context();
  CUstream s = nullptr;
  REQUIRE_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUevent e = nullptr;
  REQUIRE_CU(cuEventCreate(&e, 0));
  REQUIRE_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
  CHECK(cuCtxRecordEvent(ctx, e) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CUgraph g = nullptr;
  CHECK(cuStreamEndCapture(s, &g) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  CHECK(g == nullptr);
  CHECK_CU(cuEventDestroy(e));
  CHECK_CU(cuStreamDestroy(s));
}

TEST_CASE("the superseded ABIs keep their documented semantics", "[context][legacy]") {
  CUcontext primary = primary_context();
  // CUDA 3.2 era: a context attached twice can be neither popped nor destroyed by the old ABIs.
  auto create = old_entry<CtxCreateV1>("cuCtxCreate", 2000);
  auto destroy = old_entry<CtxDestroyV1>("cuCtxDestroy", 2000);
  auto pop = old_entry<CtxPopV1>("cuCtxPopCurrent", 2000);
  auto push = old_entry<CtxPushV1>("cuCtxPushCurrent", 2000);
  CUcontext ctx = nullptr;
  REQUIRE_CU(create(&ctx, 0, 0));
  CUcontext attached = nullptr;
  REQUIRE_CU(cuCtxAttach(&attached, 0));
  CHECK(attached == ctx);
  CHECK(pop(nullptr) == CUDA_ERROR_INVALID_CONTEXT);
  CHECK(destroy(ctx) == CUDA_ERROR_INVALID_CONTEXT);
  REQUIRE_CU(cuCtxDetach(ctx));  // usage count 1 again
  CUcontext popped = nullptr;
  REQUIRE_CU(pop(&popped));
  CHECK(popped == ctx);
  REQUIRE_CU(push(ctx));
  REQUIRE_CU(destroy(ctx));
  CHECK(cuCtxGetDevice_v2(nullptr, ctx) == CUDA_ERROR_INVALID_CONTEXT);
  REQUIRE_CU(cuCtxSetCurrent(primary));

  // Pre-11.0: the primary context's flags could not change while it was active.
  auto set_flags = old_entry<PrimarySetFlagsV1>("cuDevicePrimaryCtxSetFlags", 7000);
  unsigned flags = 0;
  int active = 0;
  REQUIRE_CU(cuDevicePrimaryCtxGetState(0, &flags, &active));
  REQUIRE(active == 1);
  CHECK(set_flags(0, CU_CTX_SCHED_YIELD) == CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE);
  REQUIRE_CU(cuDevicePrimaryCtxSetFlags(0, flags));  // the _v2 ABI allows it
  auto release = old_entry<PrimaryV1>("cuDevicePrimaryCtxRelease", 7000);
  auto reset = old_entry<PrimaryV1>("cuDevicePrimaryCtxReset", 7000);
  CUcontext retained = nullptr;
  REQUIRE_CU(cuDevicePrimaryCtxRetain(&retained, 0));
  REQUIRE_CU(release(0));
  CHECK(release(7) == CUDA_ERROR_INVALID_DEVICE);
  CHECK(reset(7) == CUDA_ERROR_INVALID_DEVICE);

  // CUDA 2.0 stream and event destruction.
  auto stream_destroy = old_entry<StreamDestroyV1>("cuStreamDestroy", 2000);
  auto event_destroy = old_entry<EventDestroyV1>("cuEventDestroy", 2000);
  CUstream s = nullptr;
  REQUIRE_CU(cuStreamCreate(&s, 0));
  REQUIRE_CU(stream_destroy(s));
  CHECK(cuStreamQuery(s) == CUDA_ERROR_INVALID_HANDLE);
  CUevent e = nullptr;
  REQUIRE_CU(cuEventCreate(&e, 0));
  REQUIRE_CU(event_destroy(e));
  CHECK(cuEventQuery(e) == CUDA_ERROR_INVALID_HANDLE);
}

TEST_CASE("async notification callbacks register and unregister", "[device]") {
  primary_context();
  CUasyncCallbackHandle handle = nullptr;
  auto callback = [](CUasyncNotificationInfo*, void*, CUasyncCallbackHandle) {};
  CHECK(cuDeviceRegisterAsyncNotification(0, nullptr, nullptr, &handle) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(cuDeviceRegisterAsyncNotification(0, callback, nullptr, nullptr) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(cuDeviceRegisterAsyncNotification(3, callback, nullptr, &handle) ==
        CUDA_ERROR_INVALID_DEVICE);
  REQUIRE_CU(cuDeviceRegisterAsyncNotification(0, callback, nullptr, &handle));
  REQUIRE(handle != nullptr);
  REQUIRE_CU(cuDeviceUnregisterAsyncNotification(0, handle));
  CHECK(cuDeviceUnregisterAsyncNotification(0, handle) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuDeviceUnregisterAsyncNotification(0, nullptr) == CUDA_ERROR_INVALID_VALUE);
}

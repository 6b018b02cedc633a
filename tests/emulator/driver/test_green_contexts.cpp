// Device resources, SM splits and green contexts (one resource: the device's SMs), and the
// execution-affinity queries.
#include <atomic>
#include <cstdint>
#include <cstring>
#include <vector>

#include "test_helpers.h"

using namespace cusnap_test;

namespace {

unsigned sm_count() {
  int n = 0;
  REQUIRE_CU(cuDeviceGetAttribute(&n, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
  return static_cast<unsigned>(n);
}

}  // namespace

TEST_CASE("the device resource splits into SM groups", "[green]") {
  primary_context();
  CUdevResource device = {};
  REQUIRE_CU(cuDeviceGetDevResource(0, &device, CU_DEV_RESOURCE_TYPE_SM));
  CHECK(device.type == CU_DEV_RESOURCE_TYPE_SM);
  CHECK(device.sm.smCount == sm_count());
  CHECK(device.sm.smCount % device.sm.smCoscheduledAlignment == 0);
  // Query the number of groups of 16, then take two of them.
  unsigned groups = 0;
  REQUIRE_CU(cuDevSmResourceSplitByCount(nullptr, &groups, &device, nullptr, 0, 16));
  CHECK(groups == sm_count() / 16);
  CUdevResource result[2] = {};
  CUdevResource remaining = {};
  groups = 2;
  REQUIRE_CU(cuDevSmResourceSplitByCount(result, &groups, &device, &remaining, 0, 16));
  REQUIRE(groups == 2);
  CHECK(result[0].sm.smCount == 16);
  CHECK(result[1].sm.smCount == 16);
  CHECK(remaining.sm.smCount == sm_count() - 32);
  // A split result cannot be split again.
  unsigned again = 1;
  CUdevResource sub = {};
  CHECK(cuDevSmResourceSplitByCount(&sub, &again, &result[0], nullptr, 0, 4) ==
        CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION);
  // Argument checks.
  CHECK(cuDeviceGetDevResource(0, nullptr, CU_DEV_RESOURCE_TYPE_SM) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuDeviceGetDevResource(0, &sub, CU_DEV_RESOURCE_TYPE_INVALID) ==
        CUDA_ERROR_INVALID_RESOURCE_TYPE);
  CHECK(cuDeviceGetDevResource(4, &sub, CU_DEV_RESOURCE_TYPE_SM) == CUDA_ERROR_INVALID_DEVICE);
  CHECK(cuDevSmResourceSplitByCount(nullptr, &groups, &device, nullptr, 0, sm_count() + 1) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(cuDevSmResourceSplitByCount(nullptr, &groups, &device, nullptr, 0x10, 4) ==
        CUDA_ERROR_INVALID_VALUE);
  // Descriptors: resources of one split only.
  CUdevResourceDesc desc = nullptr;
  CUdevResource mixed[2] = {result[0], device};
  CHECK(cuDevResourceGenerateDesc(&desc, mixed, 2) == CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION);
  CUdevResource forged = result[0];
  std::memset(forged._internal_padding, 0, sizeof forged._internal_padding);
  CHECK(cuDevResourceGenerateDesc(&desc, &forged, 1) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuDevResourceGenerateDesc(&desc, result, 2));
  CHECK(desc != nullptr);
}

TEST_CASE("a green context runs work on its own streams over its partition", "[green]") {
  CUcontext primary = primary_context();
  CUdevResource device = {};
  REQUIRE_CU(cuDeviceGetDevResource(0, &device, CU_DEV_RESOURCE_TYPE_SM));
  CUdevResource part = {};
  unsigned groups = 1;
  REQUIRE_CU(cuDevSmResourceSplitByCount(&part, &groups, &device, nullptr, 0, 8));
  CUdevResourceDesc desc = nullptr;
  REQUIRE_CU(cuDevResourceGenerateDesc(&desc, &part, 1));
  CUgreenCtx green = nullptr;
  CHECK(cuGreenCtxCreate(&green, desc, 0, 0) == CUDA_ERROR_INVALID_VALUE);  // flag required
  REQUIRE_CU(cuGreenCtxCreate(&green, desc, 0, CU_GREEN_CTX_DEFAULT_STREAM));
  CUdevResource got = {};
  REQUIRE_CU(cuGreenCtxGetDevResource(green, &got, CU_DEV_RESOURCE_TYPE_SM));
  CHECK(got.sm.smCount == 8);
  CUcontext converted = nullptr;
  REQUIRE_CU(cuCtxFromGreenCtx(&converted, green));
  CHECK(converted != primary);
  REQUIRE_CU(cuCtxGetDevResource(converted, &got, CU_DEV_RESOURCE_TYPE_SM));
  CHECK(got.sm.smCount == 8);
  REQUIRE_CU(cuCtxGetDevResource(primary, &got, CU_DEV_RESOURCE_TYPE_SM));
  CHECK(got.sm.smCount == sm_count());
  unsigned long long id = 0;
  REQUIRE_CU(cuGreenCtxGetId(green, &id));
  CHECK(id != 0);

  // A stream of the green context: it names the green context, and its work runs.
  CUstream s = nullptr;
  CHECK(cuGreenCtxStreamCreate(&s, green, 0, 0) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE_CU(cuGreenCtxStreamCreate(&s, green, CU_STREAM_NON_BLOCKING, 0));
  CUgreenCtx of_stream = nullptr;
  REQUIRE_CU(cuStreamGetGreenCtx(s, &of_stream));
  CHECK(of_stream == green);
  CUcontext ctx_v2 = nullptr;
  CUgreenCtx green_v2 = nullptr;
  REQUIRE_CU(cuStreamGetCtx_v2(s, &ctx_v2, &green_v2));
  CHECK(ctx_v2 == primary);
  CHECK(green_v2 == green);
  CUstream plain = nullptr;
  REQUIRE_CU(cuStreamCreate(&plain, 0));
  REQUIRE_CU(cuStreamGetGreenCtx(plain, &of_stream));
  CHECK(of_stream == nullptr);

  void* host = nullptr;
  REQUIRE_CU(cuMemAllocHost(&host, 8));
  auto* gate = static_cast<uint32_t*>(host);
  gate[0] = 0;
  gate[1] = 0;
  const CUdeviceptr d_gate = reinterpret_cast<CUdeviceptr>(gate);
  REQUIRE_CU(cuStreamWaitValue32(s, d_gate, 1, CU_STREAM_WAIT_VALUE_EQ));
  REQUIRE_CU(cuStreamWaitValue32(plain, d_gate + 4, 1, CU_STREAM_WAIT_VALUE_EQ));
  // The primary context's record covers its green contexts' work; the green one's only its own.
  CUevent all = nullptr, own = nullptr;
  REQUIRE_CU(cuEventCreate(&all, CU_EVENT_DISABLE_TIMING));
  REQUIRE_CU(cuEventCreate(&own, CU_EVENT_DISABLE_TIMING));
  REQUIRE_CU(cuCtxRecordEvent(primary, all));
  REQUIRE_CU(cuGreenCtxRecordEvent(green, own));  // an event of the primary context is accepted
  CHECK(cuEventQuery(own) == CUDA_ERROR_NOT_READY);
  std::atomic_ref(gate[0]).store(1);  // releases the green context's stream only
  REQUIRE_CU(cuEventSynchronize(own));
  CHECK(cuEventQuery(all) == CUDA_ERROR_NOT_READY);  // the primary context's stream still waits
  std::atomic_ref(gate[1]).store(1);
  REQUIRE_CU(cuCtxSynchronize_v2(primary));
  CHECK(cuEventQuery(all) == CUDA_SUCCESS);
  CHECK(cuStreamQuery(s) == CUDA_SUCCESS);

  CHECK_CU(cuStreamDestroy(s));
  CHECK_CU(cuStreamDestroy(plain));
  CHECK_CU(cuEventDestroy(all));
  CHECK_CU(cuEventDestroy(own));
  CHECK_CU(cuMemFreeHost(host));
  REQUIRE_CU(cuGreenCtxDestroy(green));
  CHECK(cuGreenCtxDestroy(green) == CUDA_ERROR_INVALID_CONTEXT);
  CHECK(cuCtxFromGreenCtx(&converted, green) == CUDA_ERROR_INVALID_CONTEXT);
  unsigned flags = 0;
  int active = 0;
  REQUIRE_CU(cuDevicePrimaryCtxGetState(0, &flags, &active));
  CHECK(active == 1);  // still retained by primary_context()
}

TEST_CASE("execution affinity is reported as unsupported", "[green]") {
  primary_context();
  int supported = -1;
  REQUIRE_CU(cuDeviceGetExecAffinitySupport(&supported, CU_EXEC_AFFINITY_TYPE_SM_COUNT, 0));
  CHECK(supported == 0);
  CHECK(cuDeviceGetExecAffinitySupport(nullptr, CU_EXEC_AFFINITY_TYPE_SM_COUNT, 0) ==
        CUDA_ERROR_INVALID_VALUE);
  CUexecAffinityParam param = {};
  CHECK(cuCtxGetExecAffinity(&param, CU_EXEC_AFFINITY_TYPE_SM_COUNT) ==
        CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY);
  CHECK(cuCtxGetExecAffinity(nullptr, CU_EXEC_AFFINITY_TYPE_SM_COUNT) == CUDA_ERROR_INVALID_VALUE);
}

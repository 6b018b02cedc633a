#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "test_helpers.h"

using namespace cusnap_test;

TEST_CASE("calls before cuInit fail with NOT_INITIALIZED", "[device]") {
  // Runs first in its own process only when selected alone; otherwise cuInit already ran.
  int count = 0;
  CUresult r = cuDeviceGetCount(&count);
  CHECK((r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_INITIALIZED));
  CHECK(cuInit(1) == CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("driver version, device count, name, uuid and memory", "[device]") {
  REQUIRE_CU(cuInit(0));
  int version = 0;
  REQUIRE_CU(cuDriverGetVersion(&version));
  CHECK(version == 13000);
  int count = 0;
  REQUIRE_CU(cuDeviceGetCount(&count));
  CHECK(count == 1);
  CUdevice dev = -1;
  REQUIRE_CU(cuDeviceGet(&dev, 0));
  CHECK(dev == 0);
  CHECK(cuDeviceGet(&dev, 1) == CUDA_ERROR_INVALID_DEVICE);
  char name[128];
  REQUIRE_CU(cuDeviceGetName(name, sizeof name, 0));
  CHECK(std::string(name).find("cusnap emulator") != std::string::npos);
  char small[8];
  REQUIRE_CU(cuDeviceGetName(small, sizeof small, 0));
  CHECK(std::strlen(small) == 7);
  CUuuid uuid;
  REQUIRE_CU(cuDeviceGetUuid_v2(&uuid, 0));
  CHECK(std::memcmp(uuid.bytes, "cusnap-emulator", 15) == 0);
  size_t total = 0;
  REQUIRE_CU(cuDeviceTotalMem(&total, 0));
  CHECK(total >= (size_t{1} << 30));
}

TEST_CASE("device attributes: every enumerator has a plausible value", "[device]") {
  REQUIRE_CU(cuInit(0));
  auto get = [](CUdevice_attribute a) {
    int v = -12345;
    REQUIRE(cuDeviceGetAttribute(&v, a, 0) == CUDA_SUCCESS);
    return v;
  };
  for (int a = 1; a < CU_DEVICE_ATTRIBUTE_MAX; ++a) {
    int v = -12345;
    INFO("attribute " << a);
    CHECK(cuDeviceGetAttribute(&v, static_cast<CUdevice_attribute>(a), 0) == CUDA_SUCCESS);
    CHECK(v != -12345);
  }
  int v = 0;
  CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 3) == CUDA_ERROR_INVALID_DEVICE);
  CHECK(get(CU_DEVICE_ATTRIBUTE_WARP_SIZE) == 32);
  CHECK(get(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK) == 1024);
  CHECK(get(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT) == 132);
  CHECK(get(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK) == 48 * 1024);
  CHECK(get(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN) == 227 * 1024);
  CHECK(get(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR) == 228 * 1024);
  CHECK(get(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK) == 65536);
  CHECK(get(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING) == 1);
  CHECK(get(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) == 1);
  const char* sm = std::getenv("CUSNAP_EMU_SM");
  int expected = sm != nullptr ? std::atoi(sm) : 90;
  CHECK(get(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) * 10 +
            get(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR) ==
        expected);
}

TEST_CASE("error names and strings cover every CUresult", "[device]") {
  const char* text = nullptr;
  REQUIRE_CU(cuGetErrorName(CUDA_ERROR_ILLEGAL_ADDRESS, &text));
  CHECK(std::string(text) == "CUDA_ERROR_ILLEGAL_ADDRESS");
  REQUIRE_CU(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &text));
  CHECK(std::string(text).find("memory") != std::string::npos);
  REQUIRE_CU(cuGetErrorName(CUDA_ERROR_UNKNOWN, &text));
  CHECK(std::string(text) == "CUDA_ERROR_UNKNOWN");
  CHECK(cuGetErrorName(static_cast<CUresult>(123456), &text) == CUDA_ERROR_INVALID_VALUE);
  // A sample across the enum, including the newest values.
  for (CUresult r :
       {CUDA_SUCCESS, CUDA_ERROR_STUB_LIBRARY, CUDA_ERROR_NOT_SUPPORTED, CUDA_ERROR_LAUNCH_TIMEOUT,
        CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, CUDA_ERROR_INVALID_CLUSTER_SIZE}) {
    CHECK(cuGetErrorName(r, &text) == CUDA_SUCCESS);
    CHECK(cuGetErrorString(r, &text) == CUDA_SUCCESS);
  }
}

TEST_CASE("error strings are worded as NVIDIA's driver words them", "[device]") {
  // The wording real programs print (docs/emulator.md lists the codes confirmed this way).
  const std::pair<CUresult, const char*> expected[] = {
      {CUDA_SUCCESS, "no error"},
      {CUDA_ERROR_INVALID_VALUE, "invalid argument"},
      {CUDA_ERROR_OUT_OF_MEMORY, "out of memory"},
      {CUDA_ERROR_NOT_INITIALIZED, "initialization error"},
      {CUDA_ERROR_INVALID_CONTEXT, "invalid device context"},
      {CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"},
      {CUDA_ERROR_NOT_FOUND, "named symbol not found"},
      {CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"},
      {CUDA_ERROR_LAUNCH_TIMEOUT, "the launch timed out and was terminated"},
      {CUDA_ERROR_ASSERT, "device-side assert triggered"},
      {CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device"},
      {CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed"},
      {CUDA_ERROR_NOT_SUPPORTED, "operation not supported"},
      {CUDA_ERROR_UNKNOWN, "unknown error"},
  };
  for (const auto& [code, text] : expected) {
    const char* got = nullptr;
    INFO("CUresult " << static_cast<int>(code));
    REQUIRE_CU(cuGetErrorString(code, &got));
    CHECK(std::string(got) == text);
  }
  // Unconfirmed codes keep their cuda.h description; unknown codes are refused.
  const char* got = nullptr;
  REQUIRE_CU(cuGetErrorString(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, &got));
  CHECK(std::string(got).find("cuLaunchCooperativeKernel") != std::string::npos);
  got = "unchanged";
  CHECK(cuGetErrorString(static_cast<CUresult>(123456), &got) == CUDA_ERROR_INVALID_VALUE);
  CHECK(got == nullptr);
}

TEST_CASE("context stack: create, push, pop, set, destroy", "[context]") {
  CUcontext primary = primary_context();
  CUcontext current = nullptr;
  REQUIRE_CU(cuCtxGetCurrent(&current));
  CHECK(current == primary);

  CUcontext created = nullptr;
  REQUIRE_CU(cuCtxCreate(&created, nullptr, 0, 0));  // cuCtxCreate_v4; becomes current (pushed)
  REQUIRE_CU(cuCtxGetCurrent(&current));
  CHECK(current == created);
  CHECK(created != primary);

  CUcontext popped = nullptr;
  REQUIRE_CU(cuCtxPopCurrent(&popped));
  CHECK(popped == created);
  REQUIRE_CU(cuCtxGetCurrent(&current));
  CHECK(current == primary);

  REQUIRE_CU(cuCtxPushCurrent(created));
  REQUIRE_CU(cuCtxGetCurrent(&current));
  CHECK(current == created);
  REQUIRE_CU(cuCtxSetCurrent(primary));  // replaces the top
  REQUIRE_CU(cuCtxGetCurrent(&current));
  CHECK(current == primary);
  REQUIRE_CU(cuCtxPopCurrent(&popped));
  CHECK(popped == primary);
  REQUIRE_CU(cuCtxGetCurrent(&current));
  CHECK(current == primary);  // the first entry of the stack, set by primary_context()

  unsigned long long id1 = 0, id2 = 0;
  REQUIRE_CU(cuCtxGetId(primary, &id1));
  REQUIRE_CU(cuCtxGetId(created, &id2));
  CHECK(id1 != id2);
  REQUIRE_CU(cuCtxDestroy(created));
  CHECK(cuCtxPushCurrent(created) == CUDA_ERROR_INVALID_CONTEXT);
  CHECK(cuCtxDestroy(primary) == CUDA_ERROR_INVALID_CONTEXT);

  // Another thread starts with an empty stack.
  CUresult other = CUDA_SUCCESS;
  CUcontext other_current = primary;
  std::thread([&] { other = cuCtxGetCurrent(&other_current); }).join();
  CHECK(other == CUDA_SUCCESS);
  CHECK(other_current == nullptr);
  CUdevice dev = -1;
  REQUIRE_CU(cuCtxGetDevice(&dev));
  CHECK(dev == 0);
}

TEST_CASE("primary context state, flags and limits", "[context]") {
  primary_context();
  unsigned flags = 99;
  int active = 0;
  REQUIRE_CU(cuDevicePrimaryCtxGetState(0, &flags, &active));
  CHECK(active == 1);
  size_t value = 0;
  REQUIRE_CU(cuCtxGetLimit(&value, CU_LIMIT_PRINTF_FIFO_SIZE));
  CHECK(value == (1u << 20));
  REQUIRE_CU(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 64 << 20));
  REQUIRE_CU(cuCtxGetLimit(&value, CU_LIMIT_MALLOC_HEAP_SIZE));
  CHECK(value == (64u << 20));
  int least = 1, greatest = 1;
  REQUIRE_CU(cuCtxGetStreamPriorityRange(&least, &greatest));
  CHECK(least == 0);
  CHECK(greatest < 0);
  REQUIRE_CU(cuCtxSynchronize());
}

TEST_CASE("an unimplemented export answers NOT_SUPPORTED", "[device]") {
  primary_context();
  CHECK(cuGraphicsUnregisterResource(nullptr) == CUDA_ERROR_NOT_SUPPORTED);
  CUipcEventHandle handle{};
  CUevent event = nullptr;
  REQUIRE_CU(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS));
  CHECK(cuIpcGetEventHandle(&handle, event) == CUDA_ERROR_NOT_SUPPORTED);  // refused on purpose
  CHECK_CU(cuEventDestroy(event));
}

TEST_CASE("one device: peer access and P2P queries answer as documented for no peer", "[device]") {
  CUcontext primary = primary_context();
  int value = 7;
  // Every pair of devices is invalid or the same device.
  CHECK(cuDeviceGetP2PAttribute(&value, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 0) ==
        CUDA_ERROR_INVALID_DEVICE);
  CHECK(cuDeviceGetP2PAttribute(&value, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 1) ==
        CUDA_ERROR_INVALID_DEVICE);
  CHECK(value == 7);
  unsigned caps = 0;
  const CUatomicOperation op = CU_ATOMIC_OPERATION_INTEGER_ADD;
  CHECK(cuDeviceGetP2PAtomicCapabilities(&caps, &op, 1, 0, 0) == CUDA_ERROR_INVALID_DEVICE);
  // A second context on the same device is no peer of the first.
  CUcontext other = nullptr;
  REQUIRE_CU(cuCtxCreate(&other, nullptr, 0, 0));
  REQUIRE_CU(cuCtxSetCurrent(primary));
  CHECK(cuCtxEnablePeerAccess(primary, 0) == CUDA_ERROR_INVALID_CONTEXT);  // itself
  CHECK(cuCtxEnablePeerAccess(reinterpret_cast<CUcontext>(0x1234), 0) ==
        CUDA_ERROR_INVALID_CONTEXT);
  CHECK(cuCtxEnablePeerAccess(other, 1) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuCtxEnablePeerAccess(other, 0) == CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
  CHECK(cuCtxDisablePeerAccess(other) == CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
  REQUIRE_CU(cuCtxDestroy(other));
  REQUIRE_CU(cuCtxSetCurrent(primary));
  CHECK(cuCtxDisablePeerAccess(other) == CUDA_ERROR_INVALID_CONTEXT);  // destroyed
  // No unified function pointers: none is ever found.
  int unified = 1;
  REQUIRE_CU(cuDeviceGetAttribute(&unified, CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS, 0));
  CHECK(unified == 0);
  void* fptr = nullptr;
  CHECK(cuLibraryGetUnifiedFunction(&fptr, nullptr, "f") == CUDA_ERROR_INVALID_HANDLE);
  // No texture object has a resource view (cuTexObjectCreate refuses them).
  CUDA_RESOURCE_VIEW_DESC view{};
  CHECK(cuTexObjectGetResourceViewDesc(&view, 1) == CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("host atomic capabilities agree with HOST_NATIVE_ATOMIC_SUPPORTED and the engine",
          "[device]") {
  REQUIRE_CU(cuInit(0));
  int native = 0;
  REQUIRE_CU(cuDeviceGetAttribute(&native, CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED, 0));
  CHECK(native == 1);
  const CUatomicOperation ops[] = {CU_ATOMIC_OPERATION_INTEGER_ADD,
                                   CU_ATOMIC_OPERATION_INTEGER_INCREMENT, CU_ATOMIC_OPERATION_CAS,
                                   CU_ATOMIC_OPERATION_FLOAT_ADD, CU_ATOMIC_OPERATION_FLOAT_MAX};
  unsigned caps[5] = {};
  REQUIRE_CU(cuDeviceGetHostAtomicCapabilities(caps, ops, 5, 0));
  const unsigned scalar = CU_ATOMIC_CAPABILITY_SCALAR_32 | CU_ATOMIC_CAPABILITY_SCALAR_64;
  CHECK((caps[0] & (scalar | CU_ATOMIC_CAPABILITY_SIGNED | CU_ATOMIC_CAPABILITY_UNSIGNED)) ==
        (scalar | CU_ATOMIC_CAPABILITY_SIGNED | CU_ATOMIC_CAPABILITY_UNSIGNED));
  CHECK((caps[1] & CU_ATOMIC_CAPABILITY_SCALAR_64) == 0);  // atom.inc is u32 only
  CHECK((caps[2] & scalar) == scalar);
  CHECK((caps[3] & scalar) == scalar);
  CHECK(caps[4] == 0);  // no float max in the PTX engine
  for (unsigned c : caps)
    CHECK((c & (CU_ATOMIC_CAPABILITY_SCALAR_128 | CU_ATOMIC_CAPABILITY_VECTOR_32x4)) == 0);
  // Bad arguments write nothing.
  unsigned untouched[2] = {77, 77};
  const CUatomicOperation bad[] = {CU_ATOMIC_OPERATION_AND, CU_ATOMIC_OPERATION_MAX};
  CHECK(cuDeviceGetHostAtomicCapabilities(untouched, bad, 2, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(untouched[0] == 77);
  CHECK(cuDeviceGetHostAtomicCapabilities(caps, ops, 0, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuDeviceGetHostAtomicCapabilities(nullptr, ops, 1, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuDeviceGetHostAtomicCapabilities(caps, ops, 1, 3) == CUDA_ERROR_INVALID_DEVICE);
}

namespace {
struct Seen {
  std::vector<std::pair<CUlogLevel, std::string>> messages;
};
void CUDA_CB remember(void* data, CUlogLevel level, char* message, size_t length) {
  static_cast<Seen*>(data)->messages.emplace_back(level, std::string(message, length));
}
}  // namespace

TEST_CASE("cuLogs: the driver's error log, its callbacks and dumps", "[device]") {
  REQUIRE_CU(cuInit(0));
  Seen seen;
  CUlogsCallbackHandle handle = nullptr;
  REQUIRE_CU(cuLogsRegisterCallback(remember, &seen, &handle));
  CUlogIterator start = 0;
  REQUIRE_CU(cuLogsCurrent(&start, 0));
  // An entry point the emulator refuses reports a warning; a bad graph an error.
  CUgraph g;
  REQUIRE_CU(cuGraphCreate(&g, 0));
  CUgraphExec exec;
  CHECK(cuGraphInstantiateWithFlags(&exec, g, CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH) ==
        CUDA_ERROR_NOT_SUPPORTED);
  REQUIRE_CU(cuGraphDestroy(g));
  REQUIRE(seen.messages.size() == 1);
  CHECK(seen.messages[0].first == CU_LOG_LEVEL_ERROR);
  CHECK(seen.messages[0].second.find("DEVICE_LAUNCH") != std::string::npos);

  char buffer[4096];
  size_t size = sizeof buffer;
  CUlogIterator it = start;
  REQUIRE_CU(cuLogsDumpToMemory(&it, buffer, &size, 0));
  CHECK(std::string(buffer, size) == seen.messages[0].second);
  CHECK(std::strlen(buffer) == size);
  size = sizeof buffer;
  REQUIRE_CU(cuLogsDumpToMemory(&it, buffer, &size, 0));  // the iterator advanced: nothing new
  CHECK(size == 0);
  // A buffer too small for every message keeps the newest ones after a note.
  REQUIRE_CU(cuGraphCreate(&g, 0));
  for (int i = 0; i < 3; ++i)
    CHECK(cuGraphInstantiateWithFlags(&exec, g, CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH) ==
          CUDA_ERROR_NOT_SUPPORTED);
  REQUIRE_CU(cuGraphDestroy(g));
  const size_t one = seen.messages[0].second.size();
  it = start;
  size = one + 64;
  REQUIRE_CU(cuLogsDumpToMemory(&it, buffer, &size, 0));
  std::string text(buffer, size);
  CHECK(text.find("did not fit") != std::string::npos);
  CHECK(text.substr(text.size() - one) == seen.messages.back().second);
  size = 8;
  it = start;
  CHECK(cuLogsDumpToMemory(&it, buffer, &size, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(size == 0);

  // To a file, from the start.
  std::string path = "cuLogs_dump_" + std::to_string(getpid()) + ".txt";
  it = start;
  REQUIRE_CU(cuLogsDumpToFile(&it, path.c_str(), 0));
  std::string file = read_file(path);
  std::remove(path.c_str());
  CHECK(std::count(file.begin(), file.end(), '\n') == 4);

  REQUIRE_CU(cuLogsUnregisterCallback(handle));
  CHECK(cuLogsUnregisterCallback(handle) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuLogsCurrent(&it, 1) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuLogsRegisterCallback(nullptr, nullptr, nullptr) == CUDA_ERROR_INVALID_VALUE);
}

// A driver-API program whose effects the interceptor tests know independently: it computes, with
// libxxhash directly (not through cusnap), the content id (XXH3-128) of every buffer it uploads
// and the checksum (XXH3-64) of every buffer it receives, and prints them as
//   expect payload <32 hex digits>
//   expect checksum <16 hex digits>
// Modes: copies (sync/async, pageable/pinned, 1-D and 2-D), threads (4 threads copying), fork (the
// child makes a driver call after fork and exits), exec PROGRAM (runs another program, which
// captures to its own file), abort (records some calls, then dies of SIGABRT), vmm (cuMemSetAccess
// with two descriptors, printed as "expect access <locationType>:<locationId>:<flags>").
#include <cuda.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

void check(CUresult result, const char* what) {
  if (result != CUDA_SUCCESS) {
    std::fprintf(stderr, "probe_app: %s failed (%d)\n", what, static_cast<int>(result));
    std::exit(2);
  }
}

void expect_payload(const void* data, size_t size) {
  XXH128_hash_t h = XXH3_128bits(data, size);
  std::printf("expect payload %016llx%016llx\n", static_cast<unsigned long long>(h.high64),
              static_cast<unsigned long long>(h.low64));
}

void expect_checksum(const void* data, size_t size) {
  std::printf("expect checksum %016llx\n",
              static_cast<unsigned long long>(XXH3_64bits(data, size)));
}

std::vector<uint8_t> pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    bytes[i] = static_cast<uint8_t>(seed >> 24);
  }
  return bytes;
}

void setup(CUcontext* context) {
  CUdevice device;
  check(cuInit(0), "cuInit");
  check(cuDeviceGet(&device, 0), "cuDeviceGet");
  check(cuDevicePrimaryCtxRetain(context, device), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(*context), "cuCtxSetCurrent");
}

int copies() {
  CUcontext context;
  setup(&context);
  const size_t n = 100000;
  CUdeviceptr a, b;
  check(cuMemAlloc(&a, n), "cuMemAlloc");
  check(cuMemAlloc(&b, n), "cuMemAlloc");

  std::vector<uint8_t> first = pattern(n, 1);
  check(cuMemcpyHtoD(a, first.data(), n), "cuMemcpyHtoD");
  expect_payload(first.data(), n);
  check(cuMemcpyHtoD(b, first.data(), n), "cuMemcpyHtoD (same bytes again)");
  expect_payload(first.data(), n);

  std::vector<uint8_t> back(n);
  check(cuMemcpyDtoH(back.data(), a, n), "cuMemcpyDtoH");
  expect_checksum(back.data(), n);

  CUstream stream;
  check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  void* pinned = nullptr;
  check(cuMemAllocHost(&pinned, n), "cuMemAllocHost");
  std::vector<uint8_t> second = pattern(n, 2);
  std::memcpy(pinned, second.data(), n);
  check(cuMemcpyHtoDAsync(a, pinned, n, stream), "cuMemcpyHtoDAsync");
  expect_payload(second.data(), n);
  check(cuMemsetD8Async(b, 0x5a, n / 2, stream), "cuMemsetD8Async");
  check(cuMemcpyDtoHAsync(pinned, b, n, stream), "cuMemcpyDtoHAsync");
  check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  expect_checksum(pinned, n);

  // 2-D: a 50x40 sub-rectangle of a 64-byte-pitch host image to device memory and back into a
  // 80-byte-pitch host image.
  std::vector<uint8_t> image = pattern(64 * 60, 3);
  CUDA_MEMCPY2D up{};
  up.srcMemoryType = CU_MEMORYTYPE_HOST;
  up.srcHost = image.data();
  up.srcPitch = 64;
  up.srcXInBytes = 5;
  up.srcY = 7;
  up.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  up.dstDevice = a;
  up.dstPitch = 50;
  up.WidthInBytes = 50;
  up.Height = 40;
  check(cuMemcpy2D(&up), "cuMemcpy2D up");
  std::vector<uint8_t> rows;
  for (size_t y = 0; y < 40; ++y)
    rows.insert(rows.end(), image.begin() + (7 + y) * 64 + 5, image.begin() + (7 + y) * 64 + 55);
  expect_payload(rows.data(), rows.size());
  std::vector<uint8_t> down_image(80 * 40, 0xEE);
  CUDA_MEMCPY2D down{};
  down.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  down.srcDevice = a;
  down.srcPitch = 50;
  down.dstMemoryType = CU_MEMORYTYPE_HOST;
  down.dstHost = down_image.data();
  down.dstPitch = 80;
  down.WidthInBytes = 50;
  down.Height = 40;
  check(cuMemcpy2D(&down), "cuMemcpy2D down");
  std::vector<uint8_t> received;
  for (size_t y = 0; y < 40; ++y)
    received.insert(received.end(), down_image.begin() + y * 80, down_image.begin() + y * 80 + 50);
  expect_checksum(received.data(), received.size());
  if (received != rows) {
    std::fprintf(stderr, "probe_app: 2-D round trip mismatch\n");
    return 1;
  }

  // CUDA 13's cuCtxSynchronize_v2 (what cudart 13 calls): recorded typed, not generic.
  CUcontext current = nullptr;
  check(cuCtxGetCurrent(&current), "cuCtxGetCurrent");
  check(cuCtxSynchronize_v2(current), "cuCtxSynchronize_v2");
  // A node count (nodes = NULL) hands out no handle: recorded as a query (affects=0).
  CUgraph graph = nullptr;
  size_t node_count = 0;
  check(cuGraphCreate(&graph, 0), "cuGraphCreate");
  check(cuGraphGetNodes(graph, nullptr, &node_count), "cuGraphGetNodes");
  check(cuGraphDestroy(graph), "cuGraphDestroy");
  check(cuMemFreeHost(pinned), "cuMemFreeHost");
  check(cuStreamDestroy(stream), "cuStreamDestroy");
  check(cuMemFree(a), "cuMemFree");
  check(cuMemFree(b), "cuMemFree");
  std::printf("probe_app: copies done\n");
  return 0;
}

// Several threads copying at once: every record must arrive, in a gap-free global order.
int threads_mode() {
  CUcontext context;
  setup(&context);
  std::mutex print_mutex;
  auto worker = [&](int index) {
    check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
    const size_t n = 4096 + 64 * index;
    CUdeviceptr buffer;
    check(cuMemAlloc(&buffer, n), "cuMemAlloc");
    for (int i = 0; i < 50; ++i) {
      std::vector<uint8_t> bytes = pattern(n, static_cast<uint32_t>(1000 * index + i));
      std::vector<uint8_t> back(n);
      check(cuMemcpyHtoD(buffer, bytes.data(), n), "cuMemcpyHtoD");
      check(cuMemcpyDtoH(back.data(), buffer, n), "cuMemcpyDtoH");
      std::lock_guard lock(print_mutex);
      expect_payload(bytes.data(), n);
      expect_checksum(back.data(), n);
    }
    check(cuMemFree(buffer), "cuMemFree");
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back(worker, t);
  for (auto& thread : threads) thread.join();
  return 0;
}

int fork_mode() {
  CUcontext context;
  setup(&context);
  std::fflush(stdout);
  pid_t pid = ::fork();
  if (pid == 0) {
    int version = 0;
    check(cuDriverGetVersion(&version), "cuDriverGetVersion in the child");
    std::printf("child %d\n", static_cast<int>(::getpid()));
    std::exit(0);  // exit(), not _exit(): the capture is closed by the library destructor
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  int version = 0;
  check(cuDriverGetVersion(&version), "cuDriverGetVersion in the parent");
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int exec_mode(const char* program) {
  CUcontext context;
  setup(&context);
  std::fflush(stdout);
  pid_t pid = 0;
  char* argv[] = {const_cast<char*>(program), nullptr};
  if (::posix_spawn(&pid, program, nullptr, nullptr, argv, environ) != 0) return 2;
  std::printf("child %d\n", static_cast<int>(pid));
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int abort_mode() {
  CUcontext context;
  setup(&context);
  CUdeviceptr a;
  check(cuMemAlloc(&a, 4096), "cuMemAlloc");
  std::vector<uint8_t> bytes = pattern(4096, 4);
  check(cuMemcpyHtoD(a, bytes.data(), bytes.size()), "cuMemcpyHtoD");
  expect_payload(bytes.data(), bytes.size());
  std::fflush(stdout);
  std::abort();
}

int vmm_mode() {
  CUcontext context;
  setup(&context);
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t granularity = 0;
  check(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
        "granularity");
  CUmemGenericAllocationHandle handle;
  check(cuMemCreate(&handle, granularity, &prop, 0), "cuMemCreate");
  CUdeviceptr base;
  check(cuMemAddressReserve(&base, granularity, 0, 0, 0), "cuMemAddressReserve");
  check(cuMemMap(base, granularity, 0, handle, 0), "cuMemMap");
  // Two descriptors for the same device: the last one decides; the capture must keep both.
  CUmemAccessDesc access[2] = {};
  access[0].location = prop.location;
  access[0].flags = CU_MEM_ACCESS_FLAGS_PROT_READ;
  access[1].location = prop.location;
  access[1].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  check(cuMemSetAccess(base, granularity, access, 2), "cuMemSetAccess");
  for (const CUmemAccessDesc& d : access) {
    std::printf("expect access %d:%d:%d\n", static_cast<int>(d.location.type), d.location.id,
                static_cast<int>(d.flags));
  }
  check(cuMemUnmap(base, granularity), "cuMemUnmap");
  check(cuMemAddressFree(base, granularity), "cuMemAddressFree");
  check(cuMemRelease(handle), "cuMemRelease");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "copies";
  if (mode == "copies") return copies();
  if (mode == "fork") return fork_mode();
  if (mode == "threads") return threads_mode();
  if (mode == "exec" && argc > 2) return exec_mode(argv[2]);
  if (mode == "abort") return abort_mode();
  if (mode == "vmm") return vmm_mode();
  std::fprintf(stderr, "usage: probe_app copies|threads|fork|exec PROGRAM|abort|vmm\n");
  return 2;
}

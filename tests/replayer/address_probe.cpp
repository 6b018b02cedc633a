// address_probe: does the driver honour an address hint to cuMemAddressReserve? The replayer
// reserves each captured range at its captured address and relocates when the driver answers
// elsewhere (replayer/memory.cpp), so this is what decides whether pointers stored in device
// memory survive a replay. Run by scripts/gpu-check on a GPU (question address-hint), and on the
// emulator by the test suite.
//
//   address_probe                     reserve 2 MiB with no hint, then with hints at several
//                                     distances and places; one line per attempt
//   address_probe --want ADDR [--placeholder]
//                                     first thing after cuCtxCreate, reserve 2 MiB at ADDR (hex),
//                                     as a fresh replay process does; with --placeholder the host
//                                     range is held with mmap(PROT_NONE) from before cuInit until
//                                     just before the reservation; when refused, the 32 MiB
//                                     boundary below ADDR is tried too (the replayer's retry)
// Each line: "reserve hint=0x... got=0x... honoured=yes|no result=N" and, when reserved,
// "usable=yes|no" (mapped, written with cuMemsetD8 and read back). Exit 0 unless the driver
// failed to start.
#include <cuda.h>
#include <sys/mman.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr size_t kSize = 2u << 20;

bool usable(CUdeviceptr base, CUdevice device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  CUmemGenericAllocationHandle handle = 0;
  if (cuMemCreate(&handle, kSize, &prop, 0) != CUDA_SUCCESS) return false;
  bool ok = cuMemMap(base, kSize, 0, handle, 0) == CUDA_SUCCESS;
  if (ok) {
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    unsigned char byte = 0;
    ok = cuMemSetAccess(base, kSize, &access, 1) == CUDA_SUCCESS &&
         cuMemsetD8(base + 4096, 0x5a, 64) == CUDA_SUCCESS &&
         cuMemcpyDtoH(&byte, base + 4100, 1) == CUDA_SUCCESS && byte == 0x5a;
    cuMemUnmap(base, kSize);
  }
  cuMemRelease(handle);
  return ok;
}

// One attempt; returns the address reserved (0 when none) and keeps it reserved.
CUdeviceptr attempt(const char* what, uint64_t hint, CUdevice device) {
  CUdeviceptr got = 0;
  CUresult r = cuMemAddressReserve(&got, kSize, 0, hint, 0);
  std::printf("reserve %-22s hint=0x%" PRIx64 " got=0x%llx honoured=%s result=%d", what, hint,
              static_cast<unsigned long long>(got), hint != 0 && got == hint ? "yes" : "no",
              static_cast<int>(r));
  if (r == CUDA_SUCCESS) std::printf(" usable=%s", usable(got, device) ? "yes" : "no");
  std::printf("\n");
  return r == CUDA_SUCCESS ? got : 0;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t want = 0;
  bool placeholder = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--want") == 0 && i + 1 < argc) {
      want = std::strtoull(argv[++i], nullptr, 16);
    } else if (std::strcmp(argv[i], "--placeholder") == 0) {
      placeholder = true;
    } else {
      std::fprintf(stderr, "usage: address_probe [--want HEXADDR [--placeholder]]\n");
      return 2;
    }
  }
  void* held = MAP_FAILED;
  if (want != 0 && placeholder) {
    held = mmap(reinterpret_cast<void*>(want), kSize, PROT_NONE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    std::printf("placeholder 0x%" PRIx64 ": %s\n", want,
                held == reinterpret_cast<void*>(want) ? "held" : "not available");
  }
  CUdevice device = 0;
  CUcontext context = nullptr;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&device, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&context, device) != CUDA_SUCCESS ||
      cuCtxSetCurrent(context) != CUDA_SUCCESS) {
    std::fprintf(stderr, "address_probe: no CUDA driver or device\n");
    return 1;
  }
  if (want != 0) {
    if (held != MAP_FAILED) munmap(held, kSize);
    if (attempt(placeholder ? "want+placeholder" : "want", want, device) != want) {
      // What the replayer tries next (replayer/memory.cpp, reserve_at): the 32 MiB boundary below.
      attempt("want-32MiB-boundary", want & ~((uint64_t{32} << 20) - 1), device);
    }
    return 0;
  }
  CUdeviceptr alloc = 0;
  if (cuMemAlloc(&alloc, kSize) == CUDA_SUCCESS)
    std::printf("cuMemAlloc got=0x%llx\n", static_cast<unsigned long long>(alloc));
  CUdeviceptr first = attempt("no-hint", 0, device);
  std::vector<std::pair<const char*, uint64_t>> hints;
  if (first != 0) {
    hints.push_back({"first+64MiB", first + (64ull << 20)});
    hints.push_back({"first+1GiB", first + (1ull << 30)});
    hints.push_back({"first+64GiB", first + (64ull << 30)});
    if (first > (1ull << 40)) hints.push_back({"first-1TiB", first - (1ull << 40)});
  }
  hints.push_back({"16TiB", 0x100000000000ull});
  hints.push_back({"80TiB", 0x500000000000ull});
  hints.push_back({"126TiB", 0x7e0000000000ull});
  // A host range that was mapped and is free again.
  void* host =
      mmap(nullptr, 2 * kSize, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (host != MAP_FAILED) {
    uint64_t aligned = (reinterpret_cast<uint64_t>(host) + kSize - 1) & ~uint64_t{kSize - 1};
    munmap(host, 2 * kSize);
    hints.push_back({"freed-host-range", aligned});
  }
  for (const auto& [what, hint] : hints) attempt(what, hint, device);
  return 0;
}

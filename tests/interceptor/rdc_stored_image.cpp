// rdc_stored_image: the code image a capture stores for a version-2 (relocatable device code)
// fatbin wrapper must load in the emulator with the kernels of the wrapper itself.
//
// The captured program (cusnap_icpt_rdc_ptx_only: samples/runtime_style built PTX-only with
// -rdc=true) and this checker are linked from the same rdc objects, so this program's own
// `.nvFatBinSegment` holds the same version-2 wrapper the captured program loaded. For a PTX-only
// rdc build, nvlink keeps libcudadevrt in the device link, so the wrapper's prelinked list holds
// two fatbins with PTX: the program's (compute_75) and the device runtime's (the newest
// architecture only). That is the case where a shim that counted "fatbins with any PTX" stored a
// PTX-less image the emulator could not load.
//
// Usage: rdc_stored_image CAPTURE  (run with the emulator as libcuda.so.1; it is linked in)
// Checks:
//   1. the wrapper really is that case (else the test would prove nothing: it says so);
//   2. every image the capture stored for a library load loads in the emulator, with exactly the
//      kernels the emulator finds in the wrapper itself;
//   3. the captured kernel, launched from the stored image and from the wrapper, computes the
//      same values as an independent host computation.
// Exit status 0 when every check passes, 1 when one fails, 2 on a usage or set-up error.
#include <cuda.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "cusnap/fatbin/fatbin.h"
#include "cusnap/format/reader.h"
#include "nv_fatbin_segment.h"

namespace {

namespace fb = cusnap::fatbin;
using namespace cusnap::format;

constexpr const char* kKernel = "_Z16scale_and_offsetPfif";  // scale_and_offset(float*, int, float)
int g_failures = 0;

void check(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what.c_str());
  if (!ok) ++g_failures;
}

bool cu_ok(CUresult result, const char* call) {
  if (result == CUDA_SUCCESS) return true;
  const char* name = nullptr;
  cuGetErrorName(result, &name);
  std::printf("FAILED: %s returned %s (%d)\n", call, name != nullptr ? name : "?",
              static_cast<int>(result));
  ++g_failures;
  return false;
}

std::set<std::string> kernel_names(CUlibrary library) {
  std::set<std::string> names;
  unsigned count = 0;
  if (!cu_ok(cuLibraryGetKernelCount(&count, library), "cuLibraryGetKernelCount")) return names;
  std::vector<CUkernel> kernels(count);
  if (!cu_ok(cuLibraryEnumerateKernels(kernels.data(), count, library),
             "cuLibraryEnumerateKernels"))
    return names;
  for (CUkernel kernel : kernels) {
    const char* name = nullptr;
    if (cu_ok(cuKernelGetName(&name, kernel), "cuKernelGetName")) names.insert(name);
  }
  return names;
}

std::string joined(const std::set<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return "{" + out + "}";
}

// data[i] * factor + offset, once, from `library`'s kernel and __device__ g_offset.
std::vector<float> run_kernel(CUlibrary library, const std::vector<float>& input, float factor,
                              float offset) {
  CUkernel kernel = nullptr;
  CUdeviceptr d_offset = 0, d_data = 0;
  size_t offset_size = 0;
  std::vector<float> out(input.size(), -1.0f);
  if (!cu_ok(cuLibraryGetKernel(&kernel, library, kKernel), "cuLibraryGetKernel") ||
      !cu_ok(cuLibraryGetGlobal(&d_offset, &offset_size, library, "g_offset"),
             "cuLibraryGetGlobal") ||
      !cu_ok(cuMemcpyHtoD(d_offset, &offset, sizeof offset), "cuMemcpyHtoD") ||
      !cu_ok(cuMemAlloc(&d_data, input.size() * sizeof(float)), "cuMemAlloc")) {
    return {};
  }
  int n = static_cast<int>(input.size());
  void* params[] = {&d_data, &n, &factor};
  if (cu_ok(cuMemcpyHtoD(d_data, input.data(), input.size() * sizeof(float)), "cuMemcpyHtoD") &&
      cu_ok(cuLaunchKernel(reinterpret_cast<CUfunction>(kernel), (n + 127) / 128, 1, 1, 128, 1, 1,
                           0, nullptr, params, nullptr),
            "cuLaunchKernel")) {
    cu_ok(cuMemcpyDtoH(out.data(), d_data, out.size() * sizeof(float)), "cuMemcpyDtoH");
  }
  cu_ok(cuMemFree(d_data), "cuMemFree");
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: rdc_stored_image CAPTURE\n");
    return 2;
  }
  cusnap::samples::SegmentWrappers segment = cusnap::samples::find_segment_wrappers();
  if (!segment.error.empty() || segment.registered.size() != 1 ||
      segment.registered[0]->version != 2) {
    std::fprintf(stderr, "rdc_stored_image: expected one registered version-2 wrapper (%s)\n",
                 segment.error.c_str());
    return 2;
  }
  const void* wrapper = segment.registered[0];

  CUdevice device = 0;
  CUcontext context = nullptr;
  int major = 0, minor = 0;
  if (!cu_ok(cuInit(0), "cuInit") || !cu_ok(cuDeviceGet(&device, 0), "cuDeviceGet") ||
      !cu_ok(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain") ||
      !cu_ok(cuCtxSetCurrent(context), "cuCtxSetCurrent") ||
      !cu_ok(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device),
             "cuDeviceGetAttribute") ||
      !cu_ok(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device),
             "cuDeviceGetAttribute")) {
    return 2;
  }
  uint32_t sm = static_cast<uint32_t>(major * 10 + minor);

  // 1. The case under test: PTX in two prelinked fatbins, usable on the emulated sm in one.
  fb::Wrapper read = fb::read_wrapper(wrapper);
  size_t with_ptx = 0, usable = 0;
  for (const void* prelinked : read.prelinked) {
    fb::Container container = fb::parse_container(prelinked);
    bool any = false, fits = false;
    for (const fb::Entry& entry : container.entries) {
      if (entry.kind != fb::kEntryPtx) continue;
      any = true;
      fits |= entry.sm <= sm;
    }
    with_ptx += any ? 1 : 0;
    usable += fits ? 1 : 0;
  }
  check(read.error.empty() && with_ptx >= 2 && usable == 1,
        "the wrapper lists " + std::to_string(read.prelinked.size()) + " prelinked fatbins, " +
            std::to_string(with_ptx) + " with PTX, " + std::to_string(usable) +
            " with PTX for the emulated sm_" + std::to_string(sm) +
            " (the case needs >= 2 and exactly 1; a toolkit change would show here)");

  CUlibrary original = nullptr;
  if (!cu_ok(cuLibraryLoadData(&original, wrapper, nullptr, nullptr, 0, nullptr, nullptr, 0),
             "cuLibraryLoadData(the program's own version-2 wrapper)")) {
    return 1;
  }
  std::set<std::string> expected = kernel_names(original);
  check(expected.count(kKernel) == 1,
        "the wrapper's kernels " + joined(expected) + " include " + kKernel);

  std::vector<float> input(1000), reference(input.size());
  const float factor = 0.5f, offset = 3.25f;
  for (size_t i = 0; i < input.size(); ++i) {
    // Multiples of 1/8 below 64 in magnitude: x * 0.5 + 3.25 is exact with or without an fma.
    input[i] = static_cast<float>(static_cast<int>(i % 1013) - 506) / 8.0f;
    reference[i] = input[i] * factor + offset;
  }
  check(run_kernel(original, input, factor, offset) == reference,
        "the wrapper's kernel computes the host reference");

  // 2. and 3. for every image the capture stored for a library load.
  auto opened = Reader::open(argv[1]);
  if (!opened) {
    std::fprintf(stderr, "rdc_stored_image: %s\n", opened.status().to_string().c_str());
    return 2;
  }
  Reader& reader = *opened.value();
  std::vector<std::vector<uint8_t>> images;
  Status status = reader.for_each_call([&](const CallRef& ref) {
    auto call = ref.get();
    if (call.which() != schema::CallRecord::MODULE_LOAD || !call.getModuleLoad().getIsLibrary())
      return true;
    auto id = call.getModuleLoad().getImage();
    auto blob = reader.read_blob(BlobId{id.getHigh(), id.getLow()});
    if (!blob) {
      check(false, "the stored image of a library load is readable: " + blob.status().to_string());
    } else {
      images.push_back(std::move(blob.value()));
    }
    return true;
  });
  check(status.is_ok(), "the capture's calls are readable");
  check(!images.empty(),
        "the capture holds " + std::to_string(images.size()) + " library image(s)");
  for (size_t i = 0; i < images.size(); ++i) {
    std::string which =
        "stored image " + std::to_string(i) + " (" + std::to_string(images[i].size()) + " bytes)";
    // Copied with room: the reader of a bare pointer may look at a few header bytes.
    std::vector<uint8_t> image = images[i];
    image.resize(image.size() + 64, 0);
    CUlibrary stored = nullptr;
    if (!cu_ok(cuLibraryLoadData(&stored, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
               ("cuLibraryLoadData(" + which + ")").c_str())) {
      continue;
    }
    std::set<std::string> names = kernel_names(stored);
    check(names == expected,
          which + " has the kernels " + joined(names) + ", the wrapper " + joined(expected));
    check(run_kernel(stored, input, factor, offset) == reference,
          which + ": its kernel computes the host reference");
    cu_ok(cuLibraryUnload(stored), "cuLibraryUnload");
  }
  cu_ok(cuLibraryUnload(original), "cuLibraryUnload");
  cu_ok(cuDevicePrimaryCtxRelease(device), "cuDevicePrimaryCtxRelease");
  std::printf("%s\n", g_failures == 0 ? "PASSED" : "FAILED");
  return g_failures == 0 ? 0 : 1;
}

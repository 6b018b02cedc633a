// Parameter layouts read from the samples' nvcc-built images (code_layouts.h) against the driver's
// own answer: the emulator, opened by path, loads each image and reports every kernel
// (cuModuleEnumerateFunctions, cuFuncGetName) and its layout (cuFuncGetParamInfo). For fatbins
// the `.nv.info` layouts and the PTX signatures inside the same fatbin must agree too.
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "code_layouts.h"
#include "image_size.h"
#include "ptx_signature.h"
#include "sample_images.h"

using namespace cusnap::icpt;
using namespace cusnap::icpt::test;

namespace {

bool same(const std::vector<ParamSlot>& a, const std::vector<ParamSlot>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].offset != b[i].offset || a[i].size != b[i].size) return false;
  }
  return true;
}

std::string text(const std::vector<ParamSlot>& layout) {
  std::string out;
  for (const ParamSlot& s : layout) {  // appended piecewise: GCC 12's bogus -Wrestrict (PR105651)
    out += '(';
    out += std::to_string(s.offset);
    out += ',';
    out += std::to_string(s.size);
    out += ')';
  }
  return out;
}

// The emulator as the reference driver (types from the driver API, entry points by dlsym).
class Driver {
 public:
  Driver() {
    handle_ = ::dlopen(CUSNAP_TEST_EMULATOR, RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) return;
    bind(init_, "cuInit");
    bind(retain_, "cuDevicePrimaryCtxRetain");
    bind(set_current_, "cuCtxSetCurrent");
    bind(load_, "cuModuleLoadData");
    bind(unload_, "cuModuleUnload");
    bind(count_, "cuModuleGetFunctionCount");
    bind(enumerate_, "cuModuleEnumerateFunctions");
    bind(name_, "cuFuncGetName");
    bind(param_info_, "cuFuncGetParamInfo");
    void* context = nullptr;
    ok_ = init_ && init_(0) == 0 && retain_(&context, 0) == 0 && set_current_(context) == 0;
  }
  bool ok() const { return ok_; }

  // Kernel name -> layout, for every kernel of `image` the driver knows.
  std::map<std::string, std::vector<ParamSlot>> layouts(const void* image) {
    std::map<std::string, std::vector<ParamSlot>> out;
    void* module = nullptr;
    REQUIRE(load_(&module, image) == 0);
    unsigned count = 0;
    REQUIRE(count_(&count, module) == 0);
    std::vector<void*> functions(count);
    REQUIRE(enumerate_(functions.data(), count, module) == 0);
    for (void* f : functions) {
      const char* name = nullptr;
      REQUIRE(name_(&name, f) == 0);
      std::vector<ParamSlot> layout;
      for (size_t index = 0;; ++index) {
        size_t offset = 0, size = 0;
        int r = param_info_(f, index, &offset, &size);
        if (r == 1 /* CUDA_ERROR_INVALID_VALUE: past the last */) break;
        REQUIRE(r == 0);
        layout.push_back({static_cast<uint32_t>(offset), static_cast<uint32_t>(size)});
      }
      out[name] = layout;
    }
    unload_(module);
    return out;
  }

 private:
  template <class F>
  void bind(F& f, const char* name) {
    f = reinterpret_cast<F>(::dlsym(handle_, name));
    if (f == nullptr) ok_ = false;
  }
  void* handle_ = nullptr;
  bool ok_ = false;
  int (*init_)(unsigned) = nullptr;
  int (*retain_)(void**, int) = nullptr;
  int (*set_current_)(void*) = nullptr;
  int (*load_)(void**, const void*) = nullptr;
  int (*unload_)(void*) = nullptr;
  int (*count_)(unsigned*, void*) = nullptr;
  int (*enumerate_)(void**, unsigned, void*) = nullptr;
  int (*name_)(const char**, void*) = nullptr;
  int (*param_info_)(void*, size_t, size_t*, size_t*) = nullptr;
};

}  // namespace

TEST_CASE("layouts from the samples' images match the driver's cuFuncGetParamInfo") {
  Driver driver;
  REQUIRE(driver.ok());
  REQUIRE(std::size(kImages) > 0);
  size_t kernels_checked = 0;
  for (const SampleImage& image : kImages) {
    INFO(image.sample << " " << image.kind << " " << image.mode << " " << image.path);
    std::vector<uint8_t> bytes = read_all(image.path);
    REQUIRE(!bytes.empty());
    bytes.push_back(0);  // PTX text is embedded NUL-terminated
    // The relocatable PTX inputs of the JIT linker (link_occupancy): one declares what the other
    // defines, and the other has no kernel. Neither loads alone; the linked image does, and its
    // layouts are the ones a capture records.
    const std::string_view ptx(reinterpret_cast<const char*>(bytes.data()));
    if (std::string(image.kind) == "ptx" &&
        (ptx.find(".extern .func") != std::string_view::npos ||
         ptx.find(".extern .global") != std::string_view::npos ||
         ptx.find(".entry") == std::string_view::npos))
      continue;
    ImageView view = inspect_image(bytes.data());
    ImageLayouts layouts = image_layouts(view);
    auto reference = driver.layouts(bytes.data());
    REQUIRE(!reference.empty());
    CHECK(layouts.size() == reference.size());
    bool is_ptx = std::string(image.kind) == "ptx";
    for (const auto& [name, want] : reference) {
      INFO("kernel " << name);
      auto found = layouts.find(name);
      REQUIRE(found != layouts.end());
      // Every sample fatbin carries an sm_90 cubin, whose .nv.info comes first.
      CHECK(found->second.source == (is_ptx ? LayoutSource::kPtxSignature : LayoutSource::kNvInfo));
      INFO("image " << text(found->second.layout) << " driver " << text(want));
      if (std::string(image.sample) == "tma_gemm" && !is_ptx) {
        // Measured (ptxas 13, sm_90a): a kernel whose first parameter is a 64-byte-aligned
        // `__grid_constant__ CUtensorMap` gets .nv.info offsets 112 bytes beyond the PTX ones
        // (0x210 + 112 = 0x280: the parameter placed 128-byte aligned in the constant bank),
        // sizes unchanged; the emulator answers the PTX offsets. Which of the two a GPU driver's
        // cuFuncGetParamInfo reports is not known here (docs/capture.md, "Parameter layouts").
        REQUIRE(found->second.layout.size() == want.size());
        for (size_t i = 0; i < want.size(); ++i) {
          CHECK(found->second.layout[i].size == want[i].size);
          CHECK(found->second.layout[i].offset == want[i].offset + 112);
        }
      } else {
        CHECK(same(found->second.layout, want));
      }
      ++kernels_checked;
    }

    if (!is_ptx) {
      // The PTX inside the same fatbin (compressed per --compress-mode) says the same.
      std::map<std::string, std::vector<ParamSlot>, std::less<>> from_ptx;
      size_t ptx_entries = 0;
      CHECK(for_each_fatbin_entry(std::span<const uint8_t>(view.data, view.size), kFatbinEntryPtx,
                                  [&](const FatbinEntry& entry) {
                                    ++ptx_entries;
                                    CHECK(entry.payload.find(".entry") != std::string::npos);
                                    from_ptx = ptx_entry_layouts(entry.payload);
                                    return true;
                                  }));
      CHECK(ptx_entries == 1);
      CHECK(from_ptx.size() == reference.size());
      for (const auto& [name, want] : reference) {
        INFO("PTX kernel " << name);
        auto found = from_ptx.find(name);
        REQUIRE(found != from_ptx.end());
        CHECK(same(found->second, want));
      }
    }
  }
  CHECK(kernels_checked >= std::size(kImages));
}

TEST_CASE("damaged images give fewer layouts, never a crash") {
  const SampleImage* fatbin = nullptr;
  for (const SampleImage& image : kImages) {
    if (std::string(image.kind) == "fatbin") fatbin = &image;
  }
  REQUIRE(fatbin != nullptr);
  std::vector<uint8_t> bytes = read_all(fatbin->path);
  ImageView view = inspect_image(bytes.data());
  REQUIRE(view.size == bytes.size());
  REQUIRE(!image_layouts(view).empty());
  // Every truncation and a sweep of single-byte corruptions: the parsers stay inside the buffer
  // (run under ASan/valgrind to make this strict) and answer something or nothing.
  for (size_t cut = 0; cut < bytes.size(); cut += 7) {
    ImageView truncated{ImageKind::kFatbin, bytes.data(), cut};
    (void)image_layouts(truncated);
  }
  for (size_t at = 0; at < bytes.size(); at += 13) {
    std::vector<uint8_t> damaged = bytes;
    damaged[at] ^= 0xff;
    ImageView v{ImageKind::kFatbin, damaged.data(), damaged.size()};
    (void)image_layouts(v);
  }
  // A cubin that is not an ELF, or whose section table points outside the buffer.
  CHECK(!cubin_param_layouts(std::span<const uint8_t>(bytes.data(), 16)));
  std::vector<uint8_t> elf(64, 0);
  const uint8_t ident[] = {0x7f, 'E', 'L', 'F', 2, 1};
  std::memcpy(elf.data(), ident, sizeof ident);
  uint64_t far = 1u << 30;
  std::memcpy(elf.data() + 0x28, &far, 8);
  uint16_t entry = 64, count = 3, names = 1;
  std::memcpy(elf.data() + 0x3A, &entry, 2);
  std::memcpy(elf.data() + 0x3C, &count, 2);
  std::memcpy(elf.data() + 0x3E, &names, 2);
  CHECK(!cubin_param_layouts(elf));
}

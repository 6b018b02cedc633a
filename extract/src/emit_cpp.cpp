// --emit-cpp: an extracted capture as a directory a driver or compiler engineer can build with
// nothing but the CUDA toolkit. The program (kMainCpp, fixed text) reads manifest.txt, written
// here, for everything specific to the launch; data are raw files next to it. Expected chunks
// recorded only by hash are checked with xxh3_128.h, written from templates/xxh3_128.h (embedded
// at build time as kXxh3Header).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <vector>

#include "cusnap/common/hex.h"
#include "cusnap/extract/extract.h"
#include "cusnap/format/blob_id.h"
#include "cusnap/format/header_info.h"
#include "cusnap/format/launch_params.h"
#include "unreadable.h"
#include "xxh3_128_h.inc"  // generated from extract/templates/xxh3_128.h (CMakeLists.txt)

namespace cusnap::extract {

namespace schema = format::schema;
using format::ErrorCode;
using format::Status;
using format::to_blob;

namespace {

// The reproducer. Plain cuda.h driver API, C++17, no cusnap header or library.
// The reproducer's source, written out verbatim.
// clang-format off
constexpr const char* kMainCpp =
    R"CPP(// Reproducer of one CUDA kernel launch, written by `cusnap extract --emit-cpp`.
//
// It needs only the CUDA toolkit (cuda.h and the driver library). What it does:
//   1. reserves every captured memory range at its captured device address (cuMemAddressReserve
//      with that address as the hint, in whole allocation granules, ranges whose granules overlap
//      in one reservation; then cuMemCreate + cuMemMap + cuMemSetAccess), so that
//      pointers stored in memory stay valid; when the driver gives another address, pointer-sized
//      kernel parameters that point into a captured range are relocated, and it says so;
//   2. loads the code image (module.bin), gets the kernel, finds module variables by name;
//      creates the CUDA arrays the kernel reads or writes through texture/surface objects or
//      references, fills them (array_input_*.bin), and makes those objects and references again
//      (their captured values in the parameters are replaced by the new ones); encodes the
//      tensor maps the parameters hold again (cuTensorMapEncode*, cuTensorMapReplaceAddress), a
//      map's bytes being the driver's own encoding;
//   3. writes the memory as it was before the launch (input_*.bin);
//   4. launches the kernel as it was launched (cuLaunchKernel, cuLaunchKernelEx with the captured
//      launch attributes, or cuLaunchCooperativeKernel) with the captured parameters
//      (params.bin: the parameters one after the other, or the `extra` buffer), timed with events;
//   5. reads the memory back and compares it with what the launch produced when it was captured:
//      byte for byte where the capture stored those bytes (expected_*.bin), by XXH3-128 where it
//      stored only each chunk's hash (expected_hash lines, xxh3_128.h), and every CUDA array byte
//      for byte (array_expected_*.bin); prints MISMATCH at 0x... for every range, chunk or array
//      that differs (exit 1), else MATCH (exit 0).
// manifest.txt lists the launch configuration, the ranges, the data files and the hashes.
// Usage: reproducer [DIR]   (DIR: the directory with manifest.txt, default ".")
#include <cuda.h>

#include "xxh3_128.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

// Legacy texture/surface references (cuModuleGetTexRef, cuTexRefSet*) are deprecated in cuda.h;
// a kernel that uses them needs them.
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

namespace {

// Stops with the driver's error name: a failed call here is not a mismatch (exit code 2).
void check(CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return;
  const char* name = nullptr;
  cuGetErrorName(result, &name);
  std::fprintf(stderr, "error: %s failed: %s (%d)\n", what, name ? name : "?", int(result));
  std::exit(2);
}

std::vector<unsigned char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "error: cannot read %s\n", path.c_str());
    std::exit(2);
  }
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Range {          // captured memory the kernel can reach
  uint64_t address;     // captured device address
  uint64_t size;
  CUdeviceptr live = 0; // where it is in this process
};
struct Global {         // a module variable: found again by name
  std::string name;
  uint64_t address;     // captured address
  uint64_t size;
  CUdeviceptr live = 0;
};
struct Data {           // bytes at a captured address, before (input) or after (expected)
  uint64_t address;
  uint64_t size;
  std::string file;
};
struct Hashed {         // an expected chunk recorded only by its XXH3-128
  uint64_t address;
  uint64_t size;
  xxh3::Hash128 hash;
};
struct Slot {           // one kernel parameter inside params.bin
  unsigned offset, size;
};

struct Attribute {      // a launch attribute of cuLaunchKernelEx: id and raw value bytes
  unsigned id;
  std::vector<unsigned char> value;
};

struct Manifest {
  std::string kernel, module, params;
  std::string launch = "kernel";  // kernel | ex | cooperative: which cuLaunch* call
  bool extra = false;             // params.bin is the `extra` parameter buffer
  std::vector<Attribute> attributes;
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1}, shared = 0;
  std::vector<Slot> slots;
  std::vector<Range> ranges;
  std::vector<Global> globals;
  std::vector<Data> inputs, expected;
  std::vector<Hashed> hashed;
  // CUDA arrays, texture/surface objects and references, as words, in the order they are made
  // (array, array_input, texture, surface, texref, surfref, texref_set lines).
  std::vector<std::vector<std::string>> resources;
  std::vector<std::vector<std::string>> array_expected;  // array_expected lines
};

// The words of a resource line, read one at a time; a malformed one stops the program.
struct Words {
  const std::vector<std::string>& words;
  size_t next = 1;  // words[0] is the key
  const std::string& text() {
    if (next >= words.size()) bad();
    return words[next++];
  }
  uint64_t number(int base) {
    const std::string& t = text();
    char* end = nullptr;
    uint64_t v = std::strtoull(t.c_str(), &end, base);
    if (t.empty() || *end != 0) bad();
    return v;
  }
  uint64_t hex() { return number(16); }
  template <class T>
  std::vector<T> list() {  // comma-separated decimals, "-" for none
    std::vector<T> out;
    std::string t = text();
    if (t == "-") return out;
    std::istringstream in(t);
    for (std::string item; std::getline(in, item, ',');) {
      char* end = nullptr;
      long long v = std::strtoll(item.c_str(), &end, 10);
      if (item.empty() || *end != 0) bad();
      out.push_back(T(v));
    }
    return out;
  }
  uint64_t dec() { return number(10); }
  float real() {  // written as %a: exact
    const std::string& t = text();
    char* end = nullptr;
    float v = std::strtof(t.c_str(), &end);
    if (t.empty() || *end != 0) bad();
    return v;
  }
  [[noreturn]] void bad() {
    std::string line;
    for (const std::string& w : words) line += w + " ";
    std::fprintf(stderr, "error: manifest line not understood: %s\n", line.c_str());
    std::exit(2);
  }
};

// 32 hex digits, high half first (XXH128's canonical form) -> the hash; false if malformed.
bool parse_hash(const std::string& text, xxh3::Hash128& hash) {
  if (text.size() != 32) return false;
  uint64_t half[2] = {0, 0};
  for (size_t i = 0; i < 32; ++i) {
    const char c = text[i];
    int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (v < 0) return false;
    half[i / 16] = half[i / 16] << 4 | uint64_t(v);
  }
  hash.high = half[0];
  hash.low = half[1];
  return true;
}

// Hex digits, two per byte -> bytes; false if malformed.
bool parse_bytes(const std::string& text, std::vector<unsigned char>& bytes) {
  if (text.size() % 2 != 0) return false;
  for (size_t i = 0; i < text.size(); i += 2) {
    unsigned value = 0;
    if (std::sscanf(text.c_str() + i, "%2x", &value) != 1) return false;
    bytes.push_back((unsigned char)value);
  }
  return true;
}

std::string hash_text(const xxh3::Hash128& hash) {
  char text[33];
  std::snprintf(text, sizeof text, "%016" PRIx64 "%016" PRIx64, hash.high, hash.low);
  return text;
}

Manifest read_manifest(const std::string& dir) {
  Manifest m;
  std::ifstream in(dir + "/manifest.txt");
  if (!in) {
    std::fprintf(stderr, "error: cannot read %s/manifest.txt\n", dir.c_str());
    std::exit(2);
  }
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::string key;
    if (!(s >> key) || key[0] == '#') continue;
    s >> std::hex;  // addresses are hex, sizes decimal (switched per field below)
    if (key == "kernel") {
      s >> m.kernel;
    } else if (key == "module") {
      s >> m.module;
    } else if (key == "params") {
      s >> m.params;
    } else if (key == "launch") {
      s >> m.launch;
      if (m.launch != "kernel" && m.launch != "ex" && m.launch != "cooperative")
        s.setstate(std::ios::failbit);
    } else if (key == "extra") {
      s >> std::dec >> m.extra;
    } else if (key == "attribute") {
      Attribute a{};
      std::string text;
      s >> std::dec >> a.id >> text;
      if (!s.fail() && !parse_bytes(text, a.value)) s.setstate(std::ios::failbit);
      m.attributes.push_back(a);
    } else if (key == "grid") {
      s >> std::dec >> m.grid[0] >> m.grid[1] >> m.grid[2];
    } else if (key == "block") {
      s >> std::dec >> m.block[0] >> m.block[1] >> m.block[2];
    } else if (key == "shared") {
      s >> std::dec >> m.shared;
    } else if (key == "param") {
      Slot slot;
      s >> std::dec >> slot.offset >> slot.size;
      m.slots.push_back(slot);
    } else if (key == "range") {
      Range r{};
      s >> r.address >> std::dec >> r.size;
      m.ranges.push_back(r);
    } else if (key == "global") {
      Global g{};
      s >> std::dec >> g.name >> std::hex >> g.address >> std::dec >> g.size;
      m.globals.push_back(g);
    } else if (key == "input" || key == "expected") {
      Data d{};
      s >> d.address >> std::dec >> d.size >> d.file;
      (key == "input" ? m.inputs : m.expected).push_back(d);
    } else if (key == "array" || key == "array_input" || key == "texture" || key == "surface" ||
               key == "texref" || key == "surfref" || key == "texref_set" ||
               key == "tensor_map" || key == "tensor_map_replace" || key == "array_expected") {
      std::vector<std::string> words;
      std::istringstream all(line);
      for (std::string w; all >> w;) words.push_back(w);
      (key == "array_expected" ? m.array_expected : m.resources).push_back(words);
    } else if (key == "expected_hash") {
      Hashed h{};
      std::string text;
      s >> h.address >> std::dec >> h.size >> text;
      if (!s.fail() && !parse_hash(text, h.hash)) s.setstate(std::ios::failbit);
      m.hashed.push_back(h);
    }
    if (s.fail()) {
      std::fprintf(stderr, "error: manifest line not understood: %s\n", line.c_str());
      std::exit(2);
    }
  }
  return m;
}

// Replaces the 128 bytes at `at` with the map encoded here when they are a captured map's.
void substitute_tensor_map(const std::map<std::string, CUtensorMap>& maps, unsigned char* at) {
  if (maps.empty()) return;
  std::string text;
  char digits[3];
  for (size_t i = 0; i < sizeof(CUtensorMap); ++i) {
    std::snprintf(digits, sizeof digits, "%02x", at[i]);
    text += digits;
  }
  auto it = maps.find(text);
  if (it != maps.end()) std::memcpy(at, &it->second, sizeof(CUtensorMap));
}

// Where a captured address lives now (globals first: they are not reserved ranges): false when
// [address, address + size) is in none.
bool live_address(const Manifest& m, uint64_t address, uint64_t size, CUdeviceptr* live) {
  for (const Global& g : m.globals)
    if (address >= g.address && address - g.address + size <= g.size) {
      *live = g.live + (address - g.address);
      return true;
    }
  for (const Range& r : m.ranges)
    if (address >= r.address && address - r.address + size <= r.size) {
      *live = r.live + (address - r.address);
      return true;
    }
  return false;
}

// The same, for an address that must be in one: the program stops otherwise.
CUdeviceptr translate(const Manifest& m, uint64_t address, uint64_t size) {
  CUdeviceptr live = 0;
  if (live_address(m, address, size, &live)) return live;
  std::fprintf(stderr, "error: 0x%" PRIx64 " is in no captured range\n", address);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  Manifest m = read_manifest(dir);

  check(cuInit(0), "cuInit");
  CUdevice device;
  check(cuDeviceGet(&device, 0), "cuDeviceGet");
  CUcontext context;
  check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(context), "cuCtxSetCurrent");

  // 1. Reserve and map each captured range at its address, in whole allocation granules.
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  size_t granularity = 0;
  check(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
        "cuMemGetAllocationGranularity");
  // Ranges whose granule-rounded spans overlap (small allocations sharing a granule, or one
  // ending in the granule where the next begins) share one reservation: each span is the union.
  struct Span {
    uint64_t base, end;
    CUdeviceptr live;
  };
  std::vector<Span> spans;
  for (const Range& r : m.ranges) {
    spans.push_back({r.address / granularity * granularity,
                     (r.address + r.size + granularity - 1) / granularity * granularity, 0});
  }
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.base < b.base; });
  std::vector<Span> merged;
  for (const Span& span : spans) {
    if (!merged.empty() && span.base < merged.back().end) {
      merged.back().end = std::max(merged.back().end, span.end);
    } else {
      merged.push_back(span);
    }
  }
  bool relocated = false;
  for (Span& span : merged) {
    const uint64_t size = span.end - span.base;
    CUdeviceptr ptr = 0;
    check(cuMemAddressReserve(&ptr, size, 0, span.base, 0), "cuMemAddressReserve");
    CUmemGenericAllocationHandle handle;
    check(cuMemCreate(&handle, size, &prop, 0), "cuMemCreate");
    check(cuMemMap(ptr, size, 0, handle, 0), "cuMemMap");
    CUmemAccessDesc access = {};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    check(cuMemSetAccess(ptr, size, &access, 1), "cuMemSetAccess");
    check(cuMemsetD8(ptr, 0, size), "cuMemsetD8");
    span.live = ptr;
  }
  for (Range& r : m.ranges) {
    for (const Span& span : merged) {
      if (r.address >= span.base && r.address + r.size <= span.end) {
        r.live = span.live + (r.address - span.base);
      }
    }
    if (r.live != r.address) {
      relocated = true;
      std::printf("range 0x%" PRIx64 " (%" PRIu64 " bytes): captured address not available, "
                  "mapped at 0x%llx\n", r.address, r.size, (unsigned long long)r.live);
    }
  }
  std::printf("%zu captured ranges %s\n", m.ranges.size(),
              relocated ? "reserved, some relocated" : "reserved at their captured addresses");

  // 2. The code image, the kernel and the module variables.
  std::vector<unsigned char> image = read_file(dir + "/" + m.module);
  image.push_back(0);  // PTX text must end with a NUL; harmless after a binary image
  CUmodule module;
  check(cuModuleLoadData(&module, image.data()), "cuModuleLoadData");
  CUfunction function;
  check(cuModuleGetFunction(&function, module, m.kernel.c_str()), "cuModuleGetFunction");
  for (Global& g : m.globals) {
    size_t size = 0;
    check(cuModuleGetGlobal(&g.live, &size, module, g.name.c_str()), "cuModuleGetGlobal");
    if (size < g.size) {
      std::fprintf(stderr, "error: module variable %s has %zu bytes, captured %" PRIu64 "\n",
                   g.name.c_str(), size, g.size);
      return 2;
    }
  }

  // 2b. CUDA arrays (filled as they were before the launch), texture and surface objects, and
  //     the module's texture/surface references, in the order the application made them.
  std::map<uint64_t, CUarray> arrays;     // captured CUarray -> this process's
  std::map<uint64_t, uint64_t> objects;   // captured CUtexObject/CUsurfObject -> this process's
  std::map<uint64_t, CUtexref> texrefs;   // captured CUtexref -> this module's
  std::map<uint64_t, CUsurfref> surfrefs;
  std::map<std::string, CUtensorMap> tensor_maps;  // captured bytes (hex) -> encoded here
  // A tensor map's global address where the memory is now (one in no range or variable is kept).
  auto global_of = [&](uint64_t address) -> void* {
    CUdeviceptr live = address;
    live_address(m, address, 1, &live);
    return reinterpret_cast<void*>(uintptr_t(live));
  };
  auto array_of = [&](Words& w) {
    uint64_t captured = w.hex();
    if (arrays.count(captured) == 0) w.bad();
    return arrays[captured];
  };
  for (const std::vector<std::string>& line : m.resources) {
    Words w{line};
    const std::string& key = line[0];
    if (key == "array") {
      uint64_t captured = w.hex();
      CUDA_ARRAY3D_DESCRIPTOR d = {};
      d.Format = CUarray_format(w.hex());
      d.NumChannels = unsigned(w.dec());
      d.Width = w.dec();
      d.Height = w.dec();
      d.Depth = w.dec();
      d.Flags = unsigned(w.hex());
      check(cuArray3DCreate(&arrays[captured], &d), "cuArray3DCreate");
    } else if (key == "array_input" || key == "array_expected") {
      CUarray array = array_of(w);
      CUDA_MEMCPY3D c = {};
      c.WidthInBytes = w.dec();
      c.Height = w.dec();
      c.Depth = w.dec();
      std::string file = w.text();
      std::vector<unsigned char> bytes = read_file(dir + "/" + file);
      if (bytes.size() != c.WidthInBytes * c.Height * c.Depth) w.bad();
      c.srcMemoryType = CU_MEMORYTYPE_HOST;
      c.srcHost = bytes.data();
      c.srcPitch = c.WidthInBytes;
      c.srcHeight = c.Height;
      c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
      c.dstArray = array;
      check(cuMemcpy3D(&c), "cuMemcpy3D (host to array)");
    } else if (key == "texture" || key == "surface") {
      uint64_t captured = w.hex();
      CUDA_RESOURCE_DESC res = {};
      const std::string& kind = w.text();
      if (kind == "array") {
        res.resType = CU_RESOURCE_TYPE_ARRAY;
        res.res.array.hArray = array_of(w);
      } else if (kind == "linear") {
        res.resType = CU_RESOURCE_TYPE_LINEAR;
        uint64_t address = w.hex();
        res.res.linear.format = CUarray_format(w.hex());
        res.res.linear.numChannels = unsigned(w.dec());
        res.res.linear.sizeInBytes = w.dec();
        res.res.linear.devPtr = translate(m, address, res.res.linear.sizeInBytes);
      } else if (kind == "pitch2d") {
        res.resType = CU_RESOURCE_TYPE_PITCH2D;
        uint64_t address = w.hex();
        res.res.pitch2D.format = CUarray_format(w.hex());
        res.res.pitch2D.numChannels = unsigned(w.dec());
        res.res.pitch2D.width = w.dec();
        res.res.pitch2D.height = w.dec();
        res.res.pitch2D.pitchInBytes = w.dec();
        res.res.pitch2D.devPtr =
            translate(m, address, res.res.pitch2D.pitchInBytes * res.res.pitch2D.height);
      } else {
        w.bad();
      }
      res.flags = unsigned(w.hex());
      if (key == "surface") {
        CUsurfObject live = 0;
        check(cuSurfObjectCreate(&live, &res), "cuSurfObjectCreate");
        objects[captured] = live;
        continue;
      }
      CUDA_TEXTURE_DESC tex = {};
      for (int i = 0; i < 3; ++i) tex.addressMode[i] = CUaddress_mode(w.dec());
      tex.filterMode = CUfilter_mode(w.dec());
      tex.flags = unsigned(w.hex());
      tex.maxAnisotropy = unsigned(w.dec());
      tex.mipmapFilterMode = CUfilter_mode(w.dec());
      tex.mipmapLevelBias = w.real();
      tex.minMipmapLevelClamp = w.real();
      tex.maxMipmapLevelClamp = w.real();
      for (int i = 0; i < 4; ++i) tex.borderColor[i] = w.real();
      CUDA_RESOURCE_VIEW_DESC view = {};
      bool has_view = w.next < line.size();
      if (has_view) {
        if (w.text() != "view") w.bad();
        view.format = CUresourceViewFormat(w.dec());
        view.width = w.dec();
        view.height = w.dec();
        view.depth = w.dec();
        view.firstMipmapLevel = unsigned(w.dec());
        view.lastMipmapLevel = unsigned(w.dec());
        view.firstLayer = unsigned(w.dec());
        view.lastLayer = unsigned(w.dec());
      }
      CUtexObject live = 0;
      check(cuTexObjectCreate(&live, &res, &tex, has_view ? &view : nullptr), "cuTexObjectCreate");
      objects[captured] = live;
    } else if (key == "tensor_map") {
      const std::string kind = w.text();
      auto type = CUtensorMapDataType(w.dec());
      auto rank = cuuint32_t(w.dec());
      void* global = global_of(w.hex());
      auto interleave = CUtensorMapInterleave(w.dec());
      auto swizzle = CUtensorMapSwizzle(w.dec());
      auto l2 = CUtensorMapL2promotion(w.dec());
      auto oob = CUtensorMapFloatOOBfill(w.dec());
      auto channels = unsigned(w.dec());
      auto pixels = unsigned(w.dec());
      auto wide = int(w.dec());
      auto dims = w.list<cuuint64_t>();
      auto strides = w.list<cuuint64_t>();
      auto box = w.list<cuuint32_t>();
      auto element_strides = w.list<cuuint32_t>();
      auto lower = w.list<int>();
      auto upper = w.list<int>();
      const std::string captured = w.text();
      CUtensorMap map;
      if (kind == "tiled") {
        check(cuTensorMapEncodeTiled(&map, type, rank, global, dims.data(), strides.data(),
                                     box.data(), element_strides.data(), interleave, swizzle, l2,
                                     oob),
              "cuTensorMapEncodeTiled");
      } else if (kind == "im2col") {
        check(cuTensorMapEncodeIm2col(&map, type, rank, global, dims.data(), strides.data(),
                                      lower.data(), upper.data(), channels, pixels,
                                      element_strides.data(), interleave, swizzle, l2, oob),
              "cuTensorMapEncodeIm2col");
      } else if (kind == "im2colWide" && !lower.empty() && !upper.empty()) {
        check(cuTensorMapEncodeIm2colWide(&map, type, rank, global, dims.data(), strides.data(),
                                          lower[0], upper[0], channels, pixels,
                                          element_strides.data(), interleave,
                                          CUtensorMapIm2ColWideMode(wide), swizzle, l2, oob),
              "cuTensorMapEncodeIm2colWide");
      } else {
        w.bad();
      }
      tensor_maps[captured] = map;
    } else if (key == "tensor_map_replace") {
      void* global = global_of(w.hex());
      auto previous = tensor_maps.find(w.text());
      if (previous == tensor_maps.end()) w.bad();
      CUtensorMap map = previous->second;
      check(cuTensorMapReplaceAddress(&map, global), "cuTensorMapReplaceAddress");
      tensor_maps[w.text()] = map;
    } else if (key == "texref") {
      uint64_t captured = w.hex();
      check(cuModuleGetTexRef(&texrefs[captured], module, w.text().c_str()), "cuModuleGetTexRef");
    } else if (key == "surfref") {
      uint64_t captured = w.hex();
      check(cuModuleGetSurfRef(&surfrefs[captured], module, w.text().c_str()),
            "cuModuleGetSurfRef");
    } else if (key == "texref_set") {
      uint64_t captured = w.hex();
      const std::string op = w.text();
      if (op == "surfSetArray") {
        if (surfrefs.count(captured) == 0) w.bad();
        CUarray array = array_of(w);
        check(cuSurfRefSetArray(surfrefs[captured], array, unsigned(w.hex())), "cuSurfRefSetArray");
        continue;
      }
      if (texrefs.count(captured) == 0) w.bad();
      CUtexref ref = texrefs[captured];
      if (op == "setArray") {
        CUarray array = array_of(w);
        check(cuTexRefSetArray(ref, array, unsigned(w.hex())), "cuTexRefSetArray");
      } else if (op == "setAddress") {
        uint64_t address = w.hex();
        size_t bytes = w.dec(), captured_offset = w.dec(), offset = 0;
        check(cuTexRefSetAddress(&offset, ref, translate(m, address, bytes), bytes),
              "cuTexRefSetAddress");
        if (offset != captured_offset)
          std::printf("note: cuTexRefSetAddress returned offset %zu, captured %zu: the kernel's "
                      "parameters assume the captured one\n", offset, captured_offset);
      } else if (op == "setAddress2d") {
        uint64_t address = w.hex();
        CUDA_ARRAY_DESCRIPTOR d = {};
        d.Format = CUarray_format(w.hex());
        d.NumChannels = unsigned(w.dec());
        d.Width = w.dec();
        d.Height = w.dec();
        size_t pitch = w.dec();
        check(cuTexRefSetAddress2D(ref, &d, translate(m, address, pitch * d.Height), pitch),
              "cuTexRefSetAddress2D");
      } else if (op == "setFormat") {
        CUarray_format format = CUarray_format(w.hex());
        check(cuTexRefSetFormat(ref, format, int(w.dec())), "cuTexRefSetFormat");
      } else if (op == "setAddressMode") {
        int dim = int(w.dec());
        check(cuTexRefSetAddressMode(ref, dim, CUaddress_mode(w.dec())), "cuTexRefSetAddressMode");
      } else if (op == "setFilterMode") {
        check(cuTexRefSetFilterMode(ref, CUfilter_mode(w.dec())), "cuTexRefSetFilterMode");
      } else if (op == "setMipmapFilterMode") {
        check(cuTexRefSetMipmapFilterMode(ref, CUfilter_mode(w.dec())),
              "cuTexRefSetMipmapFilterMode");
      } else if (op == "setMipmapLevelBias") {
        check(cuTexRefSetMipmapLevelBias(ref, w.real()), "cuTexRefSetMipmapLevelBias");
      } else if (op == "setMipmapLevelClamp") {
        float low = w.real();
        check(cuTexRefSetMipmapLevelClamp(ref, low, w.real()), "cuTexRefSetMipmapLevelClamp");
      } else if (op == "setMaxAnisotropy") {
        check(cuTexRefSetMaxAnisotropy(ref, unsigned(w.dec())), "cuTexRefSetMaxAnisotropy");
      } else if (op == "setBorderColor") {
        float color[4];
        for (float& c : color) c = w.real();
        check(cuTexRefSetBorderColor(ref, color), "cuTexRefSetBorderColor");
      } else if (op == "setFlags") {
        check(cuTexRefSetFlags(ref, unsigned(w.hex())), "cuTexRefSetFlags");
      } else {
        w.bad();
      }
    }
  }
  if (!arrays.empty() || !objects.empty() || !texrefs.empty() || !surfrefs.empty())
    std::printf("%zu CUDA arrays, %zu texture/surface objects, %zu references made\n",
                arrays.size(), objects.size(), texrefs.size() + surfrefs.size());
  if (!tensor_maps.empty()) std::printf("%zu tensor maps encoded\n", tensor_maps.size());

  // 3. Memory as it was before the launch.
  for (const Data& d : m.inputs) {
    std::vector<unsigned char> bytes = read_file(dir + "/" + d.file);
    if (bytes.size() != d.size) {
      std::fprintf(stderr, "error: %s has %zu bytes, manifest says %" PRIu64 "\n", d.file.c_str(),
                   bytes.size(), d.size);
      return 2;
    }
    check(cuMemcpyHtoD(translate(m, d.address, d.size), bytes.data(), d.size), "cuMemcpyHtoD");
  }

  // 4. The captured parameters; pointers into moved ranges follow them (only when relocated:
  //    pointers stored inside device memory are not rewritten, so a relocated run may differ).
  std::vector<unsigned char> params = read_file(dir + "/" + m.params);
  std::vector<void*> kernel_params;
  for (const Slot& slot : m.slots) {
    if (slot.offset + slot.size > params.size()) {
      std::fprintf(stderr, "error: parameter at %u does not fit in params.bin\n", slot.offset);
      return 2;
    }
    if (relocated && slot.size == 8) {
      uint64_t value;
      std::memcpy(&value, params.data() + slot.offset, 8);
      for (const Range& r : m.ranges) {
        if (value >= r.address && value < r.address + r.size && r.live != r.address) {
          uint64_t moved = r.live + (value - r.address);
          std::memcpy(params.data() + slot.offset, &moved, 8);
          std::printf("relocated parameter at offset %u: 0x%" PRIx64 " -> 0x%" PRIx64 "\n",
                      slot.offset, value, moved);
          break;
        }
      }
    }
    // A texture/surface object's captured value (the replay's rule: any 8-byte parameter equal
    // to one) becomes this process's object.
    if (slot.size == 8 && !objects.empty()) {
      uint64_t value;
      std::memcpy(&value, params.data() + slot.offset, 8);
      auto object = objects.find(value);
      if (object != objects.end()) std::memcpy(params.data() + slot.offset, &object->second, 8);
    }
    // A tensor map (a 128-byte, 64-byte-aligned parameter equal to a captured map's bytes)
    // becomes the map encoded here.
    if (slot.size == sizeof(CUtensorMap) && slot.offset % 64 == 0)
      substitute_tensor_map(tensor_maps, params.data() + slot.offset);
    kernel_params.push_back(params.data() + slot.offset);
  }
  if (m.extra) {  // no layout: every 64-byte-aligned place
    for (size_t at = 0; at + sizeof(CUtensorMap) <= params.size(); at += 64)
      substitute_tensor_map(tensor_maps, params.data() + at);
  }
  if (relocated && m.extra)
    std::printf("note: the parameters are an extra buffer without a layout: not relocated\n");
  // The `extra` form: params.bin is the buffer, passed by pointer and size.
  size_t params_size = params.size();
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, params.data(), CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &params_size, CU_LAUNCH_PARAM_END};
  void** kernel_args = m.extra ? nullptr : kernel_params.data();
  void** extra_args = m.extra ? extra : nullptr;
  // cuLaunchKernelEx: the captured attributes, each value as raw CUlaunchAttributeValue bytes.
  std::vector<CUlaunchAttribute> attributes(m.attributes.size());
  for (size_t i = 0; i < m.attributes.size(); ++i) {
    std::memset(&attributes[i], 0, sizeof attributes[i]);
    attributes[i].id = CUlaunchAttributeID(m.attributes[i].id);
    std::memcpy(&attributes[i].value, m.attributes[i].value.data(),
                std::min(m.attributes[i].value.size(), sizeof attributes[i].value));
  }
  CUlaunchConfig config = {};
  config.gridDimX = m.grid[0];
  config.gridDimY = m.grid[1];
  config.gridDimZ = m.grid[2];
  config.blockDimX = m.block[0];
  config.blockDimY = m.block[1];
  config.blockDimZ = m.block[2];
  config.sharedMemBytes = m.shared;
  config.hStream = nullptr;
  config.attrs = attributes.data();
  config.numAttrs = unsigned(attributes.size());
  CUevent start, stop;
  check(cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate");
  check(cuEventCreate(&stop, CU_EVENT_DEFAULT), "cuEventCreate");
  check(cuEventRecord(start, nullptr), "cuEventRecord");
  if (m.launch == "ex") {
    check(cuLaunchKernelEx(&config, function, kernel_args, extra_args), "cuLaunchKernelEx");
  } else if (m.launch == "cooperative") {
    check(cuLaunchCooperativeKernel(function, m.grid[0], m.grid[1], m.grid[2], m.block[0],
                                    m.block[1], m.block[2], m.shared, nullptr, kernel_args),
          "cuLaunchCooperativeKernel");
  } else {
    check(cuLaunchKernel(function, m.grid[0], m.grid[1], m.grid[2], m.block[0], m.block[1],
                         m.block[2], m.shared, nullptr, kernel_args, extra_args),
          "cuLaunchKernel");
  }
  check(cuEventRecord(stop, nullptr), "cuEventRecord");
  check(cuEventSynchronize(stop), "cuEventSynchronize");
  check(cuCtxSynchronize(), "cuCtxSynchronize");
  float ms = 0;
  check(cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
  std::printf("kernel %s: %.3f ms\n", m.kernel.c_str(), ms);

  // 5. Compare with the memory the launch left when it was captured: each expected range byte
  //    for byte (the first differing byte is printed), each hashed chunk by its XXH3-128.
  uint64_t compared = 0, hashed_bytes = 0, mismatches = 0;
  for (const Data& d : m.expected) {
    std::vector<unsigned char> want = read_file(dir + "/" + d.file);
    std::vector<unsigned char> got(d.size);
    check(cuMemcpyDtoH(got.data(), translate(m, d.address, d.size), d.size), "cuMemcpyDtoH");
    for (uint64_t i = 0; i < d.size; ++i) {
      if (i >= want.size() || got[i] != want[i]) {
        std::printf("MISMATCH at 0x%" PRIx64 ": expected 0x%02x, got 0x%02x (%s, byte %" PRIu64
                    ")\n", d.address + i, i < want.size() ? want[i] : 0, got[i], d.file.c_str(), i);
        ++mismatches;
        break;
      }
    }
    compared += d.size;
  }
  for (const Hashed& h : m.hashed) {
    std::vector<unsigned char> got(h.size);
    check(cuMemcpyDtoH(got.data(), translate(m, h.address, h.size), h.size), "cuMemcpyDtoH");
    const xxh3::Hash128 actual = xxh3::xxh3_128(got.data(), got.size());
    if (actual.low != h.hash.low || actual.high != h.hash.high) {
      std::printf("MISMATCH at 0x%" PRIx64 ": the chunk of %" PRIu64 " bytes there has XXH3-128 "
                  "%s, expected %s (only its hash was captured)\n", h.address, h.size,
                  hash_text(actual).c_str(), hash_text(h.hash).c_str());
      ++mismatches;
    }
    compared += h.size;
    hashed_bytes += h.size;
  }
  for (const std::vector<std::string>& line : m.array_expected) {
    Words w{line};
    uint64_t captured = w.hex();
    if (arrays.count(captured) == 0) w.bad();
    CUDA_MEMCPY3D c = {};
    c.WidthInBytes = w.dec();
    c.Height = w.dec();
    c.Depth = w.dec();
    std::string file = w.text();
    std::vector<unsigned char> want = read_file(dir + "/" + file);
    std::vector<unsigned char> got(c.WidthInBytes * c.Height * c.Depth);
    if (want.size() != got.size()) w.bad();
    c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    c.srcArray = arrays[captured];
    c.dstMemoryType = CU_MEMORYTYPE_HOST;
    c.dstHost = got.data();
    c.dstPitch = c.WidthInBytes;
    c.dstHeight = c.Height;
    check(cuMemcpy3D(&c), "cuMemcpy3D (array to host)");
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i] != want[i]) {
        std::printf("MISMATCH in CUDA array 0x%" PRIx64 ": expected 0x%02x, got 0x%02x (%s, byte "
                    "%zu)\n", captured, want[i], got[i], file.c_str(), i);
        ++mismatches;
        break;
      }
    }
    compared += got.size();
  }
  const size_t pieces = m.expected.size() + m.hashed.size() + m.array_expected.size();
  if (mismatches > 0) {
    std::printf("MISMATCH: %" PRIu64 " of %zu expected ranges and chunks differ\n", mismatches,
                pieces);
    return 1;
  }
  std::printf("MATCH (%" PRIu64 " bytes compared: %zu ranges byte for byte, %zu chunks "
              "(%" PRIu64 " bytes) by XXH3-128, %zu CUDA arrays byte for byte)\n", compared,
              m.expected.size(), m.hashed.size(), hashed_bytes, m.array_expected.size());
  return 0;
}
)CPP";
// clang-format on

constexpr const char* kCMakeLists =
    R"(# Reproducer of one CUDA kernel launch, written by `cusnap extract --emit-cpp`.
cmake_minimum_required(VERSION 3.18)
project(cusnap_reproducer LANGUAGES CXX)
find_package(CUDAToolkit REQUIRED)
add_executable(reproducer main.cpp)
target_compile_features(reproducer PRIVATE cxx_std_17)
target_link_libraries(reproducer PRIVATE CUDA::cuda_driver)
)";

std::string hex(uint64_t value) { return common::hex_digits(value); }

Status write_file(const std::filesystem::path& path, const void* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) return Status::error(ErrorCode::kIo, "cannot write " + path.string());
  return Status::ok();
}

Status write_text(const std::filesystem::path& path, const std::string& text) {
  return write_file(path, text.data(), text.size());
}

struct Run {  // contiguous chunks, one data file
  uint64_t address = 0;
  std::vector<uint8_t> bytes;
};

struct Runs {
  std::vector<Run> runs;
  std::vector<schema::MemoryChunk::Reader> hashed;  // hashOnly chunks (afterLaunch only)
};

// The snapshot's chunks joined into contiguous runs (each read from its blob). A hashOnly chunk
// is kept apart when `hashes_allowed` (the expected state: the program compares its XXH3-128),
// and refused otherwise (the inputs: the program must write those bytes).
format::Result<Runs> runs_of(format::Reader& r, schema::MemorySnapshot::Reader snap,
                             const char* phase, bool hashes_allowed) {
  Runs out;
  std::vector<Run>& runs = out.runs;
  for (auto c : snap.getChunks()) {
    if (c.getHashOnly() && hashes_allowed) {
      out.hashed.push_back(c);
      continue;
    }
    if (c.getHashOnly())
      return Status::error(ErrorCode::kInvalidArgument,
                           std::string("the ") + phase + " chunk at 0x" + hex(c.getAddress()) +
                               " holds only a hash: the reproducer needs the bytes of the memory "
                               "it restores");
    auto bytes = r.read_blob(format::BlobId{c.getBlob().getHigh(), c.getBlob().getLow()});
    if (!bytes) return bytes.status();
    if (bytes->size() != c.getSize())
      return Status::error(ErrorCode::kMalformed, std::string(phase) + " chunk at 0x" +
                                                      hex(c.getAddress()) + ": blob size differs");
    if (runs.empty() || runs.back().address + runs.back().bytes.size() != c.getAddress())
      runs.push_back(Run{c.getAddress(), {}});
    runs.back().bytes.insert(runs.back().bytes.end(), bytes->begin(), bytes->end());
  }
  return out;
}

// %a: a float exactly, as the program's strtof reads it back.
std::string real(float value) {
  char text[64];
  std::snprintf(text, sizeof text, "%a", static_cast<double>(value));
  return text;
}

// The manifest lines (and array data files) of the extract's CUDA arrays, their fill and check
// copies, texture/surface objects and references, in record order (docs/extract.md, "Textures
// and surfaces"); what the program cannot make is refused.
Status resource_lines(format::Reader& extracted, const std::vector<format::CallRef>& records,
                      const std::filesystem::path& d, std::ostringstream& m) {
  auto refuse = [](const std::string& what) {
    return Status::error(ErrorCode::kInvalidArgument,
                         what +
                             ": the C++ reproducer does not make it; replay the extract with "
                             "cusnap replay instead");
  };
  unsigned inputs = 0, expected = 0;
  for (const format::CallRef& ref : records) {
    auto rec = ref.get();
    const std::string who =
        "record " + std::to_string(ref.seq()) + " (" + std::string(rec.getApiName()) + ")";
    switch (rec.which()) {
      case schema::CallRecord::ARRAY: {
        using Op = schema::ArrayCall::Op;
        auto a = rec.getArray();
        if (a.getOp() != Op::CREATE && a.getOp() != Op::CREATE3D)
          return refuse(who + ", a mipmapped array or a destroy");
        m << "array " << hex(a.getArray()) << ' ' << hex(static_cast<uint32_t>(a.getFormat()))
          << ' ' << a.getChannels() << ' ' << a.getWidth() << ' ' << a.getHeight() << ' '
          << a.getDepth() << ' ' << hex(a.getFlags()) << '\n';
        break;
      }
      case schema::CallRecord::MEMCPY: {
        constexpr int32_t kHost = 1, kArray = 3;  // CUmemorytype
        auto c = rec.getMemcpy();
        auto g = c.getGeometry();
        const bool fill = g.getDstMemoryType() == kArray && g.getSrcMemoryType() == kHost;
        const bool check = g.getSrcMemoryType() == kArray && g.getDstMemoryType() == kHost;
        if (c.getKind() != schema::Memcpy::Kind::ARRAY_INVOLVED || (!fill && !check) ||
            g.getSrcXInBytes() != 0 || g.getDstXInBytes() != 0 || g.getSrcY() != 0 ||
            g.getDstY() != 0 || g.getSrcZ() != 0 || g.getDstZ() != 0)
          return refuse(who + ", a copy other than an extract's fill or check of a whole array");
        if (!c.hasPayload() || to_blob(c.getPayload()).is_null())
          return refuse(who + ", an array's " + (fill ? "fill" : "check") +
                        " without its bytes (an extract written before schema 9's array payloads)");
        auto bytes = extracted.read_blob(to_blob(c.getPayload()));
        if (!bytes) return bytes.status();
        const uint64_t height = g.getHeight() == 0 ? 1 : g.getHeight();
        const uint64_t depth = g.getDepth() == 0 ? 1 : g.getDepth();
        if (bytes->size() != g.getWidthInBytes() * height * depth)
          return Status::error(ErrorCode::kMalformed, who + ": its payload does not fill the copy");
        const std::string file = fill ? "array_input_" + std::to_string(inputs++) + ".bin"
                                      : "array_expected_" + std::to_string(expected++) + ".bin";
        Status st = write_file(d / file, bytes->data(), bytes->size());
        if (!st) return st;
        m << (fill ? "array_input " : "array_expected ")
          << hex(fill ? g.getDstArray() : g.getSrcArray()) << ' ' << g.getWidthInBytes() << ' '
          << height << ' ' << depth << ' ' << file << '\n';
        break;
      }
      case schema::CallRecord::TEX_OBJECT: {
        using Op = schema::TexObjectCall::Op;
        auto o = rec.getTexObject();
        if (o.getOp() != Op::TEXTURE_CREATE && o.getOp() != Op::SURFACE_CREATE)
          return refuse(who + ", an object's destroy");
        const bool surface = o.getOp() == Op::SURFACE_CREATE;
        auto r = o.getResource();
        std::ostringstream line;
        line << (surface ? "surface " : "texture ") << hex(o.getObject()) << ' ';
        switch (r.getType()) {
          case 0:
            line << "array " << hex(r.getArray());
            break;
          case 2:
            line << "linear " << hex(r.getDevicePointer()) << ' '
                 << hex(static_cast<uint32_t>(r.getFormat())) << ' ' << r.getChannels() << ' '
                 << r.getSizeInBytes();
            break;
          case 3:
            line << "pitch2d " << hex(r.getDevicePointer()) << ' '
                 << hex(static_cast<uint32_t>(r.getFormat())) << ' ' << r.getChannels() << ' '
                 << r.getWidth() << ' ' << r.getHeight() << ' ' << r.getPitchInBytes();
            break;
          default:
            return refuse(who + ", an object over a mipmapped array or of resource type " +
                          std::to_string(r.getType()));
        }
        line << ' ' << hex(r.getFlags());
        if (!surface) {
          auto t = o.getTexture();
          auto modes = t.getAddressMode();
          auto border = t.getBorderColor();
          for (unsigned i = 0; i < 3; ++i) line << ' ' << (i < modes.size() ? modes[i] : 0);
          line << ' ' << t.getFilterMode() << ' ' << hex(t.getFlags()) << ' '
               << t.getMaxAnisotropy() << ' ' << t.getMipmapFilterMode() << ' '
               << real(t.getMipmapLevelBias()) << ' ' << real(t.getMinMipmapLevelClamp()) << ' '
               << real(t.getMaxMipmapLevelClamp());
          for (unsigned i = 0; i < 4; ++i)
            line << ' ' << real(i < border.size() ? border[i] : 0.0f);
          if (o.getHasView()) {
            auto v = o.getView();
            line << " view " << v.getFormat() << ' ' << v.getWidth() << ' ' << v.getHeight() << ' '
                 << v.getDepth() << ' ' << v.getFirstMipmapLevel() << ' ' << v.getLastMipmapLevel()
                 << ' ' << v.getFirstLayer() << ' ' << v.getLastLayer();
          }
        }
        m << line.str() << '\n';
        break;
      }
      case schema::CallRecord::TEX_REF: {
        using Op = schema::TexRefCall::Op;
        auto t = rec.getTexRef();
        const std::string ref = hex(t.getRef());
        const std::string name = t.getName();
        switch (t.getOp()) {
          case Op::GET_TEX_REF:
          case Op::GET_SURF_REF:
            if (name.empty() || name.find_first_of(" \t\n") != std::string::npos)
              return Status::error(ErrorCode::kMalformed, who + ": a reference name with spaces");
            m << (t.getOp() == Op::GET_TEX_REF ? "texref " : "surfref ") << ref << ' ' << name
              << '\n';
            break;
          case Op::SET_ARRAY:
            m << "texref_set " << ref << " setArray " << hex(t.getArray()) << ' '
              << hex(t.getFlags()) << '\n';
            break;
          case Op::SURF_SET_ARRAY:
            m << "texref_set " << ref << " surfSetArray " << hex(t.getArray()) << ' '
              << hex(t.getFlags()) << '\n';
            break;
          case Op::SET_ADDRESS:
            m << "texref_set " << ref << " setAddress " << hex(t.getAddress()) << ' '
              << t.getBytes() << ' ' << t.getByteOffset() << '\n';
            break;
          case Op::SET_ADDRESS2D:
            m << "texref_set " << ref << " setAddress2d " << hex(t.getAddress()) << ' '
              << hex(static_cast<uint32_t>(t.getFormat())) << ' ' << t.getChannels() << ' '
              << t.getWidth() << ' ' << t.getHeight() << ' ' << t.getPitch() << '\n';
            break;
          case Op::SET_FORMAT:
            m << "texref_set " << ref << " setFormat " << hex(static_cast<uint32_t>(t.getFormat()))
              << ' ' << t.getChannels() << '\n';
            break;
          case Op::SET_ADDRESS_MODE:
            m << "texref_set " << ref << " setAddressMode " << t.getDim() << ' ' << t.getMode()
              << '\n';
            break;
          case Op::SET_FILTER_MODE:
            m << "texref_set " << ref << " setFilterMode " << t.getMode() << '\n';
            break;
          case Op::SET_MIPMAP_FILTER_MODE:
            m << "texref_set " << ref << " setMipmapFilterMode " << t.getMode() << '\n';
            break;
          case Op::SET_MIPMAP_LEVEL_BIAS:
            m << "texref_set " << ref << " setMipmapLevelBias " << real(t.getBias()) << '\n';
            break;
          case Op::SET_MIPMAP_LEVEL_CLAMP:
            m << "texref_set " << ref << " setMipmapLevelClamp " << real(t.getMinClamp()) << ' '
              << real(t.getMaxClamp()) << '\n';
            break;
          case Op::SET_MAX_ANISOTROPY:
            m << "texref_set " << ref << " setMaxAnisotropy " << t.getMaxAnisotropy() << '\n';
            break;
          case Op::SET_BORDER_COLOR: {
            auto c = t.getBorderColor();
            m << "texref_set " << ref << " setBorderColor";
            for (unsigned i = 0; i < 4; ++i) m << ' ' << real(i < c.size() ? c[i] : 0.0f);
            m << '\n';
            break;
          }
          case Op::SET_FLAGS:
            m << "texref_set " << ref << " setFlags " << hex(t.getFlags()) << '\n';
            break;
          default:
            return refuse(who +
                          ", a reference call other than a look-up or setting (a "
                          "mipmapped binding, cuTexRefCreate/Destroy, cuParamSetTexRef)");
        }
        break;
      }
      case schema::CallRecord::TENSOR_MAP: {
        using Op = schema::TensorMapCall::Op;
        auto t = rec.getTensorMap();
        if (rec.getResult() != 0) break;  // made nothing
        auto bytes_hex = [](capnp::Data::Reader d) {
          return format::bytes_to_hex(std::span<const uint8_t>(d.begin(), d.size()));
        };
        if (t.getEncoded().size() != format::kTensorMapBytes)
          return Status::error(ErrorCode::kMalformed, who + ": its encoded map is not 128 bytes");
        if (t.getOp() == Op::REPLACE_ADDRESS) {
          m << "tensor_map_replace " << hex(t.getGlobalAddress()) << ' '
            << bytes_hex(t.getPrevious()) << ' ' << bytes_hex(t.getEncoded()) << '\n';
          break;
        }
        auto list = [](auto values) {
          std::string text;
          for (auto v : values) {
            if (!text.empty()) text += ',';
            text += std::to_string(v);
          }
          return text.empty() ? std::string("-") : text;
        };
        const char* kind = t.getOp() == Op::ENCODE_TILED    ? "tiled"
                           : t.getOp() == Op::ENCODE_IM2COL ? "im2col"
                                                            : "im2colWide";
        m << "tensor_map " << kind << ' ' << t.getDataType() << ' ' << t.getRank() << ' '
          << hex(t.getGlobalAddress()) << ' ' << t.getInterleave() << ' ' << t.getSwizzle() << ' '
          << t.getL2Promotion() << ' ' << t.getOobFill() << ' ' << t.getChannelsPerPixel() << ' '
          << t.getPixelsPerColumn() << ' ' << t.getWideMode() << ' ' << list(t.getGlobalDim())
          << ' ' << list(t.getGlobalStrides()) << ' ' << list(t.getBoxDim()) << ' '
          << list(t.getElementStrides()) << ' ' << list(t.getPixelBoxLowerCorner()) << ' '
          << list(t.getPixelBoxUpperCorner()) << ' ' << bytes_hex(t.getEncoded()) << '\n';
        break;
      }
      default:
        break;
    }
  }
  return Status::ok();
}

Status emit_records(format::Reader& extracted, const std::string& dir) {
  namespace fs = std::filesystem;
  if (!extracted.header().hasExtract())
    return Status::error(ErrorCode::kInvalidArgument,
                         extracted.path() + " is not an extracted capture (cusnap extract)");
  // Collect the records of the extracted capture (docs/format.md, "CaptureHeader.extract").
  std::optional<format::CallRef> module, function, launch, before, after;
  std::vector<format::CallRef> globals, allocations;
  std::set<std::string> tensor_maps;       // the 128 bytes each tensorMap record left
  std::vector<format::CallRef> resources;  // array, memcpy, texObject, texRef records in order
  std::string other;  // the first record of a kind the reproducer does not handle
  Status scan = extracted.for_each_call([&](const format::CallRef& ref) {
    auto rec = ref.get();
    auto take_resource = [&] {
      auto c = extracted.call(ref.seq());
      if (c) resources.push_back(std::move(c.value()));
    };
    auto take = [&](std::optional<format::CallRef>& slot) {
      auto c = extracted.call(ref.seq());
      if (c) slot.emplace(std::move(c.value()));
    };
    switch (rec.which()) {
      case schema::CallRecord::MODULE_LOAD:
        take(module);
        break;
      case schema::CallRecord::FUNCTION_GET:
        take(function);
        break;
      case schema::CallRecord::LAUNCH:
        take(launch);
        break;
      case schema::CallRecord::GLOBAL_GET:
      case schema::CallRecord::MEM_ALLOC: {
        auto c = extracted.call(ref.seq());
        if (c)
          (rec.which() == schema::CallRecord::GLOBAL_GET ? globals : allocations)
              .push_back(std::move(c.value()));
        break;
      }
      case schema::CallRecord::TENSOR_MAP:
        if (rec.getResult() == 0)
          tensor_maps.insert(
              std::string(reinterpret_cast<const char*>(rec.getTensorMap().getEncoded().begin()),
                          rec.getTensorMap().getEncoded().size()));
        take_resource();
        break;
      case schema::CallRecord::ARRAY:
      case schema::CallRecord::TEX_OBJECT:
      case schema::CallRecord::TEX_REF:
      case schema::CallRecord::MEMCPY:  // an extract's copies fill and check its arrays
        take_resource();
        break;
      case schema::CallRecord::MEMORY_SNAPSHOT:
        take(rec.getMemorySnapshot().getPhase() == schema::MemorySnapshot::Phase::BEFORE_LAUNCH
                 ? before
                 : after);
        break;
      default:
        // A record the program would not reproduce: never a reproducer that silently differs.
        if (other.empty())
          other =
              "record " + std::to_string(ref.seq()) + " (" + std::string(rec.getApiName()) + ")";
        break;
    }
    return true;
  });
  if (!scan) return scan;
  if (!other.empty())
    return Status::error(ErrorCode::kInvalidArgument,
                         "the extract holds " + other +
                             ", which the C++ reproducer does not recreate; replay the extract "
                             "with cusnap replay instead");
  if (!module || !function || !launch || !before || !after)
    return Status::error(ErrorCode::kMalformed, extracted.path() +
                                                    ": an extracted capture needs a moduleLoad, a "
                                                    "functionGet, a launch and both snapshots");
  auto l = launch->get().getLaunch();
  const char* launch_call = nullptr;  // the manifest's `launch`: which cuLaunch* the program calls
  switch (l.getKind()) {
    case schema::Launch::Kind::LAUNCH_KERNEL:
      launch_call = "kernel";
      break;
    case schema::Launch::Kind::LAUNCH_KERNEL_EX:
      launch_call = "ex";
      break;
    case schema::Launch::Kind::LAUNCH_COOPERATIVE_KERNEL:
      launch_call = "cooperative";
      break;
    default:
      return Status::error(ErrorCode::kInvalidArgument,
                           "the reproducer supports cuLaunchKernel, cuLaunchKernelEx and "
                           "cuLaunchCooperativeKernel launches (this one is a multi-device "
                           "cooperative launch or of an unknown kind)");
  }
  if (l.getViaExtra() && std::string(launch_call) == "cooperative")
    return Status::error(ErrorCode::kMalformed,
                         "a cooperative launch with an `extra` parameter buffer (the driver API "
                         "has no such call)");
  auto ml = module->get().getModuleLoad();
  auto image = extracted.read_blob(format::BlobId{ml.getImage().getHigh(), ml.getImage().getLow()});
  if (!image) return image.status();

  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return Status::error(ErrorCode::kIo, "cannot create directory " + dir + ": " + ec.message());
  fs::path d(dir);
  Status st = write_text(d / "main.cpp", kMainCpp);
  if (st) st = write_text(d / "CMakeLists.txt", kCMakeLists);
  if (st) st = write_text(d / "xxh3_128.h", kXxh3Header);
  if (st) st = write_file(d / "module.bin", image->data(), image->size());
  auto params = l.getParams();
  if (st) st = write_file(d / "params.bin", params.begin(), params.size());
  if (!st) return st;

  std::ostringstream m;
  // The entry name: the functionGet's (a kernelGetFunction record may have none: the launch's).
  std::string kernel = function->get().getFunctionGet().getName();
  if (kernel.empty()) kernel = l.getKernelName();
  if (kernel.empty() || kernel.find_first_of(" \t\n") != std::string::npos)
    return Status::error(ErrorCode::kMalformed, "the launch's kernel name is empty or has spaces");
  m << "# What the reproducer launches (main.cpp reads this). Addresses hex, sizes decimal.\n"
    << "# Extracted from " << std::string(extracted.header().getExtract().getSourcePath()) << ", "
    << format::extracted_launch_text(extracted.header().getExtract()) << ".\n"
    << "kernel " << kernel << "\nmodule module.bin\nparams params.bin\n"
    << "grid " << l.getGridX() << ' ' << l.getGridY() << ' ' << l.getGridZ() << '\n'
    << "block " << l.getBlockX() << ' ' << l.getBlockY() << ' ' << l.getBlockZ() << '\n'
    << "shared " << l.getSharedBytes() << '\n'
    << "launch " << launch_call << '\n';
  if (l.getViaExtra()) m << "extra 1\n";
  for (auto a : l.getAttributes()) {
    auto value = a.getValue();
    m << "attribute " << a.getId() << ' '
      << format::bytes_to_hex(std::span<const uint8_t>(value.begin(), value.size())) << '\n';
  }
  for (auto slot : l.getLayout())
    m << "param " << slot.getOffset() << ' ' << slot.getSize() << '\n';
  for (const auto& a : allocations) {
    auto r = a.get().getMemAlloc();
    m << "range " << hex(r.getAddress()) << ' ' << r.getSize() << '\n';
  }
  for (const auto& g : globals) {
    auto r = g.get().getGlobalGet();
    m << "global " << std::string(r.getName()) << ' ' << hex(r.getAddress()) << ' ' << r.getSize()
      << '\n';
  }
  for (int phase = 0; phase < 2; ++phase) {
    const char* name = phase == 0 ? "input" : "expected";
    auto runs = runs_of(extracted, (phase == 0 ? *before : *after).get().getMemorySnapshot(),
                        phase == 0 ? "beforeLaunch" : "afterLaunch", phase == 1);
    if (!runs) return runs.status();
    for (size_t i = 0; i < runs->runs.size(); ++i) {
      const Run& run = runs->runs[i];
      // A tensor map in memory is the capturing driver's encoding; the program encodes the maps
      // of the parameters again, but does not rewrite memory (the replay does).
      std::optional<uint64_t> map_at;
      format::for_each_tensor_map_window(run.address, run.bytes.size(), [&](size_t offset) {
        if (!map_at &&
            tensor_maps.count(std::string(reinterpret_cast<const char*>(run.bytes.data()) + offset,
                                          format::kTensorMapBytes)) != 0)
          map_at = run.address + offset;
      });
      if (map_at)
        return Status::error(ErrorCode::kInvalidArgument,
                             "the memory " + std::string(phase == 0 ? "before" : "after") +
                                 " the launch holds a tensor map at 0x" + hex(*map_at) +
                                 ": the C++ reproducer encodes the tensor maps of the parameters, "
                                 "not those in memory; replay the extract with cusnap replay "
                                 "instead");
      std::string file = std::string(name) + "_" + std::to_string(i) + ".bin";
      st = write_file(d / file, run.bytes.data(), run.bytes.size());
      if (!st) return st;
      m << name << ' ' << hex(run.address) << ' ' << run.bytes.size() << ' ' << file << '\n';
    }
    for (auto c : runs->hashed) {
      m << "expected_hash " << hex(c.getAddress()) << ' ' << c.getSize() << ' '
        << format::BlobId{c.getBlob().getHigh(), c.getBlob().getLow()}.to_hex() << '\n';
    }
  }
  st = resource_lines(extracted, resources, d, m);
  if (!st) return st;
  st = write_text(d / "manifest.txt", m.str());
  if (!st) return st;
  std::ostringstream readme;
  readme << "# Reproducer: one launch of `" << kernel << "`\n\n"
         << "Written by `cusnap extract --emit-cpp` from `"
         << std::string(extracted.header().getExtract().getSourcePath()) << "` ("
         << format::extracted_launch_text(extracted.header().getExtract())
         << "). Needs only the CUDA toolkit (CMake finds it with `find_package(CUDAToolkit)`).\n\n"
         << "```\ncmake -S . -B build && cmake --build build\n./build/reproducer .\n```\n\n"
         << "It prints `MATCH` and exits 0 when the kernel leaves memory exactly as it did when "
            "captured, or `MISMATCH at 0x...` for each range or chunk that differs and exits 1; "
            "2 means a driver call failed. "
            "`main.cpp` says what it does step by step; `manifest.txt` lists the launch "
            "configuration, the memory ranges (reserved at their captured addresses), the "
            "data files (`input_*.bin` before the launch, `expected_*.bin` after it) and, where "
            "the capture recorded only a hash of a chunk after the launch, that chunk's XXH3-128 "
            "(`expected_hash`, checked with `xxh3_128.h`).\n";
  return write_text(d / "README.md", readme.str());
}

}  // namespace

Status emit_cpp(format::Reader& extracted, const std::string& dir) {
  return detail::unreadable_as_error([&] { return emit_records(extracted, dir); });
}

}  // namespace cusnap::extract

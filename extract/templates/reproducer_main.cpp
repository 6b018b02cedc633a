// Reproducer of one CUDA kernel launch, written by `cusnap extract --emit-cpp`.
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

#include "xxh3_128.h"

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

struct Range {       // captured memory the kernel can reach
  uint64_t address;  // captured device address
  uint64_t size;
  CUdeviceptr live = 0;  // where it is in this process
};
struct Global {  // a module variable: found again by name
  std::string name;
  uint64_t address;  // captured address
  uint64_t size;
  CUdeviceptr live = 0;
};
struct Data {  // bytes at a captured address, before (input) or after (expected)
  uint64_t address;
  uint64_t size;
  std::string file;
};
struct Hashed {  // an expected chunk recorded only by its XXH3-128
  uint64_t address;
  uint64_t size;
  xxh3::Hash128 hash;
};
struct Slot {  // one kernel parameter inside params.bin
  unsigned offset, size;
};

struct Attribute {  // a launch attribute of cuLaunchKernelEx: id and raw value bytes
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
               key == "texref" || key == "surfref" || key == "texref_set" || key == "tensor_map" ||
               key == "tensor_map_replace" || key == "array_expected") {
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
      std::printf("range 0x%" PRIx64 " (%" PRIu64
                  " bytes): captured address not available, "
                  "mapped at 0x%llx\n",
                  r.address, r.size, (unsigned long long)r.live);
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
  std::map<uint64_t, CUarray> arrays;    // captured CUarray -> this process's
  std::map<uint64_t, uint64_t> objects;  // captured CUtexObject/CUsurfObject -> this process's
  std::map<uint64_t, CUtexref> texrefs;  // captured CUtexref -> this module's
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
          std::printf(
              "note: cuTexRefSetAddress returned offset %zu, captured %zu: the kernel's "
              "parameters assume the captured one\n",
              offset, captured_offset);
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
                    ")\n",
                    d.address + i, i < want.size() ? want[i] : 0, got[i], d.file.c_str(), i);
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
      std::printf("MISMATCH at 0x%" PRIx64 ": the chunk of %" PRIu64
                  " bytes there has XXH3-128 "
                  "%s, expected %s (only its hash was captured)\n",
                  h.address, h.size, hash_text(actual).c_str(), hash_text(h.hash).c_str());
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
        std::printf("MISMATCH in CUDA array 0x%" PRIx64
                    ": expected 0x%02x, got 0x%02x (%s, byte "
                    "%zu)\n",
                    captured, want[i], got[i], file.c_str(), i);
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
  std::printf("MATCH (%" PRIu64
              " bytes compared: %zu ranges byte for byte, %zu chunks "
              "(%" PRIu64 " bytes) by XXH3-128, %zu CUDA arrays byte for byte)\n",
              compared, m.expected.size(), m.hashed.size(), hashed_bytes, m.array_expected.size());
  return 0;
}

// --emit-cpp: an extracted capture as a directory a driver or compiler engineer can build with
// nothing but the CUDA toolkit. The program (kMainCpp, fixed text) reads manifest.txt, written
// here, for everything specific to the launch; data are raw files next to it.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include "cusnap/extract/extract.h"
#include "unreadable.h"

namespace cusnap::extract {

namespace schema = format::schema;
using format::ErrorCode;
using format::Status;

namespace {

// The reproducer. Plain cuda.h driver API, C++17, no cusnap header or library.
// The reproducer's source, written out verbatim.
// clang-format off
constexpr const char* kMainCpp =
    R"CPP(// Reproducer of one CUDA kernel launch, written by `cusnap extract --emit-cpp`.
//
// It needs only the CUDA toolkit (cuda.h and the driver library). What it does:
//   1. reserves every captured memory range at its captured device address (cuMemAddressReserve
//      with that address as the hint, then cuMemCreate + cuMemMap + cuMemSetAccess), so that
//      pointers stored in memory stay valid; when the driver gives another address, pointer-sized
//      kernel parameters that point into a captured range are relocated, and it says so;
//   2. loads the code image (module.bin), gets the kernel, finds module variables by name;
//   3. writes the memory as it was before the launch (input_*.bin);
//   4. launches the kernel with the captured parameters (params.bin), timed with events;
//   5. reads the memory back and compares it, byte for byte, with what the launch produced when it
//      was captured (expected_*.bin): prints MATCH (exit 0) or MISMATCH at 0x... (exit 1).
// manifest.txt lists the launch configuration, the ranges and the data files.
// Usage: reproducer [DIR]   (DIR: the directory with manifest.txt, default ".")
#include <cuda.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

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
struct Slot {           // one kernel parameter inside params.bin
  unsigned offset, size;
};

struct Manifest {
  std::string kernel, module, params;
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1}, shared = 0;
  std::vector<Slot> slots;
  std::vector<Range> ranges;
  std::vector<Global> globals;
  std::vector<Data> inputs, expected;
};

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
    }
    if (s.fail()) {
      std::fprintf(stderr, "error: manifest line not understood: %s\n", line.c_str());
      std::exit(2);
    }
  }
  return m;
}

// Where a captured address lives now (globals first: they are not reserved ranges).
CUdeviceptr translate(const Manifest& m, uint64_t address, uint64_t size) {
  for (const Global& g : m.globals)
    if (address >= g.address && address - g.address + size <= g.size)
      return g.live + (address - g.address);
  for (const Range& r : m.ranges)
    if (address >= r.address && address - r.address + size <= r.size)
      return r.live + (address - r.address);
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
  bool relocated = false;
  for (Range& r : m.ranges) {
    uint64_t base = r.address / granularity * granularity;
    uint64_t end = (r.address + r.size + granularity - 1) / granularity * granularity;
    bool inside_earlier = false;  // two small allocations can share a granule
    for (const Range& e : m.ranges) {
      if (&e == &r) break;
      uint64_t eb = e.address / granularity * granularity;
      uint64_t ee = (e.address + e.size + granularity - 1) / granularity * granularity;
      if (base >= eb && end <= ee) {
        r.live = e.live - e.address + r.address;
        inside_earlier = true;
      }
    }
    if (inside_earlier) continue;
    CUdeviceptr ptr = 0;
    check(cuMemAddressReserve(&ptr, end - base, 0, base, 0), "cuMemAddressReserve");
    CUmemGenericAllocationHandle handle;
    check(cuMemCreate(&handle, end - base, &prop, 0), "cuMemCreate");
    check(cuMemMap(ptr, end - base, 0, handle, 0), "cuMemMap");
    CUmemAccessDesc access = {};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    check(cuMemSetAccess(ptr, end - base, &access, 1), "cuMemSetAccess");
    check(cuMemsetD8(ptr, 0, end - base), "cuMemsetD8");
    r.live = ptr + (r.address - base);
    if (ptr != base) {
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
    kernel_params.push_back(params.data() + slot.offset);
  }
  CUevent start, stop;
  check(cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate");
  check(cuEventCreate(&stop, CU_EVENT_DEFAULT), "cuEventCreate");
  check(cuEventRecord(start, nullptr), "cuEventRecord");
  check(cuLaunchKernel(function, m.grid[0], m.grid[1], m.grid[2], m.block[0], m.block[1],
                       m.block[2], m.shared, nullptr, kernel_params.data(), nullptr),
        "cuLaunchKernel");
  check(cuEventRecord(stop, nullptr), "cuEventRecord");
  check(cuEventSynchronize(stop), "cuEventSynchronize");
  check(cuCtxSynchronize(), "cuCtxSynchronize");
  float ms = 0;
  check(cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
  std::printf("kernel %s: %.3f ms\n", m.kernel.c_str(), ms);

  // 5. Compare with the memory the launch left when it was captured.
  uint64_t compared = 0;
  for (const Data& d : m.expected) {
    std::vector<unsigned char> want = read_file(dir + "/" + d.file);
    std::vector<unsigned char> got(d.size);
    check(cuMemcpyDtoH(got.data(), translate(m, d.address, d.size), d.size), "cuMemcpyDtoH");
    for (uint64_t i = 0; i < d.size; ++i) {
      if (i >= want.size() || got[i] != want[i]) {
        std::printf("MISMATCH at 0x%" PRIx64 ": expected 0x%02x, got 0x%02x (%s, byte %" PRIu64
                    ")\n", d.address + i, i < want.size() ? want[i] : 0, got[i], d.file.c_str(), i);
        return 1;
      }
    }
    compared += d.size;
  }
  std::printf("MATCH (%" PRIu64 " bytes compared)\n", compared);
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

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return buf;
}

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

// The snapshot's chunks joined into contiguous runs (each read from its blob).
format::Result<std::vector<Run>> runs_of(format::Reader& r, schema::MemorySnapshot::Reader snap,
                                         const char* phase) {
  std::vector<Run> runs;
  for (auto c : snap.getChunks()) {
    if (c.getHashOnly())
      return Status::error(ErrorCode::kInvalidArgument,
                           std::string("the ") + phase + " chunk at 0x" + hex(c.getAddress()) +
                               " holds only a hash: the reproducer needs the bytes (capture "
                               "with --snapshot-outputs)");
    auto bytes = r.read_blob(format::BlobId{c.getBlob().getHigh(), c.getBlob().getLow()});
    if (!bytes) return bytes.status();
    if (bytes->size() != c.getSize())
      return Status::error(ErrorCode::kMalformed, std::string(phase) + " chunk at 0x" +
                                                      hex(c.getAddress()) + ": blob size differs");
    if (runs.empty() || runs.back().address + runs.back().bytes.size() != c.getAddress())
      runs.push_back(Run{c.getAddress(), {}});
    runs.back().bytes.insert(runs.back().bytes.end(), bytes->begin(), bytes->end());
  }
  return runs;
}

Status emit_records(format::Reader& extracted, const std::string& dir) {
  namespace fs = std::filesystem;
  if (!extracted.header().hasExtract())
    return Status::error(ErrorCode::kInvalidArgument,
                         extracted.path() + " is not an extracted capture (cusnap extract)");
  // Collect the records of the extracted capture (docs/format.md, "CaptureHeader.extract").
  std::optional<format::CallRef> module, function, launch, before, after;
  std::vector<format::CallRef> globals, allocations;
  Status scan = extracted.for_each_call([&](const format::CallRef& ref) {
    auto rec = ref.get();
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
      case schema::CallRecord::MEMORY_SNAPSHOT:
        take(rec.getMemorySnapshot().getPhase() == schema::MemorySnapshot::Phase::BEFORE_LAUNCH
                 ? before
                 : after);
        break;
      default:
        break;
    }
    return true;
  });
  if (!scan) return scan;
  if (!module || !function || !launch || !before || !after)
    return Status::error(ErrorCode::kMalformed, extracted.path() +
                                                    ": an extracted capture needs a moduleLoad, a "
                                                    "functionGet, a launch and both snapshots");
  auto l = launch->get().getLaunch();
  if (l.getViaExtra() || l.getCooperative() || l.getAttributes().size() != 0)
    return Status::error(ErrorCode::kInvalidArgument,
                         "the reproducer supports plain cuLaunchKernel launches only (this one "
                         "uses extra, cooperative launch or launch attributes)");
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
    << "# Extracted from " << std::string(extracted.header().getExtract().getSourcePath())
    << ", call " << extracted.header().getExtract().getLaunchSeq() << ".\n"
    << "kernel " << kernel << "\nmodule module.bin\nparams params.bin\n"
    << "grid " << l.getGridX() << ' ' << l.getGridY() << ' ' << l.getGridZ() << '\n'
    << "block " << l.getBlockX() << ' ' << l.getBlockY() << ' ' << l.getBlockZ() << '\n'
    << "shared " << l.getSharedBytes() << '\n';
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
                        phase == 0 ? "beforeLaunch" : "afterLaunch");
    if (!runs) return runs.status();
    for (size_t i = 0; i < runs->size(); ++i) {
      const Run& run = (*runs)[i];
      std::string file = std::string(name) + "_" + std::to_string(i) + ".bin";
      st = write_file(d / file, run.bytes.data(), run.bytes.size());
      if (!st) return st;
      m << name << ' ' << hex(run.address) << ' ' << run.bytes.size() << ' ' << file << '\n';
    }
  }
  st = write_text(d / "manifest.txt", m.str());
  if (!st) return st;
  std::ostringstream readme;
  readme << "# Reproducer: one launch of `" << kernel << "`\n\n"
         << "Written by `cusnap extract --emit-cpp` from `"
         << std::string(extracted.header().getExtract().getSourcePath()) << "` (call "
         << extracted.header().getExtract().getLaunchSeq()
         << "). Needs only the CUDA toolkit (CMake finds it with `find_package(CUDAToolkit)`).\n\n"
         << "```\ncmake -S . -B build && cmake --build build\n./build/reproducer .\n```\n\n"
         << "It prints `MATCH` and exits 0 when the kernel leaves memory exactly as it did when "
            "captured, or `MISMATCH at 0x...` and exits 1; 2 means a driver call failed. "
            "`main.cpp` says what it does step by step; `manifest.txt` lists the launch "
            "configuration, the memory ranges (reserved at their captured addresses) and the "
            "data files (`input_*.bin` before the launch, `expected_*.bin` after it).\n";
  return write_text(d / "README.md", readme.str());
}

}  // namespace

Status emit_cpp(format::Reader& extracted, const std::string& dir) {
  return detail::unreadable_as_error([&] { return emit_records(extracted, dir); });
}

}  // namespace cusnap::extract

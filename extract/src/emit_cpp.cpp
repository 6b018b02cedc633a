// --emit-cpp: an extracted capture as a directory a driver or compiler engineer can build with
// nothing but the CUDA toolkit. The program (templates/reproducer_main.cpp, embedded at build time
// as kMainCpp) reads manifest.txt, written
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
#include "reproducer_main_cpp.inc"  // generated from extract/templates/reproducer_main.cpp
#include "unreadable.h"
#include "xxh3_128_h.inc"  // generated from extract/templates/xxh3_128.h (CMakeLists.txt)

namespace cusnap::extract {

namespace schema = format::schema;
using format::ErrorCode;
using format::Status;
using format::to_blob;

namespace {

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

#include "replayer/plan.h"

#include <kj/exception.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <set>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "cusnap/format/kernel_filter_summary.h"
#include "cusnap/format/record_sizes.h"
#include "replayer/plan_builder.h"

namespace cusnap::replayer::plan_detail {
namespace {

using Which = schema::CallRecord::Which;

// CUlaunchAttributeID values (cuda.h) the target check cares about; plan.cpp stays CUDA-free.
constexpr uint32_t kAttributeCooperative = 2;
constexpr uint32_t kAttributeClusterDimension = 4;
constexpr size_t kLaunchAttributeValueBytes = 64;  // sizeof(CUlaunchAttributeValue)
constexpr uint64_t kPerThreadStream = 0x2;         // CU_STREAM_PER_THREAD

// Generic records for these calls may change device state the replay cannot reproduce.
// Graph calls taking CUgraphNodeParams, which the interceptor records only by name: replaying a
// graph without what they did is replaying another graph.
bool builds_unrecorded_graph_node(const std::string& api) {
  static const char* const kApis[] = {"cuGraphAddNode", "cuGraphAddNode_v2", "cuGraphNodeSetParams",
                                      "cuGraphExecNodeSetParams", "cuGraphConditionalHandleCreate"};
  for (const char* name : kApis) {
    if (api == name) return true;
  }
  return false;
}

bool may_change_device_state(const std::string& api) {
  // A reference's getters return what its (typed) setters set.
  if (api.rfind("cuTexRefGet", 0) == 0 || api.rfind("cuSurfRefGet", 0) == 0) return false;
  static const char* const kPrefixes[] = {"cuGraph",
                                          "cuMemcpy",
                                          "cuMemset",
                                          "cuLaunch",
                                          "cuArray",
                                          "cuTex",
                                          "cuSurf",
                                          "cuMipmapped",
                                          "cuStreamBeginCapture",
                                          "cuMemPrefetch",
                                          "cuExternal",
                                          "cuIpc",
                                          "cuMemPoolExport",
                                          "cuMemPoolImport",
                                          "cuMemAdvise",
                                          "cuStreamWriteValue",
                                          "cuStreamBatchMemOp",
                                          "cuModuleLoad",
                                          "cuLibraryLoad",
                                          "cuLink"};
  for (const char* prefix : kPrefixes) {
    if (api.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

}  // namespace

// Asynchronous copies complete after their record is written: the interceptor records what it
// learns in stream order about the copy with seq `related` — the checksum of the bytes the
// application received, or the bytes a pinned source really held when the copy ran. Schema 2
// writes a deferredResult record; schema-1 captures carried the same facts as tool-event text
// ("deferred hostChecksum=<16 hex>", "deferred payload=<32 hex>"), parsed by
// parse_legacy_deferred() into the same form.
MaybeError PlanBuilder::apply_deferred(uint64_t seq, const char* record, uint64_t related,
                                       std::optional<uint64_t> checksum,
                                       std::optional<format::BlobId> payload) {
  auto it = copies_.find(related);
  if (it == copies_.end()) return std::nullopt;  // the copy was not replayable (or failed)
  auto* copy = std::get_if<CopyOp>(&plan_.actions[it->second].op);
  if (copy == nullptr) return std::nullopt;
  if (checksum && copy->direction == CopyDirection::kDeviceToHost && !copy->has_checksum) {
    copy->has_checksum = true;
    copy->checksum = *checksum;
    ++plan_.verifiable_copies;
  }
  if (payload && !payload->is_null() && copy->direction == CopyDirection::kHostToDevice) {
    if (auto e = check_blob(seq, record, *payload, copy->size)) return e;
    copy->payload = *payload;
  }
  return std::nullopt;
}

MaybeError PlanBuilder::parse_legacy_deferred(uint64_t seq, uint64_t related,
                                              std::string_view message) {
  constexpr std::string_view kChecksum = "deferred hostChecksum=";
  constexpr std::string_view kPayload = "deferred payload=";
  if (message.substr(0, kChecksum.size()) == kChecksum) {
    std::string_view digits = message.substr(kChecksum.size(), 16);
    uint64_t value = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value, 16);
    if (ec != std::errc() || end != digits.data() + digits.size() || digits.size() != 16) {
      return capture_error(seq, "toolEvent", "malformed deferred checksum");
    }
    return apply_deferred(seq, "toolEvent", related, value, std::nullopt);
  }
  if (message.substr(0, kPayload.size()) == kPayload) {
    auto id = format::BlobId::from_hex(message.substr(kPayload.size(), 32));
    if (!id) return capture_error(seq, "toolEvent", "malformed deferred payload id");
    return apply_deferred(seq, "toolEvent", related, std::nullopt, *id);
  }
  return std::nullopt;
}

MaybeError PlanBuilder::add_range(uint64_t seq, const char* record, uint64_t address,
                                  uint64_t size) {
  if (size == 0) return std::nullopt;
  if (address == 0 || size > kMaxRangeBytes || add_overflows(address, size)) {
    return capture_error(seq, record, "device range out of limits").with_address(address);
  }
  if (raw_ranges_.size() >= kMaxMemoryRanges) {
    return capture_error(seq, record,
                         "more than " + std::to_string(kMaxMemoryRanges) + " device allocations");
  }
  raw_ranges_.push_back({address, size});
  return std::nullopt;
}

bool PlanBuilder::in_device_memory(uint64_t address) const {
  for (const MemoryRange& r : raw_ranges_) {
    if (address >= r.base && address < r.end()) return true;
  }
  return false;
}

MaybeError PlanBuilder::check_blob(uint64_t seq, const char* record, const format::BlobId& id,
                                   uint64_t size) {
  const format::BlobInfo* info = reader_.find_blob(id);
  if (info == nullptr)
    return capture_error(seq, record, "blob " + id.to_hex() + " is not in the capture");
  if (info->size != size) {
    return capture_error(seq, record,
                         "blob " + id.to_hex() + " holds " + std::to_string(info->size) +
                             " bytes, the call " + std::to_string(size));
  }
  return std::nullopt;
}

MaybeError PlanBuilder::add_module_load(uint64_t seq, schema::ModuleLoad::Reader r) {
  ModuleLoadOp op;
  op.handle = r.getHandle();
  op.is_library = r.getIsLibrary();
  op.path = r.getPath();
  switch (r.getKind()) {
    case schema::ModuleLoad::ImageKind::PTX:
      op.kind = ImageKind::kPtx;
      break;
    case schema::ModuleLoad::ImageKind::CUBIN:
      op.kind = ImageKind::kCubin;
      break;
    case schema::ModuleLoad::ImageKind::FATBIN:
      op.kind = ImageKind::kFatbin;
      break;
    case schema::ModuleLoad::ImageKind::FATBIN_WRAPPER:
      op.kind = ImageKind::kFatbinWrapper;
      break;
    case schema::ModuleLoad::ImageKind::FILE:
      op.kind = ImageKind::kFile;
      break;
    default:
      op.kind = ImageKind::kUnknown;
      break;
  }
  if (op.handle == 0) return capture_error(seq, "moduleLoad", "module load without a handle");
  if (!r.hasImage() || to_blob(r.getImage()).is_null()) {
    return capture_error(seq, "moduleLoad", "the code image was not captured")
        .with_handle(op.handle);
  }
  op.image = to_blob(r.getImage());
  op.image_size = r.getImageSize();
  if (auto e = check_blob(seq, "moduleLoad", op.image, op.image_size))
    return e->with_handle(op.handle);
  push(seq, std::move(op));
  return std::nullopt;
}

MaybeError PlanBuilder::add_mem_alloc(uint64_t seq, schema::MemAlloc::Reader r) {
  using Kind = schema::MemAlloc::Kind;
  uint64_t size = r.getSize();
  const char* name = "device";
  switch (r.getKind()) {
    case Kind::DEVICE:
      break;
    case Kind::PITCH:
      name = "pitch";
      if (size == 0) {
        if (r.getHeight() != 0 && r.getPitch() > kMaxRangeBytes / r.getHeight()) {
          return capture_error(seq, "memAlloc", "pitched allocation out of limits");
        }
        size = r.getPitch() * r.getHeight();
      }
      break;
    case Kind::ASYNC:
      name = "async";
      break;
    case Kind::FROM_POOL:
      name = "fromPool";
      break;
    case Kind::MANAGED:
      name = "managed";
      warn_once("managed", seq,
                "managed memory: host writes to it are invisible to the capture, replayed contents "
                "may differ");
      break;
    case Kind::VMM_RESERVE:
      name = "vmmReserve";
      break;
    case Kind::HOST_ALLOC:
    case Kind::HOST:
    case Kind::HOST_REGISTER: {
      if (r.getAddress() != 0 && r.getSize() != 0 && r.getSize() <= kMaxRangeBytes) {
        host_allocations_[r.getAddress()] = r.getSize();
      }
      HostAllocOp op;
      op.kind = r.getKind() == Kind::HOST         ? "host"
                : r.getKind() == Kind::HOST_ALLOC ? "hostAlloc"
                                                  : "hostRegister";
      op.host = r.getHostPointer() != 0 ? r.getHostPointer() : r.getAddress();
      op.size = r.getSize();
      op.flags = static_cast<uint32_t>(r.getFlags());
      // Schema 4 records the device address; before it, unified addressing: the host pointer
      // (hostAlloc with DEVICEMAP put its device address in `address`).
      op.device = r.getDevicePointer() != 0 ? r.getDevicePointer() : r.getAddress();
      if (op.host == 0 || op.device == 0 || op.size == 0 || op.size > kMaxRangeBytes ||
          add_overflows(op.host, op.size) || add_overflows(op.device, op.size)) {
        skip("memAlloc (host)");
        return std::nullopt;
      }
      // Kernels can reach it; what the application wrote into it directly (not by a copy) was
      // never captured, so the replay's copy starts zeroed (an extract restores its snapshot).
      if (!plan_.extract)
        warn_once("hostmap", seq,
                  "host memory kernels can reach is recreated zeroed: what the application wrote "
                  "into it directly (not through a copy) was not captured, kernels reading it may "
                  "see other data");
      push(seq, std::move(op));
      return std::nullopt;
    }
    default:  // vmmCreate / vmmMap / vmmSetAccess: the reservation covers the range
      skip("memAlloc (vmm physical)");
      return std::nullopt;
  }
  if (auto e = add_range(seq, "memAlloc", r.getAddress(), size)) return e;
  if (size != 0) live_allocations_[r.getAddress()] = size;
  push(seq, AllocOp{r.getAddress(), size, name});
  return std::nullopt;
}

MaybeError PlanBuilder::add_memcpy(uint64_t seq, schema::Memcpy::Reader r) {
  using Kind = schema::Memcpy::Kind;
  CopyOp op;
  op.async = r.getAsync();
  op.stream = r.getStream();
  op.size = r.getSize();
  op.dimensions = r.getDimensions() == 0 ? 1 : r.getDimensions();
  uint64_t dst = r.getDst();
  uint64_t src = r.getSrc();
  switch (r.getKind()) {
    case Kind::HOST_TO_DEVICE:
      op.direction = CopyDirection::kHostToDevice;
      break;
    case Kind::DEVICE_TO_HOST:
      op.direction = CopyDirection::kDeviceToHost;
      break;
    case Kind::DEVICE_TO_DEVICE:
    case Kind::PEER:
      op.direction = CopyDirection::kDeviceToDevice;
      break;
    case Kind::UNIFIED: {
      bool dst_device = in_device_memory(dst);
      bool src_device = in_device_memory(src);
      if (dst_device && src_device)
        op.direction = CopyDirection::kDeviceToDevice;
      else if (dst_device)
        op.direction = CopyDirection::kHostToDevice;
      else if (src_device)
        op.direction = CopyDirection::kDeviceToHost;
      else {
        skip("memcpy (host to host)");
        return std::nullopt;
      }
      break;
    }
    case Kind::HOST_TO_HOST:
      skip("memcpy (host to host)");
      return std::nullopt;
    case Kind::ARRAY_INVOLVED:
      if (auto e = add_array_endpoints(seq, r, op)) return e;
      break;
    default:
      skip("memcpy (unknown kind)");
      return std::nullopt;
  }
  // The copy's shape is format's rule (format/record_sizes.h), the one verify checks too.
  auto shape = format::copy_shape(r);
  if (!shape) return capture_error(seq, "memcpy", shape.status().message());
  const format::CopyShape& g = shape.value();
  if (op.dimensions > 1) {
    op.width = g.width;
    op.height = g.height;
    op.depth = g.depth;
    op.src_pitch = g.src_pitch;
    op.dst_pitch = g.dst_pitch;
    op.src_height = g.src_height;
    op.dst_height = g.dst_height;
    // Fold the x/y offsets into the device addresses; the host side is always packed. An
    // array side keeps its offsets (add_array_endpoints) and has no pitch.
    if (op.dst_array == 0) dst += g.dst_offset;
    if (op.src_array == 0) src += g.src_offset;
    op.size = g.bytes;
    if (op.direction != CopyDirection::kDeviceToHost && op.dst_array == 0 &&
        op.dst_pitch < op.width) {
      return capture_error(seq, "memcpy", "2D copy with a destination pitch below its width");
    }
    if (op.direction != CopyDirection::kHostToDevice && op.src_array == 0 &&
        op.src_pitch < op.width) {
      return capture_error(seq, "memcpy", "2D copy with a source pitch below its width");
    }
  } else {
    op.width = op.size;
  }
  if (op.size > kMaxRangeBytes) return capture_error(seq, "memcpy", "copy size out of limits");
  op.dst = dst;
  op.src = src;
  if (op.size == 0) {
    skip("memcpy (empty)");
    return std::nullopt;
  }
  if (op.direction == CopyDirection::kHostToDevice) {
    op.payload = r.hasPayload() ? to_blob(r.getPayload()) : format::BlobId{};
    if (op.payload.is_null()) {
      warn_once("nopayload", seq,
                "host-to-device copies without captured bytes (dropped at capture): device "
                "contents will differ");
      skip("memcpy (payload missing)");
      return std::nullopt;
    }
    if (auto e = check_blob(seq, "memcpy", op.payload, op.size)) return e;
  } else if (op.direction == CopyDirection::kDeviceToHost) {
    op.has_checksum = r.getHasHostChecksum();
    op.checksum = r.getHostChecksum();
    if (op.has_checksum) ++plan_.verifiable_copies;
  }
  if (node_target_ == nullptr) copies_[seq] = plan_.actions.size();
  push(seq, std::move(op));
  return std::nullopt;
}

// A copy with a CUDA array endpoint (schema 6 records them with their payload and checksum;
// older writers gave neither, so their host-to-array copies are skipped for lack of bytes).
MaybeError PlanBuilder::add_array_endpoints(uint64_t seq, schema::Memcpy::Reader r, CopyOp& op) {
  constexpr int32_t kHost = 1, kDevice = 2, kArray = 3, kUnified = 4;  // CUmemorytype
  using Api = schema::CopyGeometry::ArrayApi;
  auto g = r.getGeometry();
  int32_t src_type = g.getSrcMemoryType(), dst_type = g.getDstMemoryType();
  bool src_array = src_type == kArray, dst_array = dst_type == kArray;
  if ((src_array && g.getSrcArray() == 0) || (dst_array && g.getDstArray() == 0) ||
      (!src_array && !dst_array)) {
    return capture_error(seq, "memcpy", "array copy without its array handle");
  }
  auto host = [&](int32_t type, uint64_t address) {
    return type == kHost || (type == kUnified && !in_device_memory(address));
  };
  for (int32_t type : {src_type, dst_type}) {
    if (type != kHost && type != kDevice && type != kArray && type != kUnified) {
      return capture_error(seq, "memcpy", "array copy with memory type " + std::to_string(type));
    }
  }
  bool src_host = host(src_type, r.getSrc()), dst_host = host(dst_type, r.getDst());
  op.direction = src_host   ? CopyDirection::kHostToDevice
                 : dst_host ? CopyDirection::kDeviceToHost
                            : CopyDirection::kDeviceToDevice;
  if (src_array) {
    op.src_array = g.getSrcArray();
    op.src_offset = {g.getSrcXInBytes(), g.getSrcY(), g.getSrcZ()};
  }
  if (dst_array) {
    op.dst_array = g.getDstArray();
    op.dst_offset = {g.getDstXInBytes(), g.getDstY(), g.getDstZ()};
  }
  if (op.dimensions > 1) return std::nullopt;
  switch (g.getArrayApi()) {
    case Api::HOST_TO_ARRAY:
      op.array_api = ArrayCopyApi::kHtoA;
      break;
    case Api::ARRAY_TO_HOST:
      op.array_api = ArrayCopyApi::kAtoH;
      break;
    case Api::DEVICE_TO_ARRAY:
      op.array_api = ArrayCopyApi::kDtoA;
      break;
    case Api::ARRAY_TO_DEVICE:
      op.array_api = ArrayCopyApi::kAtoD;
      break;
    case Api::ARRAY_TO_ARRAY:
      op.array_api = ArrayCopyApi::kAtoA;
      break;
    default:
      return capture_error(seq, "memcpy", "1-D array copy that names no array copy call");
  }
  // The call's shape must agree with its sides (which one is the array, which the host).
  bool agrees = false;
  switch (op.array_api) {
    case ArrayCopyApi::kHtoA:
      agrees = dst_array && src_host;
      break;
    case ArrayCopyApi::kAtoH:
      agrees = src_array && dst_host;
      break;
    case ArrayCopyApi::kDtoA:
      agrees = dst_array && !src_array && !src_host;
      break;
    case ArrayCopyApi::kAtoD:
      agrees = src_array && !dst_array && !dst_host;
      break;
    case ArrayCopyApi::kAtoA:
      agrees = src_array && dst_array;
      break;
    case ArrayCopyApi::kNone:
      break;
  }
  if (!agrees) return capture_error(seq, "memcpy", "1-D array copy whose sides disagree");
  return std::nullopt;
}

MaybeError PlanBuilder::add_array(uint64_t seq, schema::ArrayCall::Reader r) {
  using Op = schema::ArrayCall::Op;
  ArrayOp op;
  op.array = r.getArray();
  op.mipmapped = r.getMipmapped();
  op.format = r.getFormat();
  op.channels = r.getChannels();
  op.width = r.getWidth();
  op.height = r.getHeight();
  op.depth = r.getDepth();
  op.flags = r.getFlags();
  op.levels = r.getLevels();
  op.level = r.getLevel();
  switch (r.getOp()) {
    case Op::CREATE:
      op.kind = ArrayOp::Kind::kCreate;
      break;
    case Op::CREATE3D:
      op.kind = ArrayOp::Kind::kCreate3d;
      break;
    case Op::DESTROY:
      op.kind = ArrayOp::Kind::kDestroy;
      break;
    case Op::MIPMAPPED_CREATE:
      op.kind = ArrayOp::Kind::kMipmappedCreate;
      break;
    case Op::MIPMAPPED_GET_LEVEL:
      op.kind = ArrayOp::Kind::kMipmappedGetLevel;
      break;
    case Op::MIPMAPPED_DESTROY:
      op.kind = ArrayOp::Kind::kMipmappedDestroy;
      break;
    default:
      skip("array (unknown op)");
      return std::nullopt;
  }
  bool creates = op.kind == ArrayOp::Kind::kCreate || op.kind == ArrayOp::Kind::kCreate3d ||
                 op.kind == ArrayOp::Kind::kMipmappedCreate;
  if (creates) {
    // An array's bytes stay below the copy limit: a forged descriptor must not make the replay
    // ask the driver for an absurd array.
    constexpr uint64_t kMaxExtent = uint64_t{1} << 24;
    if (op.width > kMaxExtent || op.height > kMaxExtent || op.depth > kMaxExtent ||
        op.channels > 4 || op.levels > 32) {
      return capture_error(seq, "array", "array descriptor out of limits");
    }
  }
  bool names_array = op.kind == ArrayOp::Kind::kCreate || op.kind == ArrayOp::Kind::kCreate3d ||
                     op.kind == ArrayOp::Kind::kMipmappedGetLevel;
  if ((names_array && op.array == 0) ||
      (!names_array && op.kind != ArrayOp::Kind::kDestroy && op.mipmapped == 0)) {
    return capture_error(seq, "array", "array record without its handle");
  }
  push(seq, op);
  return std::nullopt;
}

MaybeError PlanBuilder::add_tex_object(uint64_t seq, schema::TexObjectCall::Reader r) {
  using Op = schema::TexObjectCall::Op;
  TexObjectOp op;
  op.object = r.getObject();
  switch (r.getOp()) {
    case Op::TEXTURE_CREATE:
      op.kind = TexObjectOp::Kind::kTextureCreate;
      break;
    case Op::TEXTURE_DESTROY:
      op.kind = TexObjectOp::Kind::kTextureDestroy;
      break;
    case Op::SURFACE_CREATE:
      op.kind = TexObjectOp::Kind::kSurfaceCreate;
      break;
    case Op::SURFACE_DESTROY:
      op.kind = TexObjectOp::Kind::kSurfaceDestroy;
      break;
    default:
      skip("texObject (unknown op)");
      return std::nullopt;
  }
  if (op.object == 0) return capture_error(seq, "texObject", "object record without its handle");
  auto res = r.getResource();
  op.resource.type = res.getType();
  op.resource.array = res.getArray();
  op.resource.mipmapped = res.getMipmapped();
  op.resource.device_pointer = res.getDevicePointer();
  op.resource.format = res.getFormat();
  op.resource.channels = res.getChannels();
  op.resource.size_in_bytes = res.getSizeInBytes();
  op.resource.width = res.getWidth();
  op.resource.height = res.getHeight();
  op.resource.pitch_in_bytes = res.getPitchInBytes();
  op.resource.flags = res.getFlags();
  auto tex = r.getTexture();
  auto modes = tex.getAddressMode();
  for (unsigned i = 0; i < 3 && i < modes.size(); ++i) op.texture.address_mode[i] = modes[i];
  op.texture.filter_mode = tex.getFilterMode();
  op.texture.flags = tex.getFlags();
  op.texture.max_anisotropy = tex.getMaxAnisotropy();
  op.texture.mipmap_filter_mode = tex.getMipmapFilterMode();
  op.texture.mipmap_level_bias = tex.getMipmapLevelBias();
  op.texture.min_mipmap_level_clamp = tex.getMinMipmapLevelClamp();
  op.texture.max_mipmap_level_clamp = tex.getMaxMipmapLevelClamp();
  auto border = tex.getBorderColor();
  for (unsigned i = 0; i < 4 && i < border.size(); ++i) op.texture.border_color[i] = border[i];
  op.has_view = r.getHasView();
  auto v = r.getView();
  op.view.format = v.getFormat();
  op.view.width = v.getWidth();
  op.view.height = v.getHeight();
  op.view.depth = v.getDepth();
  op.view.first_mipmap_level = v.getFirstMipmapLevel();
  op.view.last_mipmap_level = v.getLastMipmapLevel();
  op.view.first_layer = v.getFirstLayer();
  op.view.last_layer = v.getLastLayer();
  push(seq, op);
  return std::nullopt;
}

MaybeError PlanBuilder::add_tensor_map(uint64_t seq, schema::TensorMapCall::Reader r) {
  using Op = schema::TensorMapCall::Op;
  TensorMapOp op;
  switch (r.getOp()) {
    case Op::ENCODE_TILED:
      op.kind = TensorMapOp::Kind::kEncodeTiled;
      break;
    case Op::ENCODE_IM2COL:
      op.kind = TensorMapOp::Kind::kEncodeIm2col;
      break;
    case Op::ENCODE_IM2COL_WIDE:
      op.kind = TensorMapOp::Kind::kEncodeIm2colWide;
      break;
    case Op::REPLACE_ADDRESS:
      op.kind = TensorMapOp::Kind::kReplaceAddress;
      break;
    default:
      skip("tensorMap (unknown op)");
      return std::nullopt;
  }
  auto bytes = [&](capnp::Data::Reader d, std::array<uint8_t, 128>& out,
                   const char* what) -> MaybeError {
    if (d.size() != out.size())
      return capture_error(seq, "tensorMap",
                           std::string(what) + " holds " + std::to_string(d.size()) +
                               " bytes; a CUtensorMap is 128");
    std::memcpy(out.data(), d.begin(), out.size());
    return std::nullopt;
  };
  if (auto e = bytes(r.getEncoded(), op.encoded, "encoded")) return e;
  op.global_address = r.getGlobalAddress();
  if (op.kind == TensorMapOp::Kind::kReplaceAddress) {
    if (auto e = bytes(r.getPrevious(), op.previous, "previous")) return e;
    push(seq, op);
    return std::nullopt;
  }
  op.rank = r.getRank();
  if (op.rank == 0 || op.rank > op.global_dim.size())
    return capture_error(seq, "tensorMap", "rank " + std::to_string(op.rank) + " is not 1 to 5");
  // Each list has the length the encoder reads (cuda.h); a shorter one is a damaged record.
  auto copy = [&](auto list, auto& out, size_t n, const char* what) -> MaybeError {
    if (list.size() != n)
      return capture_error(seq, "tensorMap",
                           std::string(what) + " has " + std::to_string(list.size()) +
                               " values; rank " + std::to_string(op.rank) + " needs " +
                               std::to_string(n));
    for (size_t i = 0; i < n; ++i) out[i] = list[static_cast<unsigned>(i)];
    return std::nullopt;
  };
  if (auto e = copy(r.getGlobalDim(), op.global_dim, op.rank, "globalDim")) return e;
  if (auto e = copy(r.getGlobalStrides(), op.global_strides, op.rank - 1, "globalStrides"))
    return e;
  if (auto e = copy(r.getElementStrides(), op.element_strides, op.rank, "elementStrides")) return e;
  switch (op.kind) {
    case TensorMapOp::Kind::kEncodeTiled:
      if (auto e = copy(r.getBoxDim(), op.box_dim, op.rank, "boxDim")) return e;
      break;
    case TensorMapOp::Kind::kEncodeIm2col:
      if (op.rank < 3) return capture_error(seq, "tensorMap", "an im2col map of rank below 3");
      if (auto e =
              copy(r.getPixelBoxLowerCorner(), op.lower_corner, op.rank - 2, "pixelBoxLowerCorner"))
        return e;
      if (auto e =
              copy(r.getPixelBoxUpperCorner(), op.upper_corner, op.rank - 2, "pixelBoxUpperCorner"))
        return e;
      break;
    default:
      if (auto e = copy(r.getPixelBoxLowerCorner(), op.lower_corner, 1, "pixelBoxLowerCorner"))
        return e;
      if (auto e = copy(r.getPixelBoxUpperCorner(), op.upper_corner, 1, "pixelBoxUpperCorner"))
        return e;
      break;
  }
  op.data_type = r.getDataType();
  op.interleave = r.getInterleave();
  op.swizzle = r.getSwizzle();
  op.l2_promotion = r.getL2Promotion();
  op.oob_fill = r.getOobFill();
  op.channels_per_pixel = r.getChannelsPerPixel();
  op.pixels_per_column = r.getPixelsPerColumn();
  op.wide_mode = r.getWideMode();
  push(seq, op);
  return std::nullopt;
}

MaybeError PlanBuilder::add_tex_ref(uint64_t seq, schema::TexRefCall::Reader r) {
  using Op = schema::TexRefCall::Op;
  using Kind = TexRefOp::Kind;
  TexRefOp op;
  switch (r.getOp()) {
    case Op::GET_TEX_REF:
      op.kind = Kind::kGetTexRef;
      break;
    case Op::GET_SURF_REF:
      op.kind = Kind::kGetSurfRef;
      break;
    case Op::CREATE:
      op.kind = Kind::kCreate;
      break;
    case Op::DESTROY:
      op.kind = Kind::kDestroy;
      break;
    case Op::SET_ARRAY:
      op.kind = Kind::kSetArray;
      break;
    case Op::SET_MIPMAPPED_ARRAY:
      op.kind = Kind::kSetMipmappedArray;
      break;
    case Op::SET_ADDRESS:
      op.kind = Kind::kSetAddress;
      break;
    case Op::SET_ADDRESS2D:
      op.kind = Kind::kSetAddress2d;
      break;
    case Op::SET_FORMAT:
      op.kind = Kind::kSetFormat;
      break;
    case Op::SET_ADDRESS_MODE:
      op.kind = Kind::kSetAddressMode;
      break;
    case Op::SET_FILTER_MODE:
      op.kind = Kind::kSetFilterMode;
      break;
    case Op::SET_MIPMAP_FILTER_MODE:
      op.kind = Kind::kSetMipmapFilterMode;
      break;
    case Op::SET_MIPMAP_LEVEL_BIAS:
      op.kind = Kind::kSetMipmapLevelBias;
      break;
    case Op::SET_MIPMAP_LEVEL_CLAMP:
      op.kind = Kind::kSetMipmapLevelClamp;
      break;
    case Op::SET_MAX_ANISOTROPY:
      op.kind = Kind::kSetMaxAnisotropy;
      break;
    case Op::SET_BORDER_COLOR:
      op.kind = Kind::kSetBorderColor;
      break;
    case Op::SET_FLAGS:
      op.kind = Kind::kSetFlags;
      break;
    case Op::SURF_SET_ARRAY:
      op.kind = Kind::kSurfSetArray;
      break;
    case Op::PARAM_SET_TEX_REF:
      op.kind = Kind::kParamSetTexRef;
      break;
    default:
      // A setter of a newer schema: the reference's state would be incomplete.
      return Error(ErrorKind::kUnsupported,
                   "texRef record of an operation this replay does not know")
          .at_call(seq)
          .in_record("texRef");
  }
  op.ref = r.getRef();
  op.module = r.getModule();
  op.name = r.getName();
  op.array = r.getArray();
  op.mipmapped = r.getMipmapped();
  op.flags = r.getFlags();
  op.address = r.getAddress();
  op.bytes = r.getBytes();
  op.byte_offset = r.getByteOffset();
  op.format = r.getFormat();
  op.channels = r.getChannels();
  op.width = r.getWidth();
  op.height = r.getHeight();
  op.pitch = r.getPitch();
  op.dim = r.getDim();
  op.mode = r.getMode();
  op.bias = r.getBias();
  op.min_clamp = r.getMinClamp();
  op.max_clamp = r.getMaxClamp();
  op.max_anisotropy = r.getMaxAnisotropy();
  auto border = r.getBorderColor();
  for (unsigned i = 0; i < 4 && i < border.size(); ++i) op.border_color[i] = border[i];
  op.function = r.getFunction();
  op.tex_unit = r.getTexUnit();
  if (op.ref == 0)
    return capture_error(seq, "texRef", "texture reference record without its handle");
  if ((op.kind == Kind::kGetTexRef || op.kind == Kind::kGetSurfRef) &&
      (op.module == 0 || op.name.empty())) {
    return capture_error(seq, "texRef", "reference look-up without its module and name");
  }
  if (op.kind == Kind::kSetAddress2d && (op.height != 0 && op.pitch > kMaxRangeBytes / op.height)) {
    return capture_error(seq, "texRef", "pitch 2D binding out of limits");
  }
  if (op.kind == Kind::kSetAddress && op.bytes > kMaxRangeBytes) {
    return capture_error(seq, "texRef", "linear binding out of limits");
  }
  push(seq, std::move(op));
  return std::nullopt;
}

MaybeError PlanBuilder::add_mem_pool(uint64_t seq, schema::MemPoolCall::Reader r) {
  using Op = schema::MemPoolCall::Op;
  using Kind = MemPoolOp::Kind;
  MemPoolOp op;
  switch (r.getOp()) {
    case Op::CREATE:
      op.kind = Kind::kCreate;
      break;
    case Op::DESTROY:
      op.kind = Kind::kDestroy;
      break;
    case Op::SET_ATTRIBUTE:
      op.kind = Kind::kSetAttribute;
      break;
    case Op::GET_ATTRIBUTE:
      op.kind = Kind::kGetAttribute;
      break;
    case Op::TRIM_TO:
      op.kind = Kind::kTrimTo;
      break;
    case Op::SET_ACCESS:
      op.kind = Kind::kSetAccess;
      break;
    case Op::DEVICE_SET_MEM_POOL:
      op.kind = Kind::kDeviceSetMemPool;
      break;
    case Op::DEVICE_GET_MEM_POOL:
      op.kind = Kind::kDeviceGetMemPool;
      break;
    case Op::DEVICE_GET_DEFAULT_MEM_POOL:
      op.kind = Kind::kDeviceGetDefaultMemPool;
      break;
    default:
      return Error(ErrorKind::kUnsupported,
                   "memPool record of an operation this replay does not know")
          .at_call(seq)
          .in_record("memPool");
  }
  op.pool = r.getPool();
  if (op.pool == 0) return capture_error(seq, "memPool", "memory pool record without its handle");
  op.allocation_type = r.getAllocationType();
  op.handle_types = r.getHandleTypes();
  op.location_type = r.getLocationType();
  op.location_id = r.getLocationId();
  op.max_size = r.getMaxSize();
  op.usage = r.getUsage();
  op.attribute = r.getAttribute();
  op.value = r.getValue();
  op.min_bytes_to_keep = r.getMinBytesToKeep();
  constexpr unsigned kMaxDescriptors = 1024;
  auto access = r.getAccessDescriptors();
  if (access.size() > kMaxDescriptors) {
    return capture_error(seq, "memPool", "more access descriptors than devices can have");
  }
  for (auto d : access) {
    op.access.push_back({d.getLocationType(), d.getLocationId(), d.getFlags()});
  }
  push(seq, std::move(op));
  return std::nullopt;
}

MaybeError PlanBuilder::add_memset(uint64_t seq, schema::Memset::Reader r) {
  MemsetOp op;
  op.address = r.getAddress();
  op.value = r.getValue();
  op.element_size = r.getElementSize();
  op.width = r.getWidth();
  op.height = std::max<uint64_t>(r.getHeight(), 1);
  op.pitch = r.getPitch();
  op.async = r.getAsync();
  op.stream = r.getStream();
  if (op.element_size != 1 && op.element_size != 2 && op.element_size != 4) {
    return capture_error(seq, "memset", "element size " + std::to_string(op.element_size));
  }
  uint64_t row = op.width * op.element_size;
  if (op.width > kMaxRangeBytes || op.height > kMaxRangeBytes || op.pitch > kMaxRangeBytes ||
      (op.height > 1 &&
       (op.pitch < row || op.height > kMaxRangeBytes / std::max<uint64_t>(op.pitch, 1)))) {
    return capture_error(seq, "memset", "memset geometry out of limits");
  }
  if (op.width == 0) {
    skip("memset (empty)");
    return std::nullopt;
  }
  push(seq, op);
  return std::nullopt;
}

MaybeError PlanBuilder::add_launch(uint64_t seq, schema::Launch::Reader r) {
  LaunchOp op;
  switch (r.getKind()) {
    case schema::Launch::Kind::LAUNCH_KERNEL:
      op.kind = LaunchOp::Kind::kLaunchKernel;
      break;
    case schema::Launch::Kind::LAUNCH_KERNEL_EX:
      op.kind = LaunchOp::Kind::kLaunchKernelEx;
      break;
    case schema::Launch::Kind::LAUNCH_COOPERATIVE_KERNEL:
      op.kind = LaunchOp::Kind::kCooperative;
      break;
    default:
      return Error(ErrorKind::kUnsupported, "multi-device cooperative launches are not replayed")
          .at_call(seq)
          .in_record("launch");
  }
  op.function = r.getFunction();
  op.grid = {r.getGridX(), r.getGridY(), r.getGridZ()};
  op.block = {r.getBlockX(), r.getBlockY(), r.getBlockZ()};
  op.shared_bytes = r.getSharedBytes();
  op.stream = r.getStream();
  op.via_extra = r.getViaExtra();
  op.cooperative = r.getCooperative() || op.kind == LaunchOp::Kind::kCooperative;
  op.ordinal = r.getOrdinal();
  op.kernel_name = r.getKernelName();
  for (uint32_t d : op.grid) {
    if (d == 0) return capture_error(seq, "launch", "grid dimension 0").with_handle(op.function);
  }
  for (uint32_t d : op.block) {
    if (d == 0) return capture_error(seq, "launch", "block dimension 0").with_handle(op.function);
  }
  auto params = r.getParams();
  if (params.size() > kMaxParamBytes) {
    return capture_error(seq, "launch",
                         "parameter block of " + std::to_string(params.size()) + " bytes");
  }
  op.params.assign(params.begin(), params.end());
  op.has_layout = r.hasLayout();
  // Slots inside the parameter bytes: format's rule (format/record_sizes.h), verify's too.
  if (format::Status st = format::check_param_layout(r); !st.is_ok())
    return capture_error(seq, "launch", st.message()).with_handle(op.function);
  for (auto slot : r.getLayout()) {
    if (op.layout.size() >= kMaxParamBytes)
      return capture_error(seq, "launch", "too many parameter slots");
    op.layout.push_back({slot.getOffset(), slot.getSize()});
  }
  if (!op.via_extra && !op.has_layout) {
    return Error(ErrorKind::kUnsupported,
                 "the parameters of this launch were not captured (no layout for '" +
                     op.kernel_name + "')")
        .at_call(seq)
        .in_record("launch")
        .with_handle(op.function);
  }
  auto attributes = r.getAttributes();
  if (attributes.size() > kMaxLaunchAttributes)
    return capture_error(seq, "launch", "too many launch attributes");
  for (auto a : attributes) {
    if (a.getValue().size() > kLaunchAttributeValueBytes) {
      return capture_error(seq, "launch",
                           "launch attribute value larger than CUlaunchAttributeValue");
    }
    LaunchAttributeOp attribute{a.getId(), {a.getValue().begin(), a.getValue().end()}};
    if (attribute.id == kAttributeClusterDimension) plan_.uses_cluster_launch = true;
    if (attribute.id == kAttributeCooperative) op.cooperative = true;
    op.attributes.push_back(std::move(attribute));
  }
  if (op.cooperative) plan_.uses_cooperative_launch = true;
  if (node_target_ == nullptr) {
    ++plan_.launch_count;
    launches_[seq] = plan_.actions.size();
  }
  push(seq, std::move(op));
  return std::nullopt;
}

MaybeError PlanBuilder::add(const format::CallRef& ref) {
  size_t before = plan_.actions.size();
  if (auto e = add_record(ref)) return e;
  // In a _ptsz / _ptds call, stream 0 is the calling thread's per-thread default stream.
  std::string_view api = ref.get().getApiName().cStr();
  bool per_thread = api.size() > 5 && (api.ends_with("_ptsz") || api.ends_with("_ptds"));
  if (per_thread && plan_.actions.size() > before) {
    std::visit(
        [](auto& op) {
          if constexpr (requires { op.stream; }) {
            if (op.stream == 0) op.stream = kPerThreadStream;
          }
        },
        plan_.actions.back().op);
  }
  return std::nullopt;
}

MaybeError PlanBuilder::add_record(const format::CallRef& ref) {
  auto record = ref.get();
  uint64_t seq = ref.seq();
  Which which = record.which();
  if (which == Which::TOOL_EVENT) {
    auto event = record.getToolEvent();
    auto kind = event.getKind();
    if (event.getHasRelatedSeq()) {
      auto text = event.getMessage();
      if (auto e = parse_legacy_deferred(seq, event.getRelatedSeq(),
                                         std::string_view(text.cStr(), text.size())))
        return e;
    }
    if (kind == schema::ToolEvent::Kind::INFO && plan_.kernel_filter) {
      auto text = event.getMessage();
      if (auto counts =
              format::parse_kernel_filter_summary(std::string_view(text.cStr(), text.size()))) {
        plan_.kernel_filter->counts = *counts;
      }
    }
    if (kind == schema::ToolEvent::Kind::CAPTURE_DISABLED ||
        kind == schema::ToolEvent::Kind::RECORDS_DROPPED ||
        kind == schema::ToolEvent::Kind::INTERNAL_ERROR) {
      plan_.warnings.push_back(
          {seq, std::string("capture tool event: ") + event.getMessage().cStr()});
    }
    skip("toolEvent");
    return std::nullopt;
  }
  if (which == Which::DEFERRED_RESULT && record.getDeferredResult().getGraphNode() != 0) {
    return add_graph_node_result(seq, record.getDeferredResult());
  }
  if (which == Which::DEFERRED_RESULT) {
    auto d = record.getDeferredResult();
    std::optional<uint64_t> checksum;
    if (d.getHasHostChecksum()) checksum = d.getHostChecksum();
    std::optional<format::BlobId> payload;
    if (d.hasPayload()) payload = to_blob(d.getPayload());
    if (auto e = apply_deferred(seq, "deferredResult", d.getCallSeq(), checksum, payload)) return e;
    if (d.hasMissing() && d.getMissing().size() > 0) {
      warn_once("deferred-missing", seq,
                std::string("a stream-ordered copy result was not observed at capture: ") +
                    d.getMissing().cStr());
    }
    skip("deferredResult");
    return std::nullopt;
  }
  if (record.getResult() != 0) {
    if (!plan_.recorded_error && is_sticky_error(record.getResult())) {
      RecordedError e;
      e.seq = seq;
      e.api = record.getApiName().cStr();
      e.result = record.getResult();
      for (auto it = plan_.actions.rbegin(); it != plan_.actions.rend(); ++it) {
        if (std::holds_alternative<LaunchOp>(it->op)) {
          e.last_launch_seq = it->seq;
          break;
        }
      }
      plan_.recorded_error = e;
    }
    skip("failed calls");
    return std::nullopt;
  }
  // After a sticky error every call of the context fails; one that did not (a new context, a
  // reset device) cannot be replayed in the dead one.
  if (plan_.recorded_error) {
    ++plan_.recorded_error->later_successful_calls;
    skip("calls after the recorded sticky error");
    return std::nullopt;
  }
  switch (which) {
    case Which::MODULE_LOAD:
      return add_module_load(seq, record.getModuleLoad());
    case Which::MODULE_UNLOAD: {
      auto r = record.getModuleUnload();
      push(seq, ModuleUnloadOp{r.getHandle(), r.getIsLibrary()});
      return std::nullopt;
    }
    case Which::FUNCTION_GET: {
      auto r = record.getFunctionGet();
      FunctionGetOp op;
      switch (r.getKind()) {
        case schema::FunctionGet::Kind::MODULE_FUNCTION:
          op.kind = FunctionGetOp::Kind::kModuleFunction;
          break;
        case schema::FunctionGet::Kind::LIBRARY_KERNEL:
          op.kind = FunctionGetOp::Kind::kLibraryKernel;
          break;
        case schema::FunctionGet::Kind::KERNEL_GET_FUNCTION:
          op.kind = FunctionGetOp::Kind::kKernelGetFunction;
          break;
        default:
          op.kind = FunctionGetOp::Kind::kEnumerated;
          break;
      }
      op.module = r.getModule();
      op.handle = r.getHandle();
      op.kernel = r.getKernel();
      op.name = r.getName();
      if (op.handle == 0) {
        skip("functionGet (no handle)");
        return std::nullopt;
      }
      push(seq, std::move(op));
      return std::nullopt;
    }
    case Which::GLOBAL_GET: {
      auto r = record.getGlobalGet();
      if (r.getSize() > kMaxRangeBytes || add_overflows(r.getAddress(), r.getSize())) {
        return capture_error(seq, "globalGet", "global out of limits").with_address(r.getAddress());
      }
      if (r.getAddress() != 0 && r.getSize() != 0) globals_[r.getAddress()] = r.getSize();
      push(seq, GlobalGetOp{r.getModule(), r.getIsLibrary(), r.getName(), r.getAddress(),
                            r.getSize(), r.getByTool()});
      return std::nullopt;
    }
    case Which::FUNCTION_SET_ATTRIBUTE: {
      auto r = record.getFunctionSetAttribute();
      push(seq, FunctionAttributeOp{r.getFunction(), r.getIsKernel(), r.getAttribute(),
                                    r.getValue(), r.getDevice()});
      return std::nullopt;
    }
    case Which::MEM_ALLOC:
      return add_mem_alloc(seq, record.getMemAlloc());
    case Which::MEM_FREE: {
      auto r = record.getMemFree();
      auto kind = r.getKind();
      if (graph_allocations_.count(r.getAddress()) != 0) {
        // A graph allocation freed outside a graph: it stays mapped (modelled, nothing to do).
      } else if (kind == schema::MemFree::Kind::DEVICE || kind == schema::MemFree::Kind::ASYNC ||
                 kind == schema::MemFree::Kind::VMM_ADDRESS_FREE) {
        push(seq, FreeOp{r.getAddress()});
        live_allocations_.erase(r.getAddress());
      } else if (kind == schema::MemFree::Kind::HOST ||
                 kind == schema::MemFree::Kind::HOST_UNREGISTER) {
        push(seq, HostFreeOp{r.getAddress()});
      } else {
        skip("memFree (host/vmm)");
      }
      return std::nullopt;
    }
    case Which::MEMCPY:
      return add_memcpy(seq, record.getMemcpy());
    case Which::MEMSET:
      return add_memset(seq, record.getMemset());
    case Which::LAUNCH:
      return add_launch(seq, record.getLaunch());
    case Which::STREAM_CREATE: {
      auto r = record.getStreamCreate();
      push(seq, StreamCreateOp{r.getStream(), r.getFlags(), r.getPriority()});
      return std::nullopt;
    }
    case Which::STREAM_DESTROY:
      push(seq, StreamDestroyOp{record.getStreamDestroy().getStream()});
      return std::nullopt;
    case Which::STREAM_WAIT_EVENT: {
      auto r = record.getStreamWaitEvent();
      push(seq, StreamWaitOp{r.getStream(), r.getEvent(), r.getFlags()});
      return std::nullopt;
    }
    case Which::STREAM_SYNCHRONIZE:
      push(seq, StreamSyncOp{record.getStreamSynchronize().getStream()});
      return std::nullopt;
    case Which::EVENT_CREATE: {
      auto r = record.getEventCreate();
      push(seq, EventCreateOp{r.getEvent(), r.getFlags()});
      return std::nullopt;
    }
    case Which::EVENT_RECORD: {
      auto r = record.getEventRecord();
      push(seq, EventRecordOp{r.getEvent(), r.getStream()});
      return std::nullopt;
    }
    case Which::EVENT_SYNCHRONIZE:
      push(seq, EventSyncOp{record.getEventSynchronize().getEvent()});
      return std::nullopt;
    case Which::EVENT_DESTROY:
      push(seq, EventDestroyOp{record.getEventDestroy().getEvent()});
      return std::nullopt;
    case Which::CONTEXT_SYNCHRONIZE:
      push(seq, ContextSyncOp{});
      return std::nullopt;
    case Which::CONTEXT_CREATE:
      contexts_.insert(record.getContextCreate().getContext());
      skip("contextCreate");
      return std::nullopt;
    case Which::PRIMARY_CONTEXT:
      if (record.getPrimaryContext().getOp() == schema::PrimaryContext::Op::RETAIN) {
        contexts_.insert(record.getPrimaryContext().getContext());
      }
      skip("primaryContext");
      return std::nullopt;
    case Which::HOST_FUNC:
      warn_once("hostfunc", seq,
                "host functions (cuLaunchHostFunc) are not replayed; stream order is kept");
      skip("hostFunc");
      return std::nullopt;
    case Which::GENERIC: {
      std::string api = record.getApiName();
      if (builds_unrecorded_graph_node(api)) {
        // The graph would be rebuilt without this node (or with its old parameters) and run as
        // if complete: a result the application never computed. Refused like a conditional node.
        return Error(ErrorKind::kUnsupported,
                     api +
                         " (a graph node given by generic node parameters) is not recorded by "
                         "the capture; the graph cannot be rebuilt")
            .at_call(seq)
            .in_record("generic");
      }
      if (record.getGeneric().getAffectsDeviceState() || may_change_device_state(api)) {
        warn_once("generic:" + api, seq,
                  api + " is not modelled by the capture: replay may diverge");
      }
      skip("generic " + api);
      return std::nullopt;
    }
    case Which::MEMORY_SNAPSHOT:
      return add_snapshot(seq, record.getMemorySnapshot());
    case Which::GRAPH:
      return add_graph(seq, record.getGraph());
    case Which::GRAPH_NODE:
      return add_graph_node(seq, record.getGraphNode(), 0);
    case Which::GRAPH_EXEC:
      return add_graph_exec(seq, record.getGraphExec());
    case Which::STREAM_CAPTURE:
      return add_stream_capture(seq, record.getStreamCapture());
    case Which::ARRAY:
      return add_array(seq, record.getArray());
    case Which::TEX_OBJECT:
      return add_tex_object(seq, record.getTexObject());
    case Which::TENSOR_MAP:
      return add_tensor_map(seq, record.getTensorMap());
    case Which::TEX_REF:
      return add_tex_ref(seq, record.getTexRef());
    case Which::MEM_POOL:
      return add_mem_pool(seq, record.getMemPool());
    case Which::NVTX: {
      auto r = record.getNvtx();
      NvtxOp op;
      switch (r.getKind()) {
        case schema::NvtxEvent::Kind::PUSH:
          op.kind = NvtxOp::Kind::kPush;
          break;
        case schema::NvtxEvent::Kind::POP:
          op.kind = NvtxOp::Kind::kPop;
          break;
        case schema::NvtxEvent::Kind::START:
          op.kind = NvtxOp::Kind::kStart;
          break;
        case schema::NvtxEvent::Kind::END:
          op.kind = NvtxOp::Kind::kEnd;
          break;
        case schema::NvtxEvent::Kind::MARK:
          op.kind = NvtxOp::Kind::kMark;
          break;
        default:  // a kind of a newer schema: nothing this replay knows how to emit
          skip("nvtx (unknown kind)");
          return std::nullopt;
      }
      op.domain = r.getDomain();
      op.domain_handle = r.getDomainHandle();
      op.message = r.getMessage();
      op.category = r.getCategory();
      op.color = r.getColor();
      op.has_color = r.getHasColor();
      op.range_id = r.getRangeId();
      push(seq, std::move(op));
      return std::nullopt;
    }
    default:
      skip(format::call_kind_name(static_cast<uint16_t>(which)));
      return std::nullopt;
  }
}

bool PlanBuilder::inside_live_range(uint64_t address, uint64_t size, bool host) const {
  auto inside = [&](const std::map<uint64_t, uint64_t>& ranges) {
    auto it = ranges.upper_bound(address);
    if (it == ranges.begin()) return false;
    --it;
    uint64_t offset = address - it->first;
    return offset < it->second && size <= it->second - offset;
  };
  if (host) return inside(host_allocations_);
  return inside(live_allocations_) || inside(globals_);
}

// A snapshot record joins the launch it names (written after it). Everything a hostile file
// could get wrong is checked here, so that execution only reads blobs of known, bounded size.
MaybeError PlanBuilder::add_snapshot(uint64_t seq, schema::MemorySnapshot::Reader r) {
  const char* kRecord = "memorySnapshot";
  uint64_t launch_seq = r.getLaunchSeq();
  // A capture range's start snapshot belongs to no launch: it is restored where it stands.
  const bool range_start = r.getPhase() == schema::MemorySnapshot::Phase::RANGE_START;
  LaunchOp* launch = nullptr;
  if (range_start) {
    if (!range_capture_) {
      return capture_error(seq, kRecord,
                           "a rangeStart snapshot in a capture whose header is not a range "
                           "capture's (CaptureHeader.range)");
    }
    if (range_started_) return capture_error(seq, kRecord, "a second rangeStart snapshot");
    range_started_ = true;
  } else {
    auto found = launches_.find(launch_seq);
    if (found == launches_.end()) {
      return capture_error(seq, kRecord,
                           "snapshot of launch call " + std::to_string(launch_seq) +
                               ", which is not a replayable launch recorded before it");
    }
    launch = &std::get<LaunchOp>(plan_.actions[found->second].op);
    if (r.getLaunchOrdinal() != launch->ordinal) {
      return capture_error(seq, kRecord,
                           "snapshot names launch ordinal " + std::to_string(r.getLaunchOrdinal()) +
                               ", call " + std::to_string(launch_seq) + " is launch #" +
                               std::to_string(launch->ordinal));
    }
  }
  SkippedSnapshot skipped{seq,
                          launch_seq,
                          launch != nullptr ? launch->ordinal : 0,
                          launch != nullptr ? launch->kernel_name : "",
                          "",
                          ""};
  SnapshotPhase phase = SnapshotPhase::kBeforeLaunch;
  switch (r.getPhase()) {
    case schema::MemorySnapshot::Phase::BEFORE_LAUNCH:
      skipped.phase = "beforeLaunch";
      break;
    case schema::MemorySnapshot::Phase::AFTER_LAUNCH:
      skipped.phase = "afterLaunch";
      phase = SnapshotPhase::kAfterLaunch;
      break;
    case schema::MemorySnapshot::Phase::RANGE_START:
      skipped.phase = "rangeStart";
      phase = SnapshotPhase::kRangeStart;
      break;
    default:
      skipped.phase = "onDemand";
      skipped.reason = "onDemand snapshots are not replayed";
      plan_.skipped_snapshots.push_back(std::move(skipped));
      skip("memorySnapshot (onDemand)");
      return std::nullopt;
  }
  auto chunks = r.getChunks();
  if (r.hasSkippedReason() && r.getSkippedReason().size() > 0) {
    if (chunks.size() != 0) {
      return capture_error(seq, kRecord, "a skipped snapshot (skippedReason set) with chunks");
    }
    skipped.reason = r.getSkippedReason();
    if (range_start) {
      plan_.warnings.push_back({seq, "the capture range's start snapshot was not taken (" +
                                         skipped.reason +
                                         "): memory the range reads starts undefined"});
    }
    plan_.skipped_snapshots.push_back(std::move(skipped));
    skip("memorySnapshot (skipped at capture)");
    return std::nullopt;
  }
  std::optional<Snapshot> range_slot;
  std::optional<Snapshot>& slot = range_start                             ? range_slot
                                  : phase == SnapshotPhase::kBeforeLaunch ? launch->before
                                                                          : launch->after;
  if (slot) {
    return capture_error(seq, kRecord,
                         std::string("a second ") + skipped.phase + " snapshot of launch call " +
                             std::to_string(launch_seq) + " (the first is call " +
                             std::to_string(slot->seq) + ")");
  }
  if (chunk_bytes_ == 0 || chunk_bytes_ > kMaxSnapshotChunkBytes) {
    return capture_error(seq, kRecord,
                         "snapshot chunk size " + std::to_string(chunk_bytes_) +
                             " in the header (CaptureOptions.snapshotChunkBytes) is out of limits");
  }
  if (chunks.size() > kMaxSnapshotChunks) {
    return capture_error(seq, kRecord, std::to_string(chunks.size()) + " chunks in one snapshot");
  }
  Snapshot snapshot;
  snapshot.seq = seq;
  snapshot.phase = phase;
  snapshot.chunks.reserve(chunks.size());
  uint64_t previous_end = 0;
  for (auto c : chunks) {
    SnapshotChunk chunk;
    chunk.address = c.getAddress();
    chunk.size = c.getSize();
    chunk.hash_only = c.getHashOnly();
    chunk.blob = c.hasBlob() ? to_blob(c.getBlob()) : format::BlobId{};
    std::string where = "chunk " + std::to_string(snapshot.chunks.size()) + " at 0x";
    {
      char buffer[24];
      std::snprintf(buffer, sizeof buffer, "%llx", static_cast<unsigned long long>(chunk.address));
      where += buffer;
    }
    if (chunk.size == 0 || chunk.size > chunk_bytes_) {
      return capture_error(seq, kRecord,
                           where + ": " + std::to_string(chunk.size) +
                               " bytes, the chunk size is " + std::to_string(chunk_bytes_))
          .with_address(chunk.address);
    }
    if (chunk.address == 0 || add_overflows(chunk.address, chunk.size)) {
      return capture_error(seq, kRecord, where + ": address out of limits")
          .with_address(chunk.address);
    }
    if (!snapshot.chunks.empty() && chunk.address < previous_end) {
      return capture_error(seq, kRecord,
                           where +
                               ": overlaps or precedes the previous chunk (chunks must be in "
                               "increasing address order, non-overlapping)")
          .with_address(chunk.address);
    }
    const bool in_host = !inside_live_range(chunk.address, chunk.size) &&
                         inside_live_range(chunk.address, chunk.size, true);
    if (in_host && !plan_.extract && !range_start) {
      // Host memory in a whole-run replay: recreated, but what host code wrote there was never
      // captured, so its chunks would not match what the application had. Not compared; said
      // once, counted per snapshot. (An extract restores them before its launch: below.)
      warn_once("snapshot-host", seq,
                "snapshot chunks in host memory (pinned, mapped or registered) are not compared "
                "in a whole-run replay (host code's writes there are not captured)");
      previous_end = chunk.address + chunk.size;
      ++snapshot.host_chunks;
      continue;
    }
    if (!in_host && !inside_live_range(chunk.address, chunk.size)) {
      return capture_error(
                 seq, kRecord,
                 where + ": outside every allocation and module variable live at the launch")
          .with_address(chunk.address);
    }
    if (chunk.blob.is_null())
      return capture_error(seq, kRecord, where + ": no hash").with_address(chunk.address);
    if (chunk.hash_only) {
      if ((phase == SnapshotPhase::kBeforeLaunch && plan_.restores_inputs()) || range_start) {
        return capture_error(seq, kRecord,
                             where +
                                 (range_start ? std::string(": a range start snapshot's chunk")
                                              : std::string(plan_.extract ? ": an extracted"
                                                                          : ": a kernel-filtered") +
                                                    " capture's input chunk") +
                                 " must hold its bytes, not only its hash")
            .with_address(chunk.address);
      }
      ++snapshot.hash_only_chunks;
    } else if (auto e = check_blob(seq, kRecord, chunk.blob, chunk.size)) {
      return e->with_address(chunk.address);
    }
    previous_end = chunk.address + chunk.size;
    snapshot.bytes += chunk.size;
    snapshot.chunks.push_back(chunk);
  }
  ++plan_.snapshots;
  plan_.snapshot_chunks += snapshot.chunks.size();
  plan_.snapshot_bytes += snapshot.bytes;
  if (range_start) {
    plan_.range->restored_bytes = snapshot.bytes;
    push(seq, RestoreOp{std::move(snapshot)});
    return std::nullopt;
  }
  slot = std::move(snapshot);
  return std::nullopt;
}

Plan PlanBuilder::finish() {
  if (plan_.kernel_filter) {
    // A kernel-filtered capture has no record of what wrote memory before a launch: one whose
    // inputs were not captured (its beforeLaunch snapshot skipped) would run on whatever memory
    // the replay has, so its after-state is not a verdict on it.
    for (Action& action : plan_.actions) {
      auto* launch = std::get_if<LaunchOp>(&action.op);
      if (launch == nullptr || launch->before.has_value()) continue;
      if (launch->after) {
        launch->after.reset();
        --plan_.snapshots;
      }
      plan_.warnings.push_back(
          {action.seq, "kernel-filtered capture: the inputs of launch #" +
                           std::to_string(launch->ordinal) + " (" + launch->kernel_name +
                           ") were not captured; it runs on undefined memory and is not verified"});
    }
  }
  contexts_.erase(0);
  if (contexts_.size() > 1) {
    plan_.warnings.push_back({0, std::to_string(contexts_.size()) +
                                     " contexts were captured; all are replayed in one context"});
  }
  std::sort(raw_ranges_.begin(), raw_ranges_.end(),
            [](const MemoryRange& a, const MemoryRange& b) { return a.base < b.base; });
  for (const MemoryRange& r : raw_ranges_) {
    if (!plan_.memory_ranges.empty() && r.base <= plan_.memory_ranges.back().end()) {
      MemoryRange& last = plan_.memory_ranges.back();
      last.size = std::max(last.end(), r.end()) - last.base;
    } else {
      plan_.memory_ranges.push_back(r);
    }
  }
  return std::move(plan_);
}

}  // namespace cusnap::replayer::plan_detail

namespace cusnap::replayer {

const char* image_kind_name(ImageKind kind) {
  switch (kind) {
    case ImageKind::kPtx:
      return "ptx";
    case ImageKind::kCubin:
      return "cubin";
    case ImageKind::kFatbin:
      return "fatbin";
    case ImageKind::kFatbinWrapper:
      return "fatbin wrapper";
    case ImageKind::kFile:
      return "file";
    case ImageKind::kUnknown:
      break;
  }
  return "unknown";
}

const char* snapshot_phase_name(SnapshotPhase phase) {
  switch (phase) {
    case SnapshotPhase::kBeforeLaunch:
      return "beforeLaunch";
    case SnapshotPhase::kAfterLaunch:
      return "afterLaunch";
    case SnapshotPhase::kRangeStart:
      break;
  }
  return "rangeStart";
}

const char* copy_direction_name(CopyDirection direction) {
  switch (direction) {
    case CopyDirection::kHostToDevice:
      return "host to device";
    case CopyDirection::kDeviceToHost:
      return "device to host";
    case CopyDirection::kDeviceToDevice:
      return "device to device";
  }
  return "?";
}

const char* operation_name(const Operation& op) {
  static const char* const kNames[] = {"moduleLoad",
                                       "moduleUnload",
                                       "functionGet",
                                       "globalGet",
                                       "functionSetAttribute",
                                       "memAlloc",
                                       "memFree",
                                       "memcpy",
                                       "memset",
                                       "launch",
                                       "streamCreate",
                                       "streamDestroy",
                                       "streamWaitEvent",
                                       "streamSynchronize",
                                       "eventCreate",
                                       "eventRecord",
                                       "eventSynchronize",
                                       "eventDestroy",
                                       "contextSynchronize",
                                       "memAlloc (host)",
                                       "memFree (host)",
                                       "graph",
                                       "graphNode",
                                       "graphExec",
                                       "array",
                                       "texObject",
                                       "nvtx",
                                       "memorySnapshot (rangeStart)",
                                       "tensorMap",
                                       "texRef",
                                       "memPool"};
  static_assert(std::size(kNames) == std::variant_size_v<Operation>);
  return kNames[op.index()];
}

bool is_sticky_error(int32_t result) {
  switch (result) {
    case 700:  // CUDA_ERROR_ILLEGAL_ADDRESS
    case 702:  // CUDA_ERROR_LAUNCH_TIMEOUT
    case 710:  // CUDA_ERROR_ASSERT
    case 714:  // CUDA_ERROR_HARDWARE_STACK_ERROR
    case 715:  // CUDA_ERROR_ILLEGAL_INSTRUCTION
    case 716:  // CUDA_ERROR_MISALIGNED_ADDRESS
    case 717:  // CUDA_ERROR_INVALID_ADDRESS_SPACE
    case 718:  // CUDA_ERROR_INVALID_PC
    case 719:  // CUDA_ERROR_LAUNCH_FAILED
      return true;
    default:
      return false;
  }
}

Expected<Plan> build_plan(format::Reader& reader) {
  try {
    plan_detail::PlanBuilder builder(reader);
    auto header = reader.header();
    builder.set_chunk_bytes(header.getOptions().getSnapshotChunkBytes());
    if (header.hasExtract()) builder.set_extract(header.getExtract());
    if (header.hasRange()) builder.set_range(header.getRange());
    if (header.getOptions().getKernelFiltered()) builder.set_kernel_filter(header.getOptions());
    MaybeError failure;
    format::Status status = reader.for_each_call([&](const format::CallRef& ref) {
      failure = builder.add(ref);
      return !failure.has_value();
    });
    if (failure) return *failure;
    if (!status.is_ok()) {
      Error e(ErrorKind::kCapture, "reading the capture: " + status.to_string());
      if (status.call()) e.at_call(*status.call());
      return e;
    }
    Plan plan = builder.finish();
    plan.tool_version = header.getToolVersion();
    for (auto arg : header.getCommandLine()) plan.command_line.emplace_back(arg);
    plan.captured_driver_version = header.getDriverVersion();
    for (auto d : header.getDevices()) {
      plan.devices.push_back(CapturedDevice{d.getName(), d.getComputeCapabilityMajor(),
                                            d.getComputeCapabilityMinor(), d.getTotalMemoryBytes(),
                                            d.getMultiprocessorCount()});
    }
    plan.snapshot_chunk_bytes = builder.chunk_bytes();
    plan.call_count = reader.call_count();
    plan.integrity = reader.recovery().summary();
    return plan;
  } catch (const kj::Exception& e) {
    return Error(ErrorKind::kCapture,
                 std::string("malformed record: ") + e.getDescription().cStr());
  } catch (const std::exception& e) {
    return Error(ErrorKind::kCapture, std::string("reading the capture: ") + e.what());
  }
}

}  // namespace cusnap::replayer

// A capture turned into an ordered list of replayable actions.
//
// build_plan() reads every call record once, in seq order, and keeps what the replay needs as
// plain data (no Cap'n Proto readers survive it), so a plan can be executed several times and
// inspected by tests. It needs no driver: everything here is checked against the capture alone,
// which is why the fuzzer drives it with damaged files.
//
// Contract with the capture (interceptor):
// - Only calls that succeeded (result 0) are replayed; a failed call changed nothing.
// - Handles are the application's values; the executor maps them to live ones.
// - Device memory ranges come from allocation records (cuMemAlloc*, pitched, async, managed,
//   VMM reservations); `memory_ranges` is their union, for the executor to reserve up front.
// - Copy payloads (host-to-device bytes) are blobs whose size equals the copied size; for 2D/3D
//   copies the payload and the device-to-host checksum cover the copied rectangle packed row
//   after row (widthInBytes × height × depth), with no pitch padding.
// - Asynchronous copies: what the interceptor learns in stream order arrives as tool events
//   about the copy's seq: "deferred hostChecksum=<16 hex digits>" (the device-to-host checksum)
//   and "deferred payload=<32 hex digits> ..." (a pinned source changed before the copy ran:
//   the bytes that really entered device memory). Both are folded into the copy's action.
// - Calls the replayer does not model (generic records, host functions, host allocations
//   without a device address, context switches) are counted in `skipped` and, where they may
//   change device state, warned about once. Host allocations with one become HostAllocOp.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "cusnap/format/blob_id.h"
#include "cusnap/format/kernel_filter_summary.h"
#include "cusnap/format/reader.h"
#include "cusnap/format/record_sizes.h"
#include "replayer/status.h"

namespace cusnap::replayer {

// Limits that protect the replay from hostile captures (a real capture stays far below them).
inline constexpr uint64_t kMaxParamBytes = 32764;  // CUDA's parameter block limit
inline constexpr uint64_t kMaxRangeBytes = format::kMaxRecordRangeBytes;  // one allocation / copy
inline constexpr uint64_t kMaxLaunchAttributes = 64;
inline constexpr uint64_t kMaxMemoryRanges = uint64_t{1} << 20;
// Snapshot chunks are read one at a time; a chunk larger than this is not a real capture's.
inline constexpr uint64_t kMaxSnapshotChunkBytes = uint64_t{1} << 30;
inline constexpr uint64_t kMaxSnapshotChunks = uint64_t{1} << 24;  // in one snapshot record
inline constexpr uint64_t kMaxGraphEdges = uint64_t{1} << 20;      // in one graph record

enum class ImageKind : uint8_t { kUnknown, kPtx, kCubin, kFatbin, kFatbinWrapper, kFile };
const char* image_kind_name(ImageKind kind);

struct ParamSlot {
  uint32_t offset = 0;
  uint32_t size = 0;
};

struct ModuleLoadOp {
  uint64_t handle = 0;
  bool is_library = false;
  ImageKind kind = ImageKind::kUnknown;
  format::BlobId image;
  uint64_t image_size = 0;
  std::string path;  // *LoadFromFile: the original path (the image blob holds its contents)
};

struct ModuleUnloadOp {
  uint64_t handle = 0;
  bool is_library = false;
};

struct FunctionGetOp {
  enum class Kind : uint8_t { kModuleFunction, kLibraryKernel, kKernelGetFunction, kEnumerated };
  Kind kind = Kind::kModuleFunction;
  uint64_t module = 0;
  uint64_t handle = 0;
  uint64_t kernel = 0;  // kKernelGetFunction: the CUkernel converted
  std::string name;
};

struct GlobalGetOp {
  uint64_t module = 0;
  bool is_library = false;
  std::string name;
  uint64_t address = 0;
  uint64_t size = 0;
  // GlobalGet.byTool: the interceptor looked the variable up for a snapshot, the application did
  // not. Replayed the same way (its captured address must map to the live one), not counted as
  // one of the application's calls.
  bool by_tool = false;
};

struct FunctionAttributeOp {
  uint64_t function = 0;
  bool is_kernel = false;
  int32_t attribute = 0;  // CUfunction_attribute, -1: cache config
  int64_t value = 0;
  int32_t device = 0;
};

struct AllocOp {
  uint64_t address = 0;
  uint64_t size = 0;
  std::string kind;  // "device", "pitch", "async", "managed", "vmmReserve", ...
};

struct FreeOp {
  uint64_t address = 0;
};

// Host memory a kernel can reach (cuMemAllocHost, cuMemHostAlloc, cuMemHostRegister): the
// replay recreates it, at the captured device address when it can (docs/replay.md).
struct HostAllocOp {
  uint64_t host = 0;    // captured host pointer
  uint64_t device = 0;  // captured device address of it (what kernels were given)
  uint64_t size = 0;
  uint32_t flags = 0;  // CU_MEMHOSTALLOC_* / CU_MEMHOSTREGISTER_*
  std::string kind;    // "host", "hostAlloc", "hostRegister"
};

struct HostFreeOp {
  uint64_t host = 0;  // captured host pointer
};

enum class CopyDirection : uint8_t { kHostToDevice, kDeviceToHost, kDeviceToDevice };
// The 1-D array copies, as CopyGeometry.arrayApi names them.
enum class ArrayCopyApi : uint8_t { kNone, kHtoA, kAtoH, kDtoA, kAtoD, kAtoA };
const char* copy_direction_name(CopyDirection direction);

struct CopyOp {
  CopyDirection direction = CopyDirection::kHostToDevice;
  uint64_t dst = 0;  // device address for HtoD / DtoD (after the geometry offsets)
  uint64_t src = 0;  // device address for DtoH / DtoD
  uint64_t size = 0;
  bool async = false;
  uint64_t stream = 0;
  format::BlobId payload;  // HtoD
  bool has_checksum = false;
  uint64_t checksum = 0;  // DtoH: XXH3-64 of the bytes the application received
  // 2D/3D (dimensions > 1): `depth` slices of `height` rows of `width` bytes; on a device side,
  // rows are `*_pitch` bytes apart and slices `*_pitch * *_height` bytes apart.
  uint8_t dimensions = 1;
  uint64_t width = 0;
  uint64_t height = 1;
  uint64_t depth = 1;
  uint64_t src_pitch = 0;
  uint64_t dst_pitch = 0;
  uint64_t src_height = 0;
  uint64_t dst_height = 0;
  // An endpoint that is a CUDA array (Memcpy kind arrayInvolved, docs/replay.md "Arrays"): the
  // captured CUarray (0: the side is memory) and its offsets (x in bytes, y rows, z slices; a
  // 1-D array copy has only x). `array_api` names the 1-D array copy (cuMemcpyHtoA ...), which
  // is replayed by the same entry point; 0: a 2-D/3-D copy, replayed by cuMemcpy3D.
  uint64_t src_array = 0;
  uint64_t dst_array = 0;
  std::array<uint64_t, 3> src_offset{0, 0, 0};
  std::array<uint64_t, 3> dst_offset{0, 0, 0};
  ArrayCopyApi array_api = ArrayCopyApi::kNone;
  bool involves_array() const { return src_array != 0 || dst_array != 0; }
  // Bytes from the first to one past the last byte touched on a pitched side.
  uint64_t extent(uint64_t pitch, uint64_t rows_per_slice) const {
    if (dimensions == 1) return size;
    return ((depth - 1) * rows_per_slice + (height - 1)) * pitch + width;
  }
};

struct MemsetOp {
  uint64_t address = 0;
  uint32_t value = 0;
  uint8_t element_size = 1;  // 1, 2, 4
  uint64_t width = 0;        // elements per row
  uint64_t height = 1;
  uint64_t pitch = 0;  // bytes between rows (2D)
  bool async = false;
  uint64_t stream = 0;
};

struct LaunchAttributeOp {
  uint32_t id = 0;
  std::vector<uint8_t> value;  // raw CUlaunchAttributeValue bytes
};

// One piece of a memory snapshot (docs/format.md, "Memory snapshots"): captured address, size,
// and the XXH3-128 of its bytes, which also names its blob unless only the hash was recorded.
struct SnapshotChunk {
  uint64_t address = 0;
  uint64_t size = 0;
  format::BlobId blob;
  bool hash_only = false;
};

enum class SnapshotPhase : uint8_t { kBeforeLaunch, kAfterLaunch, kRangeStart };
// "beforeLaunch" / "afterLaunch" / "rangeStart"
const char* snapshot_phase_name(SnapshotPhase phase);

struct Snapshot {
  uint64_t seq = 0;  // the memorySnapshot record
  SnapshotPhase phase = SnapshotPhase::kBeforeLaunch;
  std::vector<SnapshotChunk> chunks;  // increasing address, non-overlapping
  uint64_t bytes = 0;                 // sum of the chunk sizes
  uint64_t hash_only_chunks = 0;
  uint64_t host_chunks = 0;  // chunks in host memory, dropped (host memory is not replayed)
};

struct LaunchOp {
  enum class Kind : uint8_t { kLaunchKernel, kLaunchKernelEx, kCooperative };
  Kind kind = Kind::kLaunchKernel;
  uint64_t function = 0;
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t shared_bytes = 0;
  uint64_t stream = 0;
  std::vector<uint8_t> params;
  std::vector<ParamSlot> layout;  // empty with via_extra: params is the opaque `extra` buffer
  bool via_extra = false;
  bool has_layout = false;
  std::vector<LaunchAttributeOp> attributes;
  bool cooperative = false;
  uint64_t ordinal = 0;
  std::string kernel_name;
  // Memory snapshots of this launch (their records follow the launch record). In an extracted
  // capture `before` is restored and `after` compared; in a whole-run capture both are compared.
  std::optional<Snapshot> before;
  std::optional<Snapshot> after;
};

struct StreamCreateOp {
  uint64_t stream = 0;
  uint32_t flags = 0;
  int32_t priority = 0;
};
struct StreamDestroyOp {
  uint64_t stream = 0;
};
struct StreamWaitOp {
  uint64_t stream = 0;
  uint64_t event = 0;
  uint32_t flags = 0;
};
struct StreamSyncOp {
  uint64_t stream = 0;
};
struct EventCreateOp {
  uint64_t event = 0;
  uint32_t flags = 0;
};
struct EventRecordOp {
  uint64_t event = 0;
  uint64_t stream = 0;
};
struct EventSyncOp {
  uint64_t event = 0;
};
struct EventDestroyOp {
  uint64_t event = 0;
};
struct ContextSyncOp {};

// CUDA graphs (docs/replay.md, "Graphs"): rebuilt node by node with the driver's graph API,
// instantiated and launched as captured. A stream capture becomes an empty graph at its begin
// record, which the captured nodes (GraphNodeOp, captured) then fill like explicit ones.
struct GraphEdgeRef {
  uint64_t from = 0;  // captured CUgraphNode
  uint64_t to = 0;
};

struct GraphOp {
  enum class Kind : uint8_t {
    kCreate,        // cuGraphCreate
    kCaptureBegin,  // cuStreamBeginCapture: the graph the capture builds
    kDestroy,
    kClone,
    kAddEdges,
    kRemoveEdges,
    kDestroyNode
  };
  Kind kind = Kind::kCreate;
  uint64_t graph = 0;
  uint64_t original = 0;  // kClone
  uint64_t node = 0;      // kDestroyNode
  uint32_t flags = 0;
  std::vector<GraphEdgeRef> edges;
};

struct GraphNodeOp {
  enum class Kind : uint8_t {
    kEmpty,
    kKernel,
    kMemcpy,
    kMemset,
    kHost,  // replayed as an empty node: the application's host function cannot be called
    kEventRecord,
    kEventWait,
    kChildGraph
  };
  Kind kind = Kind::kEmpty;
  bool set_params = false;  // a parameter change of an existing node (else: a node added)
  uint64_t exec = 0;        // set_params of the node in this executable graph (cuGraphExec*)
  uint64_t graph = 0;
  uint64_t node = 0;
  std::vector<uint64_t> dependencies;  // captured nodes the new node depends on
  bool captured = false;               // made by stream capture
  LaunchOp kernel;                     // kKernel: as a launch (stream and ordinal unused)
  CopyOp copy;                         // kMemcpy (host sides: a buffer of the replay)
  MemsetOp memset;                     // kMemset
  uint64_t event = 0;                  // kEventRecord / kEventWait
  uint64_t child = 0;                  // kChildGraph
};

struct GraphExecOp {
  enum class Kind : uint8_t { kInstantiate, kUpdate, kSetEnabled, kUpload, kLaunch, kDestroy };
  Kind kind = Kind::kInstantiate;
  uint64_t exec = 0;
  uint64_t graph = 0;  // kInstantiate, kUpdate
  uint64_t flags = 0;  // kInstantiate
  uint64_t stream = 0;
  uint64_t node = 0;  // kSetEnabled
  bool enabled = false;
  uint64_t launch_index = 0;  // kLaunch: earlier launches of this exec
  // kLaunch: the device-to-host memcpy nodes whose host bytes the capture checksummed after this
  // launch (DeferredResult.graphNode): (captured node, XXH3-64).
  std::vector<std::pair<uint64_t, uint64_t>> checksums;
};

// CUDA arrays and mipmapped arrays (docs/replay.md, "Arrays, textures and surfaces"):
// recreated with the captured descriptor; the executor maps captured handles to live ones.
struct ArrayOp {
  enum class Kind : uint8_t {
    kCreate,    // cuArrayCreate
    kCreate3d,  // cuArray3DCreate
    kDestroy,
    kMipmappedCreate,
    kMipmappedGetLevel,
    kMipmappedDestroy
  };
  Kind kind = Kind::kCreate3d;
  uint64_t array = 0;      // CUarray created / destroyed / the level returned
  uint64_t mipmapped = 0;  // CUmipmappedArray
  int32_t format = 0;      // CUarray_format
  uint32_t channels = 0;
  uint64_t width = 0, height = 0, depth = 0;
  uint32_t flags = 0;
  uint32_t levels = 0;  // kMipmappedCreate
  uint32_t level = 0;   // kMipmappedGetLevel
};

// CUDA_RESOURCE_DESC / CUDA_TEXTURE_DESC / CUDA_RESOURCE_VIEW_DESC as plain values (the plan
// stays free of CUDA headers); handles and the device pointer are the captured ones.
struct ResourceDescOp {
  int32_t type = 0;  // CUresourcetype
  uint64_t array = 0, mipmapped = 0, device_pointer = 0;
  int32_t format = 0;
  uint32_t channels = 0;
  uint64_t size_in_bytes = 0, width = 0, height = 0, pitch_in_bytes = 0;
  uint32_t flags = 0;
};
struct TextureDescOp {
  std::array<int32_t, 3> address_mode{0, 0, 0};
  int32_t filter_mode = 0;
  uint32_t flags = 0;
  uint32_t max_anisotropy = 0;
  int32_t mipmap_filter_mode = 0;
  float mipmap_level_bias = 0, min_mipmap_level_clamp = 0, max_mipmap_level_clamp = 0;
  std::array<float, 4> border_color{0, 0, 0, 0};
};
struct ResourceViewDescOp {
  int32_t format = 0;
  uint64_t width = 0, height = 0, depth = 0;
  uint32_t first_mipmap_level = 0, last_mipmap_level = 0, first_layer = 0, last_layer = 0;
};

// Texture and surface objects: recreated on the live arrays / memory; their captured 64-bit
// values are mapped to the live ones in kernel parameters (docs/replay.md).
struct TexObjectOp {
  enum class Kind : uint8_t { kTextureCreate, kTextureDestroy, kSurfaceCreate, kSurfaceDestroy };
  Kind kind = Kind::kTextureCreate;
  uint64_t object = 0;  // captured CUtexObject / CUsurfObject
  ResourceDescOp resource;
  TextureDescOp texture;
  bool has_view = false;
  ResourceViewDescOp view;
};

// A tensor map encoded or re-addressed (schema TensorMapCall, docs/replay.md "Tensor maps"): the
// executor encodes it again on the replay's driver, with the global address translated, and
// substitutes the replay's 128 bytes for the captured ones wherever they appear in launch
// parameters and host-to-device copies.
struct TensorMapOp {
  enum class Kind : uint8_t { kEncodeTiled, kEncodeIm2col, kEncodeIm2colWide, kReplaceAddress };
  Kind kind = Kind::kEncodeTiled;
  std::array<uint8_t, 128> encoded{};   // what the capturing driver wrote
  std::array<uint8_t, 128> previous{};  // kReplaceAddress: the map it changed
  int32_t data_type = 0;
  uint32_t rank = 0;
  uint64_t global_address = 0;
  std::array<uint64_t, 5> global_dim{};
  std::array<uint64_t, 5> global_strides{};  // rank - 1 used
  std::array<uint32_t, 5> box_dim{};
  std::array<uint32_t, 5> element_strides{};
  int32_t interleave = 0, swizzle = 0, l2_promotion = 0, oob_fill = 0;
  std::array<int32_t, 3> lower_corner{};  // im2col: rank - 2 used; im2colWide: [0]
  std::array<int32_t, 3> upper_corner{};
  uint32_t channels_per_pixel = 0, pixels_per_column = 0;
  int32_t wide_mode = 0;
};

// Legacy texture and surface references (schema 8, docs/replay.md "Texture references"): a
// module's reference looked up by its variable's name in the replayed module, then every setter
// applied again with the live arrays and addresses. References never appear in kernel
// parameters (kernels name them as module variables), so nothing is mapped in launches.
struct TexRefOp {
  enum class Kind : uint8_t {
    kGetTexRef,
    kGetSurfRef,
    kCreate,
    kDestroy,
    kSetArray,
    kSetMipmappedArray,
    kSetAddress,
    kSetAddress2d,
    kSetFormat,
    kSetAddressMode,
    kSetFilterMode,
    kSetMipmapFilterMode,
    kSetMipmapLevelBias,
    kSetMipmapLevelClamp,
    kSetMaxAnisotropy,
    kSetBorderColor,
    kSetFlags,
    kSurfSetArray,
    kParamSetTexRef
  };
  Kind kind = Kind::kGetTexRef;
  uint64_t ref = 0;     // captured CUtexref / CUsurfref
  uint64_t module = 0;  // kGetTexRef, kGetSurfRef
  std::string name;
  uint64_t array = 0, mipmapped = 0;
  uint32_t flags = 0;
  uint64_t address = 0, bytes = 0, byte_offset = 0;  // kSetAddress, kSetAddress2d
  int32_t format = 0;
  uint32_t channels = 0;
  uint64_t width = 0, height = 0, pitch = 0;  // kSetAddress2d
  int32_t dim = 0, mode = 0;
  float bias = 0, min_clamp = 0, max_clamp = 0;
  uint32_t max_anisotropy = 0;
  std::array<float, 4> border_color{0, 0, 0, 0};
  uint64_t function = 0;  // kParamSetTexRef
  int32_t tex_unit = 0;
};

// Memory pools (schema 8): recreated with their properties and attributes; captured pool
// handles mapped to live ones. Allocations from a pool are AllocOps like every other (their
// bytes live at the captured address, docs/replay.md "Memory pools").
struct MemPoolOp {
  enum class Kind : uint8_t {
    kCreate,
    kDestroy,
    kSetAttribute,
    kGetAttribute,
    kTrimTo,
    kSetAccess,
    kDeviceSetMemPool,
    kDeviceGetMemPool,
    kDeviceGetDefaultMemPool
  };
  Kind kind = Kind::kCreate;
  uint64_t pool = 0;  // captured CUmemoryPool
  int32_t allocation_type = 0, handle_types = 0, location_type = 0, location_id = 0;
  uint64_t max_size = 0;
  uint32_t usage = 0;
  int32_t attribute = 0;
  uint64_t value = 0;  // kSetAttribute
  uint64_t min_bytes_to_keep = 0;
  struct Access {
    int32_t location_type = 0, location_id = 0;
    uint64_t flags = 0;
  };
  std::vector<Access> access;  // kSetAccess
};

// An NVTX range or mark of the application (schema NvtxEvent, docs/replay.md "NVTX"), emitted
// again at its place among the calls when ReplayOptions::nvtx is set.
struct NvtxOp {
  enum class Kind : uint8_t { kPush, kPop, kStart, kEnd, kMark };
  Kind kind = Kind::kMark;
  std::string domain;          // empty: the default domain
  uint64_t domain_handle = 0;  // the captured nvtxDomainHandle_t (0: default domain)
  std::string message;
  uint32_t category = 0;
  uint32_t color = 0;  // ARGB, when has_color
  bool has_color = false;
  uint64_t range_id = 0;  // start / end: the captured nvtxRangeId_t
};

// A capture range's start (CaptureHeader.range): the memory live when the range began, restored
// here, after the state records that created it and before the range's first call.
struct RestoreOp {
  Snapshot snapshot;
};

using Operation =
    std::variant<ModuleLoadOp, ModuleUnloadOp, FunctionGetOp, GlobalGetOp, FunctionAttributeOp,
                 AllocOp, FreeOp, CopyOp, MemsetOp, LaunchOp, StreamCreateOp, StreamDestroyOp,
                 StreamWaitOp, StreamSyncOp, EventCreateOp, EventRecordOp, EventSyncOp,
                 EventDestroyOp, ContextSyncOp, HostAllocOp, HostFreeOp, GraphOp, GraphNodeOp,
                 GraphExecOp, ArrayOp, TexObjectOp, NvtxOp, RestoreOp, TensorMapOp, TexRefOp,
                 MemPoolOp>;

struct Action {
  uint64_t seq = 0;
  Operation op;
};
// "launch", "memcpy", ... for messages.
const char* operation_name(const Operation& op);

// A captured device memory range (the union of overlapping allocations).
struct MemoryRange {
  uint64_t base = 0;
  uint64_t size = 0;
  uint64_t end() const { return base + size; }
};

struct CapturedDevice {
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  uint64_t total_memory = 0;
  int multiprocessors = 0;
};

// A snapshot record that holds no snapshot (skippedReason), or that the replay does not use.
struct SkippedSnapshot {
  uint64_t seq = 0;
  uint64_t launch_seq = 0;
  uint64_t launch_ordinal = 0;
  std::string kernel;
  std::string phase;
  std::string reason;
};

// CaptureHeader.range: the capture range a file holds.
struct RangeSummary {
  std::string trigger;  // cudaProfilerApi, nvtx, signal
  uint32_t number = 0;  // 0: the range never started
  std::string end_mode;
  std::string nvtx_capture;
  uint64_t restored_bytes = 0;  // the rangeStart snapshot's bytes
};

// CaptureOptions.kernelFiltered: a kernel-filtered capture (docs/capture.md, "Kernel filters").
struct KernelFilterSummary {
  std::string filter;  // CaptureOptions.kernelRegex
  uint64_t launch_skip = 0;
  uint64_t launch_count = 0;
  // The interceptor's closing summary (format/kernel_filter_summary.h); absent when the capture
  // ended before writing it.
  std::optional<format::KernelFilterCounts> counts;
};

// CaptureHeader.extract: what an extracted capture is (one launch cut out of another capture).
struct ExtractSummary {
  std::string source_path;
  int64_t source_creation_time_ns = 0;
  std::string source_host;
  uint32_t source_pid = 0;
  uint64_t source_launch_seq = 0;
  uint64_t source_launch_ordinal = 0;
  std::string kernel;
  std::string route;  // "snapshot" | "replay"
  std::string route_driver;
  bool minimized = false;
  uint64_t input_bytes = 0;
  uint64_t expected_bytes = 0;
};

struct PlanWarning {
  uint64_t seq = 0;
  std::string message;
};

// A sticky error the capture ended with: the first call that failed with an error after which
// the driver fails every call of the context (a device-side assert, an illegal address, ...).
// An application may cause one on purpose and check for it; the replay then expects it as the
// outcome (replay.h) instead of failing on it.
struct RecordedError {
  uint64_t seq = 0;  // the call that returned it
  std::string api;
  int32_t result = 0;                   // the CUresult
  uint64_t last_launch_seq = 0;         // the launch before it (its likely cause); 0: none
  uint64_t later_successful_calls = 0;  // calls after it that succeeded anyway (not replayed)
};
// True for the CUresults that leave the context unusable (CUDA's "sticky" errors).
bool is_sticky_error(int32_t result);

// Everything a plan says about the capture except its actions: what a replay report keeps.
struct PlanSummary {
  // Identity of the capture, for reports.
  std::string tool_version;
  std::vector<std::string> command_line;
  int32_t captured_driver_version = 0;
  std::vector<CapturedDevice> devices;
  uint64_t call_count = 0;
  std::string integrity;  // the reader's recovery summary ("whole (N calls)", "truncated: ...")

  std::vector<MemoryRange> memory_ranges;  // sorted, disjoint
  uint64_t launch_count = 0;
  uint64_t verifiable_copies = 0;           // device-to-host copies with a checksum
  std::map<std::string, uint64_t> skipped;  // record kind (or api name) -> count not replayed
  std::vector<PlanWarning> warnings;
  bool uses_cluster_launch = false;
  bool uses_cooperative_launch = false;
  std::optional<RecordedError> recorded_error;

  // Memory snapshots. `extract` is set for an extracted capture (restore + compare); otherwise
  // snapshots are verification points only.
  std::optional<ExtractSummary> extract;
  // CaptureHeader.range: a capture of one capture range (docs/capture.md, "Capture ranges").
  std::optional<RangeSummary> range;
  // Kernel-filtered: each launch starts from its beforeLaunch snapshot, as in an extracted capture.
  std::optional<KernelFilterSummary> kernel_filter;
  uint64_t snapshot_chunk_bytes = 0;  // CaptureOptions.snapshotChunkBytes
  uint64_t snapshots = 0;             // snapshot records attached to a launch
  uint64_t snapshot_chunks = 0;
  uint64_t snapshot_bytes = 0;
  std::vector<SkippedSnapshot> skipped_snapshots;
  bool extracted() const { return extract.has_value(); }
  // A launch's beforeLaunch snapshot is restored (not only compared) before it runs.
  bool restores_inputs() const { return extract.has_value() || kernel_filter.has_value(); }
};

struct Plan : PlanSummary {
  std::vector<Action> actions;  // in seq order
};

// Reads the whole capture. Errors: unreadable records, inconsistent or out-of-limit values
// (with the call's seq), blobs that are missing or of the wrong size.
Expected<Plan> build_plan(format::Reader& reader);

}  // namespace cusnap::replayer

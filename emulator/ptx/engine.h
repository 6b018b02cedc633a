// The PTX engine: the contract between the emulator's driver layer (emulator/driver: contexts,
// memory, streams, modules) and its PTX execution (emulator/ptx: parser, lowering, SIMT
// interpreter). The driver layer owns every device allocation; the engine owns shared memory,
// local memory and the per-module pre-decoded program.
//
// Device addresses are host addresses. The engine dereferences global/generic addresses directly
// after asking MemoryHost whether the access is inside a live allocation, so an out-of-bounds
// access is reported as CUDA_ERROR_ILLEGAL_ADDRESS instead of corrupting the host process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace cusnap::emu::ptx {

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  uint64_t count() const { return uint64_t{x} * y * z; }
};

// One kernel parameter as the PTX `.entry` signature declares it.
struct ParamDesc {
  uint32_t offset = 0;  // byte offset inside the parameter buffer (natural alignment applied)
  uint32_t size = 0;    // bytes
  uint32_t align = 1;
};

struct KernelDesc {
  std::string name;  // the `.entry` name (mangled)
  std::vector<ParamDesc> params;
  uint32_t param_bytes = 0;             // total size of the parameter buffer
  uint32_t static_shared_bytes = 0;     // `.shared` declared in/for this kernel
  uint32_t local_bytes_per_thread = 0;  // `.local` frame (incl. __local_depot)
  uint32_t num_regs = 0;                // virtual registers declared (reported as NUM_REGS, capped)
  uint32_t max_threads_per_block = 0;   // `.maxntid` product, 0 when not declared
  Dim3 reqntid{0, 0, 0};                // `.reqntid`, zeros when not declared
  Dim3 reqnctapercluster{0, 0, 0};      // `.reqnctapercluster`, zeros when not declared
  uint32_t max_cluster_rank = 0;        // `.maxclusterrank`, 0 when not declared
  bool explicit_cluster = false;        // `.explicitcluster`
  bool uses_dynamic_shared = false;     // refers to an `.extern .shared` array
  // Determinism (schedule.cpp, at compile): true when the kernel's results can depend on the
  // order in which its blocks run (a value-returning global atomic, a floating-point or
  // non-commutative global atomic/reduction, an ordered global load used for inter-block
  // signalling). Such a kernel's blocks run one at a time in block-index order, whatever
  // Limits::worker_threads is. `serial_reason` names the first such instruction and its line.
  bool serial_blocks = false;
  std::string serial_reason;
};

enum class VariableSpace : uint8_t { kGlobal, kConst };
// A module-scope `.global .texref` / `.global .surfref` (the legacy texture and surface
// references of unified texture mode) is an 8-byte variable that holds the handle of the driver's
// reference object: the driver writes it at load (cuModuleGetTexRef / cuModuleGetSurfRef name the
// same object), and tex/tld4/txq/istypep (suld/sust/suq) naming the variable read it at execution,
// so the state set through cuTexRef* / cuSurfRef* before a launch is what that launch samples.
enum class OpaqueKind : uint8_t { kNone, kTexref, kSurfref };

// A module-scope `.global` or `.const` variable. The driver layer allocates device memory for it
// (size/align), copies `initializer` (zero-filled when shorter than size) and then binds the
// address with Program::bind_variable before any launch.
struct VariableDesc {
  std::string name;
  VariableSpace space = VariableSpace::kGlobal;
  uint64_t size = 0;
  uint32_t align = 1;
  std::vector<uint8_t> initializer;
  bool is_extern = false;  // `.extern` declarations are not allocated
  // `.attribute(.managed)`: lives in managed memory (host-accessible through its address).
  bool managed = false;
  OpaqueKind opaque = OpaqueKind::kNone;  // a .texref / .surfref (8 bytes: the handle)
};

// Texture and surface objects (CUtexObject / CUsurfObject), as the driver layer describes them
// to the engine. The driver owns the memory; a view stays valid while the object it came from
// lives (destroying an object a running kernel samples is undefined, as on a GPU).
enum class TexelFormat : uint8_t { kU8, kU16, kU32, kS8, kS16, kS32, kF16, kF32 };
// The texel grid of one CUDA array (or mipmap level), linear memory or pitched 2D memory.
struct ImageView {
  uint8_t* data = nullptr;
  uint64_t row_pitch = 0;                     // bytes between rows
  uint64_t slice_pitch = 0;                   // bytes between depth slices / layers
  uint32_t width = 0, height = 1, depth = 1;  // texels; depth: slices of a 3D array
  uint32_t layers = 0;                        // layered arrays: the layer count (else 0)
  TexelFormat format = TexelFormat::kF32;
  uint8_t channels = 1;  // 1, 2 or 4
  uint8_t dims = 1;      // 1, 2 or 3 (a layered array's dims are those of one layer)
  uint32_t texel_bytes() const {
    static constexpr uint8_t kSize[] = {1, 2, 4, 1, 2, 4, 2, 4};
    return kSize[static_cast<int>(format)] * channels;
  }
};
enum class AddressMode : uint8_t { kWrap, kClamp, kMirror, kBorder };
inline constexpr int kMaxMipLevels = 16;
struct TextureView {
  ImageView levels[kMaxMipLevels];
  uint32_t level_count = 1;    // > 1: a mipmapped array
  bool linear_memory = false;  // CU_RESOURCE_TYPE_LINEAR: tex.1d fetches by integer index only
  // LINEAR or PITCH2D: the texels are device memory (levels[0].data, row_pitch * height bytes),
  // which access tracking reports as read.
  bool device_memory = false;
  AddressMode address[3] = {AddressMode::kWrap, AddressMode::kWrap, AddressMode::kWrap};
  bool linear_filter = false;  // CU_TR_FILTER_MODE_LINEAR
  bool mip_linear = false;     // mipmapFilterMode linear
  bool normalized_coords = false;
  bool read_as_integer = true;  // false: 8/16-bit integer texels read as normalized floats
  float border[4] = {0, 0, 0, 0};
  float lod_bias = 0, min_lod = 0, max_lod = 0;
};
struct SurfaceView {
  ImageView image;
};

// Implemented by the driver layer: the allocation table the engine checks every global,
// constant and generic access against (shared/local windows are checked by the engine itself).
class MemoryHost {
 public:
  virtual ~MemoryHost() = default;
  // True when [address, address + size) lies entirely inside one live allocation that device
  // code may access (device, managed, mapped pinned or registered host memory, module variables).
  virtual bool accessible(uint64_t address, uint64_t size, bool write) const = 0;
  // For the memcheck message of an access `accessible` refused: where it lies relative to the
  // allocations (e.g. "0 bytes past the end of the 16384-byte device allocation at 0x..."), or
  // empty. Called only on the failure path.
  virtual std::string describe(uint64_t address, uint64_t size, bool write) const {
    (void)address;
    (void)size;
    (void)write;
    return {};
  }
  // The texture or surface object a 64-bit handle names: false when it names none (the
  // instruction then fails the launch with CUDA_ERROR_ILLEGAL_INSTRUCTION, see interp_texture).
  virtual bool texture(uint64_t handle, TextureView* out) const {
    (void)handle;
    (void)out;
    return false;
  }
  virtual bool surface(uint64_t handle, SurfaceView* out) const {
    (void)handle;
    (void)out;
    return false;
  }
};

// The heap of device-side malloc/free (the `malloc` and `free` nvcc calls for them): implemented
// by the driver layer, one per context (cuCtxSetLimit's CU_LIMIT_MALLOC_HEAP_SIZE). Called from
// several worker threads at once; its blocks are driver memory (MemoryHost::accessible).
class DeviceHeap {
 public:
  virtual ~DeviceHeap() = default;
  // A block of `size` bytes aligned to 16, or 0 when the heap cannot hold it (as malloc does).
  virtual uint64_t allocate(uint64_t size) = 0;
  // Frees a block allocate() returned and not yet freed; false for any other address.
  virtual bool release(uint64_t address) = 0;
};

enum class LaunchStatus : uint8_t {
  kSuccess,
  kIllegalAddress,       // CUDA_ERROR_ILLEGAL_ADDRESS
  kMisalignedAddress,    // CUDA_ERROR_MISALIGNED_ADDRESS
  kAssert,               // CUDA_ERROR_ASSERT (device assert; message already printed)
  kIllegalInstruction,   // CUDA_ERROR_ILLEGAL_INSTRUCTION (trap, unsupported opcode at run time)
  kInvalidValue,         // bad launch configuration (CUDA_ERROR_INVALID_VALUE)
  kOutOfResources,       // too many threads / too much shared memory
                         // (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
  kCooperativeTooLarge,  // CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE
  kHung,                 // a barrier that can never complete (deadlock detected)
  kTimeout,              // ran longer than Limits::timeout_ms (CUDA_ERROR_LAUNCH_TIMEOUT)
};

struct LaunchConfig {
  Dim3 grid;
  Dim3 block;
  uint32_t dynamic_shared_bytes = 0;
  const void* params = nullptr;  // the packed parameter buffer, KernelDesc::param_bytes long
  size_t params_size = 0;
  bool cooperative = false;  // all blocks co-resident: grid-wide barriers must work
  Dim3 cluster{1, 1, 1};
  // The emulated device time (ns) at which the launch starts: %globaltimer reads it plus the
  // reading warp's emulated time (LaunchResult::emulated_ns).
  uint64_t start_ns = 0;
  // Access tracking (opt-in, docs/emulator.md "Access tracking"): 0, the default, is off; else a
  // power of two, the chunk size in bytes at which the launch reports the driver memory (device
  // allocations, host memory mapped for the device, module variables) its instructions read and
  // wrote in LaunchResult::read_chunks / written_chunks.
  uint64_t track_chunk_bytes = 0;
  // Device-side malloc/free. Null: malloc returns 0 and free of a non-null pointer fails the
  // launch.
  DeviceHeap* heap = nullptr;
};

struct LaunchResult {
  LaunchStatus status = LaunchStatus::kSuccess;
  std::string message;        // what failed and where (kernel, pc/line, block, thread, address)
  uint64_t instructions = 0;  // warp-instructions executed
  // Thread-instructions executed: for every executed warp instruction, the lanes that issued it
  // (predicated-off lanes included, as CUDA's thread_inst_executed counts them).
  uint64_t thread_instructions = 0;
  // Modelled device time, used for event timing: 3 us of launch latency plus the larger of
  // 1 ns per warp-instruction spread over the SMs and the longest warp's own time. A warp's
  // clock counts 4 cycles per instruction it issued plus the cycles it slept in nanosleep, at
  // Limits::clock_khz: %clock64 reads its cycles, %globaltimer LaunchConfig::start_ns plus its
  // time, so the three agree.
  uint64_t emulated_ns = 0;
  // With LaunchConfig::track_chunk_bytes: the chunk-aligned addresses of every chunk of driver
  // memory that a load, atomic or reduction (both: read and written), cp.async source or a
  // printf/assert argument read, and that a store or atomic wrote; ascending, each once. Shared,
  // local and parameter memory are not driver memory and never appear.
  std::vector<uint64_t> read_chunks;
  std::vector<uint64_t> written_chunks;
};

// The 128 bytes of a CUtensorMap as the emulator's cuTensorMapEncodeTiled writes them and
// cp.async.bulk.tensor reads them (the driver's own format is opaque; this is the emulator's,
// documented in docs/emulator.md, "Tensor maps"). Only what the encode accepted is here: tile
// mode, no interleave, no swizzle or the 32B/64B/128B swizzle with an inner box of exactly the
// swizzle span, zero OOB fill, element strides of 1 (the rest is refused). `key` is the
// encoding driver's Limits::tensor_map_key: a map made by another driver (instance) is opaque
// data there, as a real driver's maps are to another driver version, and is refused.
struct TensorMapImage {
  uint32_t magic = 0;  // kTensorMapMagic
  uint8_t version = 0;
  uint8_t data_type = 0;  // CUtensorMapDataType
  uint8_t rank = 0;       // 1..5
  uint8_t element_size = 0;
  uint8_t l2_promotion = 0;  // CUtensorMapL2promotion (a hint)
  uint8_t swizzle = 0;       // ptx::Swizzle (swizzle.h): CU_TENSOR_MAP_SWIZZLE_NONE..128B
  uint8_t key[4] = {};       // Limits::tensor_map_key, little-endian
  uint8_t reserved[2] = {};
  uint64_t address = 0;     // global address of element (0, ..., 0)
  uint64_t dim[5] = {};     // elements per dimension
  uint64_t stride[5] = {};  // bytes between consecutive indices of each dimension (stride[0]:
                            // the element size)
  uint16_t box[5] = {};     // box elements per dimension
  uint8_t pad[14] = {};
};
static_assert(sizeof(TensorMapImage) == 128, "a CUtensorMap is 128 bytes");
inline constexpr uint32_t kTensorMapMagic = 0x4d544d43;  // "CMTM" little-endian
inline constexpr uint8_t kTensorMapVersion = 1;
inline constexpr uint32_t kDefaultTensorMapKey = 0x0000c05a;
// Whether `m` is a map of the encoding whose key is `key` (magic, version and key).
inline bool tensor_map_of(const TensorMapImage& m, uint32_t key) {
  return m.magic == kTensorMapMagic && m.version == kTensorMapVersion &&
         (m.key[0] | m.key[1] << 8 | m.key[2] << 16 | static_cast<uint32_t>(m.key[3]) << 24) == key;
}
inline void set_tensor_map_key(TensorMapImage& m, uint32_t key) {
  for (int i = 0; i < 4; ++i) m.key[i] = static_cast<uint8_t>(key >> (8 * i));
}

struct Limits {
  uint32_t max_threads_per_block = 1024;
  uint32_t max_shared_per_block = 48 * 1024;         // without opt-in
  uint32_t max_shared_per_block_optin = 227 * 1024;  // sm_90
  uint32_t max_grid_x = 0x7fffffff, max_grid_y = 65535, max_grid_z = 65535;
  uint32_t max_block_x = 1024, max_block_y = 1024, max_block_z = 64;
  uint32_t sm_count = 132;       // bounds cooperative launch sizes
  uint32_t clock_khz = 1980000;  // CU_DEVICE_ATTRIBUTE_CLOCK_RATE: %clock64 cycles per emulated ms
  size_t printf_fifo_bytes = 1 << 20;
  size_t stack_bytes_per_thread = 1024;
  // Host threads that run the blocks of one launch; 0: std::thread::hardware_concurrency().
  // Never more than the grid has blocks, and one for kernels with KernelDesc::serial_blocks.
  uint32_t worker_threads = 0;
  // Watchdog: a launch that runs longer than this (wall clock, from its start) is stopped and
  // fails with kTimeout naming a block still running. 0: no limit. Checked between slices of
  // block execution, never inside the instruction loop.
  uint64_t timeout_ms = 0;
  // Run KernelDesc::serial_blocks kernels one block at a time (the determinism rule). Only engine
  // tests that exercise cross-thread memory ordering clear it; the driver never does.
  bool serialize_order_dependent = true;
  // The key this driver writes into the tensor maps it encodes and requires of the maps
  // cp.async.bulk.tensor reads (TensorMapImage::key; the driver's CUSNAP_EMU_TENSOR_MAP_KEY).
  uint32_t tensor_map_key = kDefaultTensorMapKey;
};

// A parsed, lowered PTX module. Thread-safe for concurrent launches once variables are bound.
class Program {
 public:
  virtual ~Program() = default;
  virtual const std::vector<KernelDesc>& kernels() const = 0;
  virtual const std::vector<VariableDesc>& variables() const = 0;
  // Index into kernels()/variables(), or -1.
  virtual int find_kernel(std::string_view name) const = 0;
  virtual int find_variable(std::string_view name) const = 0;
  virtual void bind_variable(int index, uint64_t device_address) = 0;
  // Runs the whole grid to completion on the engine's worker threads (blocking).
  virtual LaunchResult launch(int kernel_index, const LaunchConfig& config, MemoryHost& memory,
                              const Limits& limits) = 0;
  // PTX ISA version and target of the source (e.g. 90 and 75 for `.version 9.0 .target sm_75`).
  virtual uint32_t ptx_version() const = 0;
  virtual uint32_t target_sm() const = 0;
};

enum class CompileStatus : uint8_t {
  kSuccess,
  kInvalidPtx,    // not valid PTX (CUDA_ERROR_INVALID_PTX)
  kNotSupported,  // valid PTX using an instruction/directive the emulator does not implement
                  // (CUDA_ERROR_NOT_SUPPORTED); `error` names it, its function and line
  kOutOfMemory,   // host memory exhausted (CUDA_ERROR_OUT_OF_MEMORY)
};

struct CompileResult {
  std::unique_ptr<Program> program;  // null on error
  std::string error;                 // "line L: what was expected, what was found"
  CompileStatus status = CompileStatus::kSuccess;
};

// Parses and lowers one PTX module (text, NUL-terminated or not).
CompileResult compile(std::string_view ptx_text);

}  // namespace cusnap::emu::ptx

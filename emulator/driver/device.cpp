// cuInit, versions and the one emulated device with its attribute table.
#include "driver/device.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "driver/api.h"
#include "driver/state.h"

namespace cusnap::emu::driver {
namespace {

// H100/H200-like values; the compute capability comes from CUSNAP_EMU_SM. Limits the
// interpreter enforces (threads, block and grid dimensions, shared memory) agree with
// ptx::Limits, which the launch path fills from the same numbers.
struct AttributeValue {
  CUdevice_attribute attribute;
  int value;
};

constexpr AttributeValue kAttributes[] = {
    {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 48 * 1024},
    {CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, 64 * 1024},
    {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
    {CU_DEVICE_ATTRIBUTE_MAX_PITCH, 2147483647},
    {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536},
    {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 1980000},
    {CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 512},
    {CU_DEVICE_ATTRIBUTE_GPU_OVERLAP, 1},
    {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132},
    {CU_DEVICE_ATTRIBUTE_INTEGRATED, 0},
    {CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 1},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, CU_COMPUTEMODE_DEFAULT},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH, 131072},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH, 131072},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT, 65536},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH, 16384},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT, 16384},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH, 16384},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS, 2048},
    {CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT, 512},
    {CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, 1},
    {CU_DEVICE_ATTRIBUTE_ECC_ENABLED, 0},
    {CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 0},
    {CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, 0},
    {CU_DEVICE_ATTRIBUTE_TCC_DRIVER, 0},
    {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 2619000},
    {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 5120},
    {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 50 * 1024 * 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048},
    {CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 3},
    {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS, 2048},
    {CU_DEVICE_ATTRIBUTE_CAN_TEX2D_GATHER, 1},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE, 8192},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE, 8192},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE, 32768},
    {CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, 0},
    {CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, 32},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS, 2046},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH, 131072},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT, 65536},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH, 16384},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT, 16384},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH, 16384},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_LAYERS, 2048},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_HEIGHT, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS, 2048},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS, 2046},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH, 268435456},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH, 131072},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT, 65000},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH, 2097120},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 228 * 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 65536},
    {CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1},
    {CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD, 0},
    {CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID, 0},
    {CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO, 2},
    {CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, 0},
    {CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 1},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, 1},
    {CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1, 1},
    {CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1, 1},
    {CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR_V1, 1},
    {CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 1},
    {CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH, 0},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 227 * 1024},
    {CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES, 1},
    {CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, 0},
    {CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST, 0},
    {CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, 0},
    {CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED, 0},
    {CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED, 0},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 32},
    {CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED, 0},
    {CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, 0},
    {CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE, 134213632},
    {CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, 0},
    {CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, 1024},
    {CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED, 0},
    {CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED, 0},
    {CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED, 0},
    {CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS, 0},
    {CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING, 0},
    {CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES, 0},
    {CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED, 0},
    {CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, 1},
    {CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR, 1},
    {CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, 0},
    {CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED, 0},
    {CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT, 4},
    {CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED, 0},
    {CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, 0},
    // The host cannot call the emulator's device functions (interpreted PTX).
    {CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS, 0},
    {CU_DEVICE_ATTRIBUTE_NUMA_CONFIG, CU_DEVICE_NUMA_CONFIG_NONE},
    {CU_DEVICE_ATTRIBUTE_NUMA_ID, -1},
    {CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, 0},
    {CU_DEVICE_ATTRIBUTE_MPS_ENABLED, 0},
    {CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, -1},
    {CU_DEVICE_ATTRIBUTE_D3D12_CIG_SUPPORTED, 0},
    {CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK, 0},
    {CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_MAXIMUM_LENGTH, 0},
    {CU_DEVICE_ATTRIBUTE_VULKAN_CIG_SUPPORTED, 0},
    {CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID, 0},
    {CU_DEVICE_ATTRIBUTE_GPU_PCI_SUBSYSTEM_ID, 0},
    {CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0},
    {CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED, 0},
    {CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED, 0},
    {CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED, 0},
    {CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0},
    {CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED, 0},
    {CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED, 0},
};

// A fixed, recognisable UUID: "cusnap-emulator" + NUL.
constexpr char kUuid[16] = {'c', 'u', 's', 'n', 'a', 'p', '-', 'e',
                            'm', 'u', 'l', 'a', 't', 'o', 'r', '\0'};

}  // namespace

bool device_attribute(CUdevice_attribute attribute, int* value) {
  if (attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) {
    *value = device_config().sm / 10;
    return true;
  }
  if (attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR) {
    *value = device_config().sm % 10;
    return true;
  }
  if (attribute == CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH) {  // thread block clusters: sm_90 on
    *value = device_config().sm >= 90 ? 1 : 0;
    return true;
  }
  if (attribute == CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT) {
    *value = device_config().timeout_seconds > 0 ? 1 : 0;  // the CUSNAP_EMU_TIMEOUT watchdog
    return true;
  }
  for (const auto& entry : kAttributes) {
    if (entry.attribute == attribute) {
      *value = entry.value;
      return true;
    }
  }
  return false;
}

ptx::Limits engine_limits() {
  ptx::Limits limits;  // the defaults are the sm_90 numbers of the table above
  int value = 0;
  if (device_attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &value))
    limits.sm_count = static_cast<uint32_t>(value);
  if (device_attribute(CU_DEVICE_ATTRIBUTE_CLOCK_RATE, &value))
    limits.clock_khz = static_cast<uint32_t>(value);
  const double timeout = device_config().timeout_seconds;
  // Rounded up: a positive limit is never 0 ms (which would mean "off").
  limits.timeout_ms = timeout > 0 ? static_cast<uint64_t>(std::ceil(timeout * 1000.0)) : 0;
  limits.tensor_map_key = device_config().tensor_map_key;
  return limits;
}

}  // namespace cusnap::emu::driver

using namespace cusnap::emu::driver;

CUSNAP_EXPORT CUresult CUDAAPI cuInit(unsigned int Flags) {
  return guarded("cuInit", [&] { return initialize(Flags); });
}

CUSNAP_EXPORT CUresult CUDAAPI cuDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = kDriverVersion;
  return CUDA_SUCCESS;
}

CUSNAP_EXPORT CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}

CUSNAP_EXPORT CUresult CUDAAPI cuDeviceGetCount(int* count) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = 1;
  return CUDA_SUCCESS;
}

CUSNAP_EXPORT CUresult CUDAAPI cuDeviceGetName(char* name, int len, CUdevice dev) {
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  const std::string& text = device_config().name;
  size_t n = std::min(text.size(), static_cast<size_t>(len - 1));
  std::memcpy(name, text.data(), n);
  name[n] = '\0';
  return CUDA_SUCCESS;
}

CUSNAP_EXPORT CUresult CUDAAPI cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(uuid->bytes, kUuid, sizeof kUuid);
  return CUDA_SUCCESS;
}

CUSNAP_EXPORT CUresult CUDAAPI cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  return cuDeviceGetUuid(uuid, dev);
}

CUSNAP_EXPORT CUresult CUDAAPI cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *bytes = device_config().total_memory;
  return CUDA_SUCCESS;
}

CUSNAP_EXPORT CUresult CUDAAPI cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib,
                                                    CUdevice dev) {
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  if (pi == nullptr || !device_attribute(attrib, pi)) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

// Device code and the host share one memory, and the PTX engine's atom/red are C++ atomic
// read-modify-writes on it, so every scalar operation the engine implements is as atomic against
// the host's atomics as against other threads (HOST_NATIVE_ATOMIC_SUPPORTED is 1). The bits per
// operation are the widths and kinds the engine's `atom` has: 32 and 64 bits (inc/dec: u32 only),
// signed and unsigned integers, float add; no float min/max, 128-bit or vector atomics (refused
// at module load).
CUSNAP_EXPORT CUresult CUDAAPI
cuDeviceGetHostAtomicCapabilities(unsigned int* capabilities, const CUatomicOperation* operations,
                                  unsigned int count, CUdevice dev) {
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  if (capabilities == nullptr || operations == nullptr || count == 0)
    return CUDA_ERROR_INVALID_VALUE;
  constexpr unsigned kInteger = CU_ATOMIC_CAPABILITY_SIGNED | CU_ATOMIC_CAPABILITY_UNSIGNED |
                                CU_ATOMIC_CAPABILITY_REDUCTION | CU_ATOMIC_CAPABILITY_SCALAR_32 |
                                CU_ATOMIC_CAPABILITY_SCALAR_64;
  constexpr unsigned kFloat = CU_ATOMIC_CAPABILITY_REDUCTION | CU_ATOMIC_CAPABILITY_SCALAR_32 |
                              CU_ATOMIC_CAPABILITY_SCALAR_64;
  std::vector<unsigned> answer(count);
  for (unsigned i = 0; i < count; ++i) {
    switch (operations[i]) {
      case CU_ATOMIC_OPERATION_INTEGER_ADD:
      case CU_ATOMIC_OPERATION_INTEGER_MIN:
      case CU_ATOMIC_OPERATION_INTEGER_MAX:
      case CU_ATOMIC_OPERATION_AND:
      case CU_ATOMIC_OPERATION_OR:
      case CU_ATOMIC_OPERATION_XOR:
        answer[i] = kInteger;
        break;
      case CU_ATOMIC_OPERATION_INTEGER_INCREMENT:
      case CU_ATOMIC_OPERATION_INTEGER_DECREMENT:
        answer[i] = CU_ATOMIC_CAPABILITY_UNSIGNED | CU_ATOMIC_CAPABILITY_REDUCTION |
                    CU_ATOMIC_CAPABILITY_SCALAR_32;
        break;
      case CU_ATOMIC_OPERATION_EXCHANGE:
      case CU_ATOMIC_OPERATION_CAS:
        answer[i] = kInteger & ~CU_ATOMIC_CAPABILITY_REDUCTION;
        break;
      case CU_ATOMIC_OPERATION_FLOAT_ADD:
        answer[i] = kFloat;
        break;
      case CU_ATOMIC_OPERATION_FLOAT_MIN:  // no atom.min/max.f32/f64 in the PTX engine
      case CU_ATOMIC_OPERATION_FLOAT_MAX:
        answer[i] = 0;
        break;
      default:
        return CUDA_ERROR_INVALID_VALUE;  // nothing written
    }
  }
  std::copy(answer.begin(), answer.end(), capabilities);
  return CUDA_SUCCESS;
}

CUSNAP_EXPORT CUresult CUDAAPI cuDeviceComputeCapability(int* major, int* minor, CUdevice dev) {
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  if (major == nullptr || minor == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *major = device_config().sm / 10;
  *minor = device_config().sm % 10;
  return CUDA_SUCCESS;
}

CUSNAP_EXPORT CUresult CUDAAPI cuDeviceGetPCIBusId(char* pciBusId, int len, CUdevice dev) {
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  if (pciBusId == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  static constexpr char kBusId[] = "0000:00:00.0";
  size_t n = std::min(sizeof kBusId - 1, static_cast<size_t>(len - 1));
  std::memcpy(pciBusId, kBusId, n);
  pciBusId[n] = '\0';
  return CUDA_SUCCESS;
}

CUSNAP_EXPORT CUresult CUDAAPI cuDeviceGetByPCIBusId(CUdevice* dev, const char* pciBusId) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  if (dev == nullptr || pciBusId == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (std::strcmp(pciBusId, "0000:00:00.0") != 0 && std::strcmp(pciBusId, "00:00.0") != 0) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  *dev = 0;
  return CUDA_SUCCESS;
}

CUSNAP_EXPORT CUresult CUDAAPI cuDeviceCanAccessPeer(int* canAccessPeer, CUdevice dev,
                                                     CUdevice peerDev) {
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  if (CUresult r = check_device(peerDev); r != CUDA_SUCCESS) return r;
  if (canAccessPeer == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *canAccessPeer = 0;
  return CUDA_SUCCESS;
}

// One device: every pair of devices is invalid or the same device, which both P2P queries answer
// with CUDA_ERROR_INVALID_DEVICE, as documented.
CUSNAP_EXPORT CUresult CUDAAPI cuDeviceGetP2PAttribute(int*, CUdevice_P2PAttribute, CUdevice,
                                                       CUdevice) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  return CUDA_ERROR_INVALID_DEVICE;
}

CUSNAP_EXPORT CUresult CUDAAPI cuDeviceGetP2PAtomicCapabilities(unsigned int*,
                                                                const CUatomicOperation*,
                                                                unsigned int, CUdevice, CUdevice) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  return CUDA_ERROR_INVALID_DEVICE;
}

CUSNAP_EXPORT CUresult CUDAAPI cuDeviceGetProperties(CUdevprop* prop, CUdevice dev) {
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  if (prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto get = [](CUdevice_attribute a) {
    int v = 0;
    device_attribute(a, &v);
    return v;
  };
  prop->maxThreadsPerBlock = get(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  prop->maxThreadsDim[0] = get(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
  prop->maxThreadsDim[1] = get(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y);
  prop->maxThreadsDim[2] = get(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
  prop->maxGridSize[0] = get(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
  prop->maxGridSize[1] = get(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
  prop->maxGridSize[2] = get(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
  prop->sharedMemPerBlock = get(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  prop->totalConstantMemory = get(CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY);
  prop->SIMDWidth = get(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  prop->memPitch = get(CU_DEVICE_ATTRIBUTE_MAX_PITCH);
  prop->regsPerBlock = get(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  prop->clockRate = get(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  prop->textureAlign = get(CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT);
  return CUDA_SUCCESS;
}

// Async notifications: the only kind is CU_ASYNC_NOTIFICATION_TYPE_OVER_BUDGET, and the emulated
// device has no budget to exceed (an allocation beyond its memory fails instead), so a
// registered callback is kept until unregistered and never called.
namespace {
struct AsyncCallback {
  CUasyncCallback fn;
  void* user_data;
};
}  // namespace

CUSNAP_EXPORT CUresult CUDAAPI cuDeviceRegisterAsyncNotification(CUdevice device,
                                                                 CUasyncCallback callbackFunc,
                                                                 void* userData,
                                                                 CUasyncCallbackHandle* callback) {
  return guarded("cuDeviceRegisterAsyncNotification", [&] {
    if (CUresult r = check_device(device); r != CUDA_SUCCESS) return r;
    if (callbackFunc == nullptr || callback == nullptr) return CUDA_ERROR_INVALID_VALUE;
    auto* entry = new AsyncCallback{callbackFunc, userData};
    register_handle(entry, HandleKind::kAsyncCallback);
    *callback = reinterpret_cast<CUasyncCallbackHandle>(entry);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuDeviceUnregisterAsyncNotification(CUdevice device,
                                                                   CUasyncCallbackHandle callback) {
  return guarded("cuDeviceUnregisterAsyncNotification", [&] {
    if (CUresult r = check_device(device); r != CUDA_SUCCESS) return r;
    auto* entry = handle_cast<AsyncCallback>(callback, HandleKind::kAsyncCallback);
    if (entry == nullptr) return CUDA_ERROR_INVALID_VALUE;
    destroy_handle(entry, HandleKind::kAsyncCallback);
    return CUDA_SUCCESS;
  });
}

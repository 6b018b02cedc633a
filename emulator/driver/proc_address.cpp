// cuGetProcAddress (answered ABI-exactly from the generated table), cuGetExportTable and the
// error strings.
#include <algorithm>
#include <cstring>
#include <string_view>

#include "driver/access_tracking.h"
#include "driver/api.h"
#include "driver/state.h"

namespace cusnap::emu::driver {
namespace {

enum class ProcStream : uint8_t { kDefaultStream, kPerThreadStream };

struct ProcEntry {
  const char* name;
  int version;
  ProcStream stream;
  void* function;
};

const ProcEntry kProcTable[] = {
#include "generated_proc_table.inc"
};

struct ErrorEntry {
  int value;
  const char* name;
  const char* description;
};

const ErrorEntry kErrors[] = {
#include "generated_errors.inc"
};

// cuGetErrorString as NVIDIA's driver words it, for the codes whose wording could be confirmed
// from programs that print the driver's own string (cuGetErrorName + ": " + cuGetErrorString
// in CuPy's, TensorFlow's, XLA's and ffmpeg's error messages, Triton's "Triton Error [CUDA]: ...").
// Every other code answers the first sentence of its cuda.h documentation (generated_errors.inc),
// which says the same thing in other words; docs/emulator.md lists which is which.
struct DriverWording {
  CUresult value;
  const char* text;
};

constexpr DriverWording kDriverWording[] = {
    {CUDA_SUCCESS, "no error"},
    {CUDA_ERROR_INVALID_VALUE, "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "invalid device context"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device"},
    {CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed"},
    {CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "named symbol not found"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch"},
    {CUDA_ERROR_LAUNCH_TIMEOUT, "the launch timed out and was terminated"},
    {CUDA_ERROR_ASSERT, "device-side assert triggered"},
    {CUDA_ERROR_ILLEGAL_INSTRUCTION, "an illegal instruction was encountered"},
    {CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned address"},
    {CUDA_ERROR_INVALID_PC, "invalid program counter"},
    {CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"},
    {CUDA_ERROR_NOT_PERMITTED, "operation not permitted"},
    {CUDA_ERROR_NOT_SUPPORTED, "operation not supported"},
    {CUDA_ERROR_UNKNOWN, "unknown error"},
};

const ErrorEntry* find_error(CUresult error) {
  for (const auto& entry : kErrors) {
    if (entry.value == static_cast<int>(error)) return &entry;
  }
  return nullptr;
}

}  // namespace

// The symbol for `name` at `version`: the newest ABI not newer than `version`, taking the
// per-thread-default-stream variant when asked for and one exists at that version or earlier.
// Sets *too_old when the name exists but only at later versions.
void* lookup_proc(std::string_view name, int version, bool per_thread, bool* too_old) {
  *too_old = false;
  auto first = std::lower_bound(
      std::begin(kProcTable), std::end(kProcTable), name,
      [](const ProcEntry& entry, std::string_view key) { return entry.name < key; });
  auto last = first;
  while (last != std::end(kProcTable) && last->name == name) ++last;
  if (first == last) return nullptr;
  const ProcEntry* best_default = nullptr;
  const ProcEntry* best_per_thread = nullptr;
  for (auto it = first; it != last; ++it) {
    if (it->version > version) continue;
    const ProcEntry*& best =
        it->stream == ProcStream::kPerThreadStream ? best_per_thread : best_default;
    if (best == nullptr || it->version > best->version) best = &*it;
  }
  if (per_thread && best_per_thread != nullptr) return best_per_thread->function;
  if (best_default != nullptr) return best_default->function;
  *too_old = true;
  return nullptr;
}

}  // namespace cusnap::emu::driver

using namespace cusnap::emu::driver;

namespace {

CUresult get_proc_address(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                          CUdriverProcAddressQueryResult* status) {
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if ((flags & ~static_cast<cuuint64_t>(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                                        CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  bool too_old = false;
  *pfn = lookup_proc(symbol, cudaVersion, per_thread, &too_old);
  if (status != nullptr) {
    *status = *pfn != nullptr ? CU_GET_PROC_ADDRESS_SUCCESS
              : too_old       ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                              : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  }
  if (*pfn == nullptr && *symbol != '\0') {
    log(LogLevel::kDebug, "cuGetProcAddress(%s, %d, flags=%llu): %s", symbol, cudaVersion,
        static_cast<unsigned long long>(flags),
        too_old ? "version not sufficient" : "unknown symbol");
  }
  // Unknown names are answered with success and a null pointer, as documented for the driver.
  return CUDA_SUCCESS;
}

}  // namespace

CUSNAP_EXPORT CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion,
                                                cuuint64_t flags) {
  return guarded("cuGetProcAddress",
                 [&] { return get_proc_address(symbol, pfn, cudaVersion, flags, nullptr); });
}

CUSNAP_EXPORT CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion,
                                                   cuuint64_t flags,
                                                   CUdriverProcAddressQueryResult* symbolStatus) {
  return guarded("cuGetProcAddress_v2",
                 [&] { return get_proc_address(symbol, pfn, cudaVersion, flags, symbolStatus); });
}

CUSNAP_EXPORT CUresult CUDAAPI cuGetExportTable(const void** ppExportTable,
                                                const CUuuid* pExportTableId) {
  // One table of its own (access tracking, docs/emulator.md). The private tables the CUDA
  // runtime asks for are undocumented; the emulator serves driver-API programs and says so.
  if (ppExportTable == nullptr || pExportTableId == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *ppExportTable = nullptr;
  if (std::memcmp(pExportTableId->bytes, cusnap::common::kEmulatorAccessTableId,
                  sizeof pExportTableId->bytes) == 0) {
    *ppExportTable = access_table();
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUSNAP_EXPORT CUresult CUDAAPI cuGetErrorName(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorEntry* entry = find_error(error);
  *pStr = entry != nullptr ? entry->name : nullptr;
  return entry != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUSNAP_EXPORT CUresult CUDAAPI cuGetErrorString(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (const DriverWording& w : kDriverWording) {
    if (w.value == error) {
      *pStr = w.text;
      return CUDA_SUCCESS;
    }
  }
  const ErrorEntry* entry = find_error(error);
  *pStr = entry != nullptr ? entry->description : nullptr;
  return entry != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

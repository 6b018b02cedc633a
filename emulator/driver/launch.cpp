// Kernel launches: cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel (+ _ptsz), and
// the legacy execution control (cuFuncSetBlockShape, cuFuncSetSharedSize, cuParamSet*,
// cuLaunch, cuLaunchGrid, cuLaunchGridAsync) that older bindings still launch with.
// The configuration and parameters are checked and copied at call time (errors there are
// returned synchronously, as on a GPU); the kernel then runs on the stream's worker thread and
// a failure poisons the context (see context.h).
#include "driver/launch.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "driver/access_tracking.h"
#include "driver/api.h"
#include "driver/context.h"
#include "driver/device.h"
#include "driver/graph.h"
#include "driver/inject.h"
#include "driver/memory.h"
#include "driver/module.h"
#include "driver/state.h"
#include "driver/stats.h"

namespace cusnap::emu::driver {
int max_dynamic_shared(const Function& f);
int max_threads_per_block(const Function& f);
}  // namespace cusnap::emu::driver

using namespace cusnap::emu::driver;
namespace ptx = cusnap::emu::ptx;

namespace {

CUresult status_to_result(ptx::LaunchStatus status) {
  switch (status) {
    case ptx::LaunchStatus::kSuccess:
      return CUDA_SUCCESS;
    case ptx::LaunchStatus::kIllegalAddress:
      return CUDA_ERROR_ILLEGAL_ADDRESS;
    case ptx::LaunchStatus::kMisalignedAddress:
      return CUDA_ERROR_MISALIGNED_ADDRESS;
    case ptx::LaunchStatus::kAssert:
      return CUDA_ERROR_ASSERT;
    case ptx::LaunchStatus::kIllegalInstruction:
      return CUDA_ERROR_ILLEGAL_INSTRUCTION;
    case ptx::LaunchStatus::kInvalidValue:
      return CUDA_ERROR_INVALID_VALUE;
    case ptx::LaunchStatus::kOutOfResources:
      return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
    case ptx::LaunchStatus::kCooperativeTooLarge:
      return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
    case ptx::LaunchStatus::kHung:
      return CUDA_ERROR_LAUNCH_TIMEOUT;
    case ptx::LaunchStatus::kTimeout:
      return CUDA_ERROR_LAUNCH_TIMEOUT;
  }
  return CUDA_ERROR_UNKNOWN;
}

// CUSNAP_EMU_THREADS: host threads that run a launch's blocks (default: one per CPU). Read once.
uint32_t worker_threads() {
  static const uint32_t threads = [] {
    const char* text = std::getenv("CUSNAP_EMU_THREADS");
    if (text == nullptr || *text == '\0') return 0u;
    char* end = nullptr;
    unsigned long n = std::strtoul(text, &end, 10);
    if (*end != '\0' || n == 0 || n > 4096) {
      log(LogLevel::kWarn,
          "CUSNAP_EMU_THREADS=%s is not a thread count in [1, 4096]; using one per CPU", text);
      return 0u;
    }
    return static_cast<uint32_t>(n);
  }();
  return threads;
}

CUresult pack_params(const Function& f, void** kernelParams, void** extra,
                     std::vector<uint8_t>* out) {
  const ptx::KernelDesc& d = *f.desc;
  if (kernelParams != nullptr && extra != nullptr) return CUDA_ERROR_INVALID_VALUE;
  out->assign(d.param_bytes, 0);
  if (kernelParams != nullptr) {
    for (size_t i = 0; i < d.params.size(); ++i) {
      if (kernelParams[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
      std::memcpy(out->data() + d.params[i].offset, kernelParams[i], d.params[i].size);
    }
    return CUDA_SUCCESS;
  }
  if (extra != nullptr) {
    const void* buffer = nullptr;
    size_t size = 0;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
        buffer = extra[i + 1];
      } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
        if (extra[i + 1] == nullptr) return CUDA_ERROR_INVALID_VALUE;
        size = *static_cast<const size_t*>(extra[i + 1]);
      } else {
        return CUDA_ERROR_INVALID_VALUE;
      }
    }
    if (d.param_bytes > 0 && (buffer == nullptr || size < d.param_bytes))
      return CUDA_ERROR_INVALID_VALUE;
    if (d.param_bytes > 0) std::memcpy(out->data(), buffer, d.param_bytes);
    return CUDA_SUCCESS;
  }
  return d.params.empty() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// Byte-granular access sets (ascending) as `chunk_bytes` chunks (a power of two; 0: none).
std::vector<uint64_t> coarsen(std::vector<uint64_t> bytes, uint64_t chunk_bytes) {
  if (chunk_bytes == 0) return {};
  for (uint64_t& a : bytes) a &= ~(chunk_bytes - 1);
  bytes.erase(std::unique(bytes.begin(), bytes.end()), bytes.end());
  return bytes;
}

// CUSNAP_EMU_INJECT on a launch that ran (docs/emulator.md, "Fault injection"): flip bit 0 of
// the lowest-addressed byte it stored to driver memory (device addresses are host addresses),
// multiply its emulated time. Said at info level, so a user sees the fault is deliberate.
void apply_injection(const std::string& kernel, const InjectPlan& plan, ptx::LaunchResult* r) {
  if (plan.flip) {
    if (r->written_chunks.empty()) {
      log(LogLevel::kInfo, "CUSNAP_EMU_INJECT: flip: kernel %s stored nothing to global memory",
          kernel.c_str());
    } else {
      const uint64_t address = r->written_chunks.front();
      *reinterpret_cast<uint8_t*>(address) ^= 1u;
      log(LogLevel::kInfo, "CUSNAP_EMU_INJECT: flip: bit 0 of the byte at 0x%llx stored by %s",
          static_cast<unsigned long long>(address), kernel.c_str());
    }
  }
  if (plan.slow != 1.0) {
    const uint64_t before = r->emulated_ns;
    r->emulated_ns = static_cast<uint64_t>(std::llround(static_cast<double>(before) * plan.slow));
    log(LogLevel::kInfo, "CUSNAP_EMU_INJECT: slow: kernel %s emulated time %llu ns -> %llu ns",
        kernel.c_str(), static_cast<unsigned long long>(before),
        static_cast<unsigned long long>(r->emulated_ns));
  }
}

}  // namespace

namespace cusnap::emu::driver {

ptx::Dim3 required_cluster(const Function& f) {
  const ptx::Dim3& d = f.desc->reqnctapercluster;
  if (d.x != 0) return d;
  const int x = f.required_cluster[0].load(), y = f.required_cluster[1].load(),
            z = f.required_cluster[2].load();
  if (x <= 0 || y <= 0 || z <= 0) return ptx::Dim3{0, 0, 0};
  return ptx::Dim3{static_cast<uint32_t>(x), static_cast<uint32_t>(y), static_cast<uint32_t>(z)};
}

CUresult launch_cluster(const Function& f, const LaunchRequest& request, ptx::Dim3* out) {
  const ptx::Dim3 required = required_cluster(f);
  const bool has_required = required.x != 0;
  ptx::Dim3 c = request.cluster;
  if (!request.cluster_given) {
    if (!has_required && f.desc->explicit_cluster) {
      log(LogLevel::kError,
          "launch of %s: the kernel is compiled for cluster launches "
          "(.explicitcluster) and no CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION was given",
          f.desc->name.c_str());
      return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    }
    c = has_required ? required : ptx::Dim3{1, 1, 1};
  } else if (has_required && (c.x != required.x || c.y != required.y || c.z != required.z)) {
    log(LogLevel::kError, "launch of %s: cluster %ux%ux%u differs from the required %ux%ux%u",
        f.desc->name.c_str(), c.x, c.y, c.z, required.x, required.y, required.z);
    return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  }
  const ptx::Dim3& g = request.grid;
  const uint64_t limit = f.non_portable_cluster.load() != 0 ? 16 : 8;
  if (c.count() == 0 || g.x % c.x || g.y % c.y || g.z % c.z || c.count() > limit ||
      (f.desc->max_cluster_rank != 0 && c.count() > f.desc->max_cluster_rank)) {
    log(LogLevel::kError,
        "launch of %s: cluster %ux%ux%u cannot be formed (it must divide the grid %ux%ux%u and "
        "have at most %llu CTAs%s)",
        f.desc->name.c_str(), c.x, c.y, c.z, g.x, g.y, g.z,
        static_cast<unsigned long long>(f.desc->max_cluster_rank != 0
                                            ? std::min<uint64_t>(limit, f.desc->max_cluster_rank)
                                            : limit),
        limit == 8 ? "; 16 with CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED" : "");
    return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  }
  *out = c;
  return CUDA_SUCCESS;
}

CUresult prepare_launch(Function* f, const LaunchRequest& request, void** kernelParams,
                        void** extra, PreparedLaunch* out) {
  const ptx::Limits limits = engine_limits();
  const auto& g = request.grid;
  const auto& b = request.block;
  if (g.count() == 0 || b.count() == 0 || g.x > limits.max_grid_x || g.y > limits.max_grid_y ||
      g.z > limits.max_grid_z || b.x > limits.max_block_x || b.y > limits.max_block_y ||
      b.z > limits.max_block_z || b.count() > static_cast<uint64_t>(max_threads_per_block(*f))) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (request.shared > static_cast<unsigned>(max_dynamic_shared(*f)))
    return CUDA_ERROR_INVALID_VALUE;
  ptx::Dim3 cluster;
  if (CUresult r = launch_cluster(*f, request, &cluster); r != CUDA_SUCCESS) return r;
  if (request.cooperative) {
    int per_sm = 0, threads_per_sm = 0;
    device_attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, &per_sm);
    device_attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, &threads_per_sm);
    uint64_t resident = std::min<uint64_t>(per_sm, threads_per_sm / b.count()) * limits.sm_count;
    if (g.count() > resident) return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
  }
  auto params = std::make_shared<std::vector<uint8_t>>();
  if (CUresult r = pack_params(*f, kernelParams, extra, params.get()); r != CUDA_SUCCESS) return r;
  out->function = f;
  out->request = request;
  out->request.cluster = cluster;
  out->request.cluster_given = true;  // the shape is decided: a graph node keeps it
  out->params = std::move(params);
  return CUDA_SUCCESS;
}

Stream::Work launch_work(Context* ctx, const PreparedLaunch& launch) {
  Function* f = launch.function;
  const LaunchRequest& request = launch.request;
  ptx::Limits limits = engine_limits();
  limits.worker_threads = worker_threads();
  limits.max_shared_per_block = std::max<uint32_t>(limits.max_shared_per_block,
                                                   f->desc->static_shared_bytes + request.shared);
  ptx::LaunchConfig config;
  config.grid = request.grid;
  config.block = request.block;
  config.dynamic_shared_bytes = request.shared;
  config.cooperative = request.cooperative;
  config.cluster = request.cluster;
  // Access tracking is decided when the launch is queued, as everything else about it.
  config.track_chunk_bytes = tracking_chunk_bytes();
  config.heap = ctx->device_heap();
  Module* module = f->module;
  int index = f->index;
  // CUSNAP_EMU_INJECT (inject.h): a flip needs the bytes the launch stored, so it tracks at byte
  // granularity; what the caller of access tracking asked for is rebuilt from that afterwards.
  const InjectPlan inject = inject_rules().empty()
                                ? InjectPlan{}
                                : inject_rules().plan_for(module->program->kernels()[index].name);
  const uint64_t asked_chunk_bytes = config.track_chunk_bytes;
  if (inject.flip) config.track_chunk_bytes = 1;
  // Counts this launch until the queued work (every copy of it) is gone: after it ran, or if
  // queueing it failed. Unloading the module waits for the count to drop to zero.
  struct InFlight {
    Module* module;
    explicit InFlight(Module* m) : module(m) { module->launches_in_flight.fetch_add(1); }
    ~InFlight() {
      if (module->launches_in_flight.fetch_sub(1) == 1) module->launches_in_flight.notify_all();
    }
  };
  auto in_flight = std::make_shared<InFlight>(module);
  auto params = launch.params;
  return [ctx, module, index, config, params, limits, in_flight, inject,
          asked_chunk_bytes]() mutable -> uint64_t {
    if (ctx->sticky_error() != CUDA_SUCCESS) return 0;  // a dead context runs nothing
    config.params = params->data();
    config.params_size = params->size();
    config.start_ns = current_operation_start_ns();
    const bool timed = stats_enabled();  // the clock is read only when the counts are kept
    const auto start =
        timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    ptx::LaunchResult result = module->program->launch(index, config, allocations(), limits);
    if (timed) {
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
      note_execution(module->program->kernels()[index].name, result.instructions,
                     result.thread_instructions, took.count());
    }
    if (result.status != ptx::LaunchStatus::kSuccess) {
      CUresult error = status_to_result(result.status);
      const char* name = module->program->kernels()[index].name.c_str();
      log(LogLevel::kError, "kernel %s failed (%d): %s", name, static_cast<int>(error),
          result.message.c_str());
      ctx->set_sticky_error(error);
    }
    if (inject.any() && result.status == ptx::LaunchStatus::kSuccess) {
      apply_injection(module->program->kernels()[index].name, inject, &result);
    }
    if (inject.flip) {
      result.read_chunks = coarsen(std::move(result.read_chunks), asked_chunk_bytes);
      result.written_chunks = coarsen(std::move(result.written_chunks), asked_chunk_bytes);
    }
    if (asked_chunk_bytes != 0) {
      note_tracked_launch(module->program->kernels()[index].name, status_to_result(result.status),
                          asked_chunk_bytes, std::move(result.read_chunks),
                          std::move(result.written_chunks));
    }
    return result.emulated_ns;
  };
}

}  // namespace cusnap::emu::driver

namespace {

// `legacy_params`: the parameter buffer of a cuLaunch/cuLaunchGrid[Async] call, already built
// from the function's legacy state; null for the cuLaunchKernel* family, which takes
// kernelParams/extra and invalidates the legacy state (see LegacyLaunchState).
CUresult launch(CUfunction handle, const LaunchRequest& request, void** kernelParams, void** extra,
                bool per_thread, std::vector<uint8_t>* legacy_params = nullptr) {
  Context* ctx;
  Stream* stream;
  if (CUresult r = stream_argument(request.stream, per_thread, &ctx, &stream); r != CUDA_SUCCESS)
    return r;
  Function* f = function_from_handle(handle);
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (legacy_params == nullptr) {
    std::lock_guard lock(f->legacy_mutex);
    f->legacy = LegacyLaunchState{};
  }
  PreparedLaunch prepared;
  if (legacy_params != nullptr) {
    // The legacy buffer is the kernel's whole parameter buffer: handed over as `extra` would be.
    size_t size = legacy_params->size();
    void* extra_buffer[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, legacy_params->data(),
                            CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
    if (CUresult r = prepare_launch(f, request, nullptr, extra_buffer, &prepared);
        r != CUDA_SUCCESS) {
      return r;
    }
  } else if (CUresult r = prepare_launch(f, request, kernelParams, extra, &prepared);
             r != CUDA_SUCCESS) {
    return r;
  }
  bool captured = false;
  if (CUresult r = capture_launch(stream, prepared, &captured); r != CUDA_SUCCESS || captured)
    return r;
  ctx->submit(stream, launch_work(ctx, prepared));
  return CUDA_SUCCESS;
}

LaunchRequest request_from(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                           unsigned bz, unsigned shared, CUstream stream) {
  LaunchRequest r;
  r.grid = {gx, gy, gz};
  r.block = {bx, by, bz};
  r.shared = shared;
  r.stream = stream;
  return r;
}

CUresult launch_ex(const CUlaunchConfig* config, CUfunction f, void** kernelParams, void** extra,
                   bool per_thread) {
  if (config == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LaunchRequest r =
      request_from(config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                   config->blockDimY, config->blockDimZ, config->sharedMemBytes, config->hStream);
  if (config->numAttrs > 0 && config->attrs == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    const CUlaunchAttribute& a = config->attrs[i];
    switch (a.id) {
      case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
        r.cooperative = a.value.cooperative != 0;
        break;
      case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
        r.cluster = {a.value.clusterDim.x, a.value.clusterDim.y, a.value.clusterDim.z};
        r.cluster_given = true;  // checked against the function in prepare_launch
        break;
      case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        // Where clusters are placed (a hint: the emulator has no SMs to spread them over).
        if (a.value.clusterSchedulingPolicyPreference > CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING)
          return CUDA_ERROR_INVALID_VALUE;
        break;
      default:
        break;  // scheduling hints (priority, access policy, PDL, ...) do not change results here
    }
  }
  return launch(f, r, kernelParams, extra, per_thread);
}

// The launch request and parameter buffer of a legacy launch, from the function's state.
CUresult legacy_launch(CUfunction handle, int grid_width, int grid_height, CUstream stream,
                       bool per_thread) {
  if (CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  Function* f = function_from_handle(handle);
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (grid_width <= 0 || grid_height <= 0) return CUDA_ERROR_INVALID_VALUE;
  LaunchRequest r;
  std::vector<uint8_t> params;
  {
    std::lock_guard lock(f->legacy_mutex);
    const LegacyLaunchState& s = f->legacy;
    if (s.block[0] == 0) {
      log(LogLevel::kError,
          "legacy launch of %s: no block shape (cuFuncSetBlockShape) since the function "
          "was loaded or last launched with cuLaunchKernel*",
          f->desc->name.c_str());
      return CUDA_ERROR_INVALID_VALUE;
    }
    const unsigned size = s.size_set ? s.param_size : 0;
    if (size < f->desc->param_bytes) {
      log(LogLevel::kError,
          "legacy launch of %s: the kernel takes %u bytes of parameters, cuParamSetSize "
          "gave %u",
          f->desc->name.c_str(), f->desc->param_bytes, size);
      return CUDA_ERROR_INVALID_VALUE;
    }
    r.block = {s.block[0], s.block[1], s.block[2]};
    r.shared = s.shared_bytes;
    params.assign(f->desc->param_bytes, 0);
    std::memcpy(params.data(), s.params.data(), std::min<size_t>(s.params.size(), params.size()));
  }
  r.grid = {static_cast<uint32_t>(grid_width), static_cast<uint32_t>(grid_height), 1};
  r.stream = stream;
  return launch(handle, r, nullptr, nullptr, per_thread, &params);
}

// Validates a legacy setter's function argument (a current context is required, as documented).
CUresult legacy_function(CUfunction handle, Function** out) {
  Context* ctx;
  if (CUresult r = require_context_any(&ctx); r != CUDA_SUCCESS) return r;
  *out = function_from_handle(handle);
  return *out != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult param_write(CUfunction handle, int offset, const void* data, unsigned size) {
  Function* f;
  if (CUresult r = legacy_function(handle, &f); r != CUDA_SUCCESS) return r;
  if (offset < 0 || (data == nullptr && size > 0) || size > kMaxParamBytes ||
      static_cast<unsigned>(offset) > kMaxParamBytes - size) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::lock_guard lock(f->legacy_mutex);
  std::vector<uint8_t>& buffer = f->legacy.params;
  if (buffer.size() < offset + size) buffer.resize(offset + size, 0);
  if (size > 0) std::memcpy(buffer.data() + offset, data, size);
  return CUDA_SUCCESS;
}

// CUSNAP_EMU_STATS: the outcome of every launch entry point call, by kernel name.
CUresult counted(CUfunction handle, CUresult result) {
  if (stats_enabled()) {
    const Function* f = result == CUDA_SUCCESS ? function_from_handle(handle) : nullptr;
    note_launch(f != nullptr ? std::string_view(f->desc->name) : std::string_view(), f != nullptr);
  }
  return result;
}

}  // namespace

CUSNAP_EXPORT CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX,
                                              unsigned int gridDimY, unsigned int gridDimZ,
                                              unsigned int blockDimX, unsigned int blockDimY,
                                              unsigned int blockDimZ, unsigned int sharedMemBytes,
                                              CUstream hStream, void** kernelParams, void** extra) {
  return guarded("cuLaunchKernel", [&] {
    return counted(f, launch(f,
                             request_from(gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
                                          blockDimZ, sharedMemBytes, hStream),
                             kernelParams, extra, kLegacyDefault));
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX,
                                                   unsigned int gridDimY, unsigned int gridDimZ,
                                                   unsigned int blockDimX, unsigned int blockDimY,
                                                   unsigned int blockDimZ,
                                                   unsigned int sharedMemBytes, CUstream hStream,
                                                   void** kernelParams, void** extra) {
  return guarded("cuLaunchKernel_ptsz", [&] {
    return counted(f, launch(f,
                             request_from(gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
                                          blockDimZ, sharedMemBytes, hStream),
                             kernelParams, extra, kPerThreadDefault));
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuLaunchCooperativeKernel(
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
    unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
    unsigned int sharedMemBytes, CUstream hStream, void** kernelParams) {
  return guarded("cuLaunchCooperativeKernel", [&] {
    LaunchRequest r = request_from(gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                                   sharedMemBytes, hStream);
    r.cooperative = true;
    return counted(f, launch(f, r, kernelParams, nullptr, kLegacyDefault));
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuLaunchCooperativeKernel_ptsz(
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
    unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
    unsigned int sharedMemBytes, CUstream hStream, void** kernelParams) {
  return guarded("cuLaunchCooperativeKernel_ptsz", [&] {
    LaunchRequest r = request_from(gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                                   sharedMemBytes, hStream);
    r.cooperative = true;
    return counted(f, launch(f, r, kernelParams, nullptr, kPerThreadDefault));
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f,
                                                void** kernelParams, void** extra) {
  return guarded("cuLaunchKernelEx", [&] {
    return counted(f, launch_ex(config, f, kernelParams, extra, kLegacyDefault));
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f,
                                                     void** kernelParams, void** extra) {
  return guarded("cuLaunchKernelEx_ptsz", [&] {
    return counted(f, launch_ex(config, f, kernelParams, extra, kPerThreadDefault));
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuFuncSetBlockShape(CUfunction hfunc, int x, int y, int z) {
  return guarded("cuFuncSetBlockShape", [&] {
    Function* f;
    if (CUresult r = legacy_function(hfunc, &f); r != CUDA_SUCCESS) return r;
    const ptx::Limits limits = engine_limits();
    if (x <= 0 || y <= 0 || z <= 0 || static_cast<uint32_t>(x) > limits.max_block_x ||
        static_cast<uint32_t>(y) > limits.max_block_y ||
        static_cast<uint32_t>(z) > limits.max_block_z) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    std::lock_guard lock(f->legacy_mutex);
    f->legacy.block[0] = static_cast<uint32_t>(x);
    f->legacy.block[1] = static_cast<uint32_t>(y);
    f->legacy.block[2] = static_cast<uint32_t>(z);
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuFuncSetSharedSize(CUfunction hfunc, unsigned int bytes) {
  return guarded("cuFuncSetSharedSize", [&] {
    Function* f;
    if (CUresult r = legacy_function(hfunc, &f); r != CUDA_SUCCESS) return r;
    std::lock_guard lock(f->legacy_mutex);
    f->legacy.shared_bytes = bytes;  // checked at launch, against the function's limit then
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuParamSetSize(CUfunction hfunc, unsigned int numbytes) {
  return guarded("cuParamSetSize", [&] {
    Function* f;
    if (CUresult r = legacy_function(hfunc, &f); r != CUDA_SUCCESS) return r;
    if (numbytes > kMaxParamBytes) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard lock(f->legacy_mutex);
    f->legacy.size_set = true;
    f->legacy.param_size = numbytes;
    return CUDA_SUCCESS;
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuParamSeti(CUfunction hfunc, int offset, unsigned int value) {
  return guarded("cuParamSeti", [&] { return param_write(hfunc, offset, &value, sizeof value); });
}

CUSNAP_EXPORT CUresult CUDAAPI cuParamSetf(CUfunction hfunc, int offset, float value) {
  return guarded("cuParamSetf", [&] { return param_write(hfunc, offset, &value, sizeof value); });
}

CUSNAP_EXPORT CUresult CUDAAPI cuParamSetv(CUfunction hfunc, int offset, void* ptr,
                                           unsigned int numbytes) {
  return guarded("cuParamSetv", [&] { return param_write(hfunc, offset, ptr, numbytes); });
}

CUSNAP_EXPORT CUresult CUDAAPI cuLaunch(CUfunction f) {
  return guarded("cuLaunch",
                 [&] { return counted(f, legacy_launch(f, 1, 1, nullptr, kLegacyDefault)); });
}

CUSNAP_EXPORT CUresult CUDAAPI cuLaunchGrid(CUfunction f, int grid_width, int grid_height) {
  return guarded("cuLaunchGrid", [&] {
    return counted(f, legacy_launch(f, grid_width, grid_height, nullptr, kLegacyDefault));
  });
}

CUSNAP_EXPORT CUresult CUDAAPI cuLaunchGridAsync(CUfunction f, int grid_width, int grid_height,
                                                 CUstream hStream) {
  return guarded("cuLaunchGridAsync", [&] {
    return counted(f, legacy_launch(f, grid_width, grid_height, hStream, kLegacyDefault));
  });
}

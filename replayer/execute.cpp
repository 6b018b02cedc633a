#include "replayer/execute.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <type_traits>

#include "cusnap/common/hex.h"
#include "cusnap/fatbin/fatbin.h"
#include "replayer/target.h"

namespace cusnap::replayer {
namespace {

namespace fb = cusnap::fatbin;

constexpr uint64_t kMaxInflightBytes = uint64_t{256} << 20;

using common::hex;

bool looks_like_text(const std::vector<uint8_t>& bytes) {
  static const uint8_t kElf[4] = {0x7f, 'E', 'L', 'F'};
  uint32_t magic = 0;
  if (bytes.size() >= 4) std::memcpy(&magic, bytes.data(), 4);
  return !(bytes.size() >= 4 &&
           (std::memcmp(bytes.data(), kElf, 4) == 0 || magic == fb::kContainerMagic));
}

// Source and destination of a 2D (CUDA_MEMCPY2D) or 3D (CUDA_MEMCPY3D) copy: the host side is the
// packed rectangle of the payload/checksum layout (pitch = width, height = rows), a device side
// keeps the captured pitch (and, in 3D, the captured slice height).
template <typename Copy>
void set_copy_endpoints(Copy& c, const CopyOp& op, void* host, uint64_t src, uint64_t dst) {
  constexpr bool kThreeD = std::is_same_v<Copy, CUDA_MEMCPY3D>;
  if (op.direction == CopyDirection::kHostToDevice) {
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = host;
    c.srcPitch = op.width;
    if constexpr (kThreeD) c.srcHeight = op.height;
  } else {
    c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = src;
    c.srcPitch = op.src_pitch;
    if constexpr (kThreeD) c.srcHeight = op.src_height;
  }
  if (op.direction == CopyDirection::kDeviceToHost) {
    c.dstMemoryType = CU_MEMORYTYPE_HOST;
    c.dstHost = host;
    c.dstPitch = op.width;
    if constexpr (kThreeD) c.dstHeight = op.height;
  } else {
    c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.dstDevice = dst;
    c.dstPitch = op.dst_pitch;
    if constexpr (kThreeD) c.dstHeight = op.dst_height;
  }
}

}  // namespace

Executor::Executor(const Driver& driver, format::Reader& reader, const Plan& plan,
                   const ReplayOptions& options, ReplayResult& result, Watchdog& watchdog)
    : driver_(driver),
      api_(driver.api()),
      reader_(reader),
      plan_(plan),
      options_(options),
      result_(result),
      watchdog_(watchdog) {}

Executor::~Executor() {
  if (context_ == nullptr) return;
  if (access_table_ != nullptr) access_table_->enable(0);
  api_.cuCtxSynchronize();
  for (auto& [captured, live] : execs_) {
    if (api_.cuGraphExecDestroy) api_.cuGraphExecDestroy(live);
  }
  for (auto& [captured, graph] : graphs_) {
    if (api_.cuGraphDestroy) api_.cuGraphDestroy(graph);
  }
  release_arrays();
  release_tex_refs_and_pools();
  for (auto& [captured, stream] : streams_) api_.cuStreamDestroy(stream);
  if (serial_stream_ != nullptr) api_.cuStreamDestroy(serial_stream_);
  for (auto& [captured, event] : events_) api_.cuEventDestroy(event);
  for (CUevent e : event_pool_) api_.cuEventDestroy(e);
  while (!host_buffers_.empty()) release_host(host_buffers_.begin()->first);
  for (auto& [captured, m] : modules_) {
    if (m.is_library && api_.cuLibraryUnload) api_.cuLibraryUnload(m.library);
    if (!m.is_library) api_.cuModuleUnload(m.module);
  }
  if (snapshot_ != 0) api_.cuMemFree(snapshot_);
  if (l2_scratch_ != 0) api_.cuMemFree(l2_scratch_);
  memory_.reset();
  api_.cuDevicePrimaryCtxRelease(device_);
}

void Executor::warn(const std::string& message) {
  result_.messages.push_back(message);
  if (options_.on_message) options_.on_message(MessageLevel::kWarning, message);
}

void Executor::info(const std::string& message) {
  if (options_.on_message) options_.on_message(MessageLevel::kInfo, message);
}

Error Executor::fail(const Action& action, const std::string& what, CUresult r) const {
  Error e = driver_.failure(what, r);
  e.at_call(action.seq).in_record(operation_name(action.op));
  return e;
}

MaybeError Executor::prepare() {
  const int ordinal = options_.device;
  int count = 0;
  if (CUresult r = api_.cuDeviceGetCount(&count); r != CUDA_SUCCESS)
    return driver_.failure("cuDeviceGetCount", r);
  if (ordinal < 0 || ordinal >= count) {
    return Error(ErrorKind::kTarget, "device " + std::to_string(ordinal) +
                                         " does not exist (the driver has " +
                                         std::to_string(count) + ")");
  }
  if (CUresult r = api_.cuDeviceGet(&device_, ordinal); r != CUDA_SUCCESS)
    return driver_.failure("cuDeviceGet", r);
  if (CUresult r = api_.cuDevicePrimaryCtxRetain(&context_, device_); r != CUDA_SUCCESS) {
    context_ = nullptr;
    return driver_.failure("cuDevicePrimaryCtxRetain", r);
  }
  if (CUresult r = api_.cuCtxSetCurrent(context_); r != CUDA_SUCCESS)
    return driver_.failure("cuCtxSetCurrent", r);

  TargetInfo& t = result_.target;
  t.device = ordinal;
  char name[256] = {};
  api_.cuDeviceGetName(name, sizeof name - 1, device_);
  t.device_name = name;
  api_.cuDeviceGetAttribute(&t.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device_);
  api_.cuDeviceGetAttribute(&t.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device_);
  size_t total = 0;
  api_.cuDeviceTotalMem(&total, device_);
  t.total_memory = total;
  size_t free_bytes = 0;
  api_.cuMemGetInfo(&free_bytes, &total);
  t.free_memory_before = free_bytes;

  if (auto e = check_target()) return e;

  auto selector = LaunchSelector::create(options_.kernel_regex, options_.launch_skip,
                                         options_.launch_count, options_.kernel_name_base);
  if (!selector) return selector.error();
  selector_ = std::make_unique<LaunchSelector>(std::move(selector.value()));

  auto memory = DeviceMemory::create(driver_, ordinal, plan_.memory_ranges, options_.address_mode);
  if (!memory) return memory.error();
  memory_ = std::move(memory.value());
  result_.mapped_bytes = memory_->mapped_bytes();
  result_.memory_ranges = memory_->ranges().size();
  result_.relocated_ranges = memory_->relocated_count();
  if (options_.address_mode == AddressMode::kRelocate) {
    // What the user asked for: information, said once, not a warning that results may be wrong.
    info("--address-mode relocate: " + std::to_string(memory_->relocated_count()) + " of " +
         std::to_string(result_.memory_ranges) +
         " device range(s) placed away from their captured addresses, as asked; pointer-sized "
         "kernel parameters are rewritten, pointers stored in device memory are not");
  } else if (std::string summary = memory_->relocation_summary(); !summary.empty()) {
    warn(summary);
  }
  if (!driver_.has_vmm()) warn("the driver has no VMM entry points: device memory is relocated");
  if (options_.serialize) {
    if (CUresult r = api_.cuStreamCreate(&serial_stream_, CU_STREAM_DEFAULT); r != CUDA_SUCCESS) {
      serial_stream_ = nullptr;
      return driver_.failure("cuStreamCreate (the --serialize stream)", r);
    }
  }
  find_emulator_table();
  if (options_.track_chunk_bytes != 0) return enable_tracking();
  return std::nullopt;
}

void Executor::find_emulator_table() {
  if (api_.cuGetExportTable == nullptr) return;
  CUuuid id;
  std::memcpy(id.bytes, common::kEmulatorAccessTableId, sizeof id.bytes);
  const void* table = nullptr;
  // Any other driver answers the emulator's UUID with an error: it is not the emulator.
  if (api_.cuGetExportTable(&table, &id) == CUDA_SUCCESS && table != nullptr)
    emulator_table_ = static_cast<const common::EmulatorAccessTable*>(table);
}

MaybeError Executor::enable_tracking() {
  const uint64_t chunk = options_.track_chunk_bytes;
  if (!std::has_single_bit(chunk)) {
    return Error(ErrorKind::kInvalidArgument,
                 "access tracking chunk size " + std::to_string(chunk) + " is not a power of two");
  }
  const std::string needs = "access tracking needs the cusnap emulator; " + driver_.path();
  if (api_.cuGetExportTable == nullptr)
    return Error(ErrorKind::kTarget, needs + " has no cuGetExportTable");
  const common::EmulatorAccessTable* t = emulator_table_;
  if (t == nullptr)
    return Error(ErrorKind::kTarget, needs + " does not know the emulator's export table");
  if (t->size < offsetof(common::EmulatorAccessTable, order_dependence))
    return Error(ErrorKind::kTarget, needs + " of this version: its table is too old");
  if (int r = t->enable(chunk); r != CUDA_SUCCESS)
    return driver_.failure("enabling access tracking", static_cast<CUresult>(r));
  access_table_ = t;
  return std::nullopt;
}

void Executor::note_order_dependence(CUfunction f, const std::string& kernel, uint64_t seq) {
  const common::EmulatorAccessTable* t = emulator_table_;
  if (t == nullptr || t->size < sizeof(common::EmulatorAccessTable) ||
      t->order_dependence == nullptr)
    return;
  if (!order_checked_.insert(f).second) return;
  const char* reason = nullptr;
  if (t->order_dependence(f, &reason) != CUDA_SUCCESS || reason == nullptr) return;
  // One entry per kernel name (a module loaded twice has two functions of one kernel).
  for (const OrderDependentKernel& k : result_.order_dependent_kernels)
    if (k.kernel == kernel) return;
  result_.order_dependent_kernels.push_back(OrderDependentKernel{kernel, seq, reason});
}

MaybeError Executor::take_accesses(const Action& a, size_t launch_index) {
  if (auto e = synchronize_all()) return e;
  common::EmulatorLaunchAccesses taken{};
  if (int r = access_table_->take_last_launch(&taken); r != CUDA_SUCCESS) {
    return driver_.failure("taking the launch's tracked accesses", static_cast<CUresult>(r))
        .at_call(a.seq)
        .in_record("launch");
  }
  LaunchAccesses accesses;
  const uint64_t chunk = taken.chunk_bytes;
  // Runs of consecutive chunks, each cut into the captured pieces it covers.
  auto translate = [&](const uint64_t* chunks, size_t count,
                       std::vector<std::pair<uint64_t, uint64_t>>& out) {
    for (size_t i = 0; i < count;) {
      size_t j = i + 1;
      while (j < count && chunks[j] == chunks[j - 1] + chunk) ++j;
      const uint64_t size = (j - i) * chunk;
      uint64_t covered = 0;
      for (const auto& piece : memory_->captured_pieces(chunks[i], size)) {
        covered += piece.second;
        if (!out.empty() && out.back().first + out.back().second == piece.first)
          out.back().second += piece.second;
        else
          out.push_back(piece);
      }
      accesses.untranslated_bytes += size - covered;
      i = j;
    }
    std::sort(out.begin(), out.end());
  };
  translate(taken.read_chunks, taken.read_count, accesses.read);
  translate(taken.written_chunks, taken.written_count, accesses.written);
  result_.launches[launch_index].accesses = std::move(accesses);
  return std::nullopt;
}

Expected<const std::vector<uint8_t>*> Executor::image_bytes(const ModuleLoadOp& op, uint64_t seq) {
  auto it = images_.find(op.image);
  if (it != images_.end()) return &it->second;
  auto bytes = reader_.read_blob(op.image);
  if (!bytes) {
    return Error(ErrorKind::kCapture, "reading the code image: " + bytes.status().to_string())
        .at_call(seq)
        .in_record("moduleLoad")
        .with_handle(op.handle);
  }
  return &images_.emplace(op.image, std::move(bytes.value())).first->second;
}

MaybeError Executor::check_target() {
  const TargetInfo& t = result_.target;
  int cc = t.cc_major * 10 + t.cc_minor;
  if (!plan_.devices.empty()) {
    const CapturedDevice& d = plan_.devices.front();
    if (d.cc_major != t.cc_major || d.cc_minor != t.cc_minor || d.name != t.device_name) {
      warn("captured on " + d.name + " (sm_" + std::to_string(d.cc_major * 10 + d.cc_minor) +
           "), replaying on " + t.device_name + " (sm_" + std::to_string(cc) +
           "): code may be JIT-compiled from PTX and approximate math may differ");
    }
  }
  for (const Action& a : plan_.actions) {
    const auto* load = std::get_if<ModuleLoadOp>(&a.op);
    if (load == nullptr) continue;
    auto bytes = image_bytes(*load, a.seq);
    if (!bytes) return bytes.error();
    ImageArchitectures archs = image_architectures(*bytes.value());
    if (!image_runs_on(archs, cc)) {
      return Error(ErrorKind::kTarget, "the module has code for " + describe_architectures(archs) +
                                           " only; the device is sm_" + std::to_string(cc))
          .at_call(a.seq)
          .in_record("moduleLoad")
          .with_handle(load->handle);
    }
  }
  uint64_t granularity = 2u << 20;
  uint64_t needed = DeviceMemory::bytes_needed(plan_.memory_ranges, granularity);
  if (needed > t.free_memory_before) {
    return Error(ErrorKind::kTarget,
                 "the capture needs " + std::to_string(needed >> 20) + " MiB of device memory, " +
                     std::to_string(t.free_memory_before >> 20) + " MiB are free");
  }
  if (plan_.uses_cooperative_launch) {
    int cooperative = 0;
    api_.cuDeviceGetAttribute(&cooperative, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, device_);
    if (cooperative == 0)
      return Error(ErrorKind::kTarget, "the capture makes cooperative launches; the device cannot");
  }
  if (plan_.uses_cluster_launch && t.cc_major < 9) {
    return Error(ErrorKind::kTarget,
                 "the capture launches thread block clusters, which need sm_90 or newer; the "
                 "device is sm_" +
                     std::to_string(cc));
  }
  return std::nullopt;
}

MaybeError Executor::run() {
  size_t done = 0;
  const std::optional<RecordedError>& recorded = plan_.recorded_error;
  if (recorded) {
    result_.expected_error = ExpectedErrorCheck{};
    result_.expected_error->recorded = *recorded;
    result_.expected_error->name = driver_.error_name(static_cast<CUresult>(recorded->result));
  }
  // With a snapshot tap, nothing after its last launch can change what it hands out.
  const uint64_t last = options_.tap && !options_.tap->ranges.empty()
                            ? options_.tap->ranges.rbegin()->first.seq
                            : UINT64_MAX;
  for (size_t i = 0; i < plan_.actions.size(); ++i) {
    const Action& action = plan_.actions[i];
    if (action.seq > last) break;
    if (recorded && action.seq > recorded->seq) {
      // Only calls made after the error at capture remain; they failed there (the plan keeps
      // none that succeeded). The error must show now.
      if (auto e = check_expected_error(recorded->seq)) return e;
      result_.expected_error->calls_not_replayed = plan_.actions.size() - i;
      break;
    }
    watchdog_.at_call(action, result_.actions_replayed);
    if (auto e = execute(action)) {
      if (!is_expected_error(action, *e)) return e;
      expected_error_seen(action.seq, static_cast<CUresult>(*e->result()));
      result_.expected_error->calls_not_replayed = plan_.actions.size() - i - 1;
      break;
    }
    const auto* global = std::get_if<GlobalGetOp>(&action.op);
    if (global == nullptr || !global->by_tool) ++result_.actions_replayed;
    if (options_.progress && (++done & 63) == 0) progress(done, false);
  }
  watchdog_.at_end();
  if (recorded && !result_.expected_error->observed) {
    if (auto e = check_expected_error(recorded->seq)) return e;
  }
  if (result_.expected_error && result_.expected_error->observed_result != CUDA_SUCCESS) {
    // The context is dead: asynchronous copies and timings still pending cannot be read. The
    // copies stay unverified, the launches untimed.
    pending_copies_.clear();
    pending_awaiting_.clear();
    pending_timings_.clear();
    inflight_payloads_.clear();
  } else if (auto e = synchronize_all()) {
    return e;
  }
  if (options_.progress) progress(plan_.actions.size(), true);
  return std::nullopt;
}

bool Executor::is_expected_error(const Action& a, const Error& e) const {
  const std::optional<RecordedError>& recorded = plan_.recorded_error;
  if (!recorded || !e.result() || *e.result() != recorded->result) return false;
  if (result_.expected_error->observed) return false;
  // The driver may notice the error earlier than at capture (another driver, another timing),
  // but not before the launch that can have caused it.
  return a.seq >= recorded->last_launch_seq && a.seq <= recorded->seq;
}

void Executor::expected_error_seen(uint64_t seq, CUresult r) {
  ExpectedErrorCheck& c = *result_.expected_error;
  c.observed = true;
  c.observed_seq = seq;
  c.observed_result = static_cast<int32_t>(r);
  c.observed_name = r == CUDA_SUCCESS ? "CUDA_SUCCESS" : driver_.error_name(r);
  c.reproduced = c.observed_result == c.recorded.result;
  std::string where = "call " + std::to_string(c.recorded.seq) + " (" + c.recorded.api + ")";
  if (c.reproduced) {
    info("the capture ended with " + c.name + " at " + where + "; the replay reproduced it" +
         (seq == c.recorded.seq ? "" : " at call " + std::to_string(seq)));
  } else {
    warn("the capture ended with " + c.name + " at " + where + "; the replay got " +
         c.observed_name + " there");
  }
}

MaybeError Executor::check_expected_error(uint64_t at_seq) {
  // What the application's failing call observed: the context's state once its work is done.
  CUresult r = api_.cuCtxSynchronize();
  if (r != CUDA_SUCCESS && !is_sticky_error(static_cast<int32_t>(r))) {
    return driver_.failure("cuCtxSynchronize", r).at_call(at_seq);
  }
  expected_error_seen(at_seq, r);
  // No error: the replay goes on as any other, its results still compared.
  if (r == CUDA_SUCCESS) return synchronize_all();
  return std::nullopt;
}

void Executor::progress(size_t done, bool final) {
  auto now = std::chrono::steady_clock::now();
  if (!final && now - last_progress_ < std::chrono::milliseconds(200)) return;
  last_progress_ = now;
  size_t total = std::max<size_t>(plan_.actions.size(), 1);
  std::fprintf(stderr, "\rcusnap replay: %zu/%zu calls (%zu%%), %llu launches%s", done,
               plan_.actions.size(), done * 100 / total,
               static_cast<unsigned long long>(launches_done_), final ? "\n" : "");
  std::fflush(stderr);
  progress_shown_ = true;
}

MaybeError Executor::execute(const Action& a) {
  return std::visit(
      [&](const auto& op) -> MaybeError {
        using T = std::decay_t<decltype(op)>;
        if constexpr (std::is_same_v<T, ModuleLoadOp>) {
          return do_module_load(a, op);
        } else if constexpr (std::is_same_v<T, ModuleUnloadOp>) {
          auto it = modules_.find(op.handle);
          if (it == modules_.end()) return std::nullopt;
          CUresult r = it->second.is_library ? api_.cuLibraryUnload(it->second.library)
                                             : api_.cuModuleUnload(it->second.module);
          modules_.erase(it);
          memory_->forget_globals_of(op.handle);
          std::erase_if(tex_refs_, [&](const auto& ref) { return ref.second.module == op.handle; });
          if (r != CUDA_SUCCESS) return fail(a, "unloading the module", r);
          return std::nullopt;
        } else if constexpr (std::is_same_v<T, FunctionGetOp>) {
          return do_function_get(a, op);
        } else if constexpr (std::is_same_v<T, GlobalGetOp>) {
          return do_global_get(a, op);
        } else if constexpr (std::is_same_v<T, FunctionAttributeOp>) {
          return do_function_attribute(a, op);
        } else if constexpr (std::is_same_v<T, AllocOp>) {
          allocations_[op.address] = AllocationRef{a.seq, op.address, op.size, op.kind};
          return std::nullopt;
        } else if constexpr (std::is_same_v<T, FreeOp>) {
          allocations_.erase(op.address);
          return std::nullopt;
        } else if constexpr (std::is_same_v<T, CopyOp>) {
          return do_copy(a, op);
        } else if constexpr (std::is_same_v<T, ArrayOp>) {
          return do_array(a, op);
        } else if constexpr (std::is_same_v<T, TexObjectOp>) {
          return do_tex_object(a, op);
        } else if constexpr (std::is_same_v<T, TensorMapOp>) {
          return do_tensor_map(a, op);
        } else if constexpr (std::is_same_v<T, TexRefOp>) {
          return do_tex_ref(a, op);
        } else if constexpr (std::is_same_v<T, MemPoolOp>) {
          return do_mem_pool(a, op);
        } else if constexpr (std::is_same_v<T, MemsetOp>) {
          return do_memset(a, op);
        } else if constexpr (std::is_same_v<T, LaunchOp>) {
          return do_launch(a, op);
        } else if constexpr (std::is_same_v<T, StreamCreateOp>) {
          return do_stream_create(a, op);
        } else if constexpr (std::is_same_v<T, StreamDestroyOp>) {
          auto it = streams_.find(op.stream);
          if (it == streams_.end()) return std::nullopt;
          // Pending copies on it are complete only after a synchronisation (of the stream its
          // work went to: the --serialize stream, if any).
          if (CUresult r = api_.cuStreamSynchronize(stream_for(op.stream)); r != CUDA_SUCCESS)
            return fail(a, "cuStreamSynchronize", r);
          if (auto e = settle_copies(false, op.stream)) return e;
          CUresult r = api_.cuStreamDestroy(it->second);
          streams_.erase(it);
          if (r != CUDA_SUCCESS) return fail(a, "cuStreamDestroy", r);
          return std::nullopt;
        } else if constexpr (std::is_same_v<T, StreamWaitOp>) {
          CUevent e = event_for(op.event);
          if (e == nullptr) return std::nullopt;
          if (CUresult r = api_.cuStreamWaitEvent(stream_for(op.stream), e, 0); r != CUDA_SUCCESS) {
            return fail(a, "cuStreamWaitEvent", r);
          }
          return std::nullopt;
        } else if constexpr (std::is_same_v<T, StreamSyncOp>) {
          if (CUresult r = api_.cuStreamSynchronize(stream_for(op.stream)); r != CUDA_SUCCESS) {
            return fail(a, "cuStreamSynchronize", r);
          }
          return settle_copies(false, op.stream);
        } else if constexpr (std::is_same_v<T, EventCreateOp>) {
          return do_event_create(a, op);
        } else if constexpr (std::is_same_v<T, EventRecordOp>) {
          CUevent e = event_for(op.event);
          if (e == nullptr) return std::nullopt;
          if (CUresult r = api_.cuEventRecord(e, stream_for(op.stream)); r != CUDA_SUCCESS) {
            return fail(a, "cuEventRecord", r);
          }
          return std::nullopt;
        } else if constexpr (std::is_same_v<T, EventSyncOp>) {
          CUevent e = event_for(op.event);
          if (e == nullptr) return std::nullopt;
          if (CUresult r = api_.cuEventSynchronize(e); r != CUDA_SUCCESS)
            return fail(a, "cuEventSynchronize", r);
          return std::nullopt;
        } else if constexpr (std::is_same_v<T, EventDestroyOp>) {
          auto it = events_.find(op.event);
          if (it == events_.end()) return std::nullopt;
          api_.cuEventDestroy(it->second);
          events_.erase(it);
          return std::nullopt;
        } else if constexpr (std::is_same_v<T, HostAllocOp>) {
          return do_host_alloc(a, op);
        } else if constexpr (std::is_same_v<T, HostFreeOp>) {
          return do_host_free(a, op);
        } else if constexpr (std::is_same_v<T, GraphOp>) {
          return do_graph(a, op);
        } else if constexpr (std::is_same_v<T, GraphNodeOp>) {
          return do_graph_node(a, op);
        } else if constexpr (std::is_same_v<T, GraphExecOp>) {
          return do_graph_exec(a, op);
        } else if constexpr (std::is_same_v<T, RestoreOp>) {
          return restore_snapshot(a, op.snapshot);
        } else if constexpr (std::is_same_v<T, NvtxOp>) {
          if (options_.nvtx) do_nvtx(op);
          return std::nullopt;
        } else {
          static_assert(std::is_same_v<T, ContextSyncOp>);
          return synchronize_all();
        }
      },
      a.op);
}

MaybeError Executor::do_module_load(const Action& a, const ModuleLoadOp& op) {
  auto bytes_or = image_bytes(op, a.seq);
  if (!bytes_or) return bytes_or.error();
  std::vector<uint8_t>& bytes = const_cast<std::vector<uint8_t>&>(*bytes_or.value());
  // PTX is handed to the driver as a C string.
  bool text =
      op.kind == ImageKind::kPtx ||
      ((op.kind == ImageKind::kFile || op.kind == ImageKind::kUnknown) && looks_like_text(bytes));
  if (text && (bytes.empty() || bytes.back() != 0)) bytes.push_back(0);
  const void* image = bytes.data();
  if (op.kind == ImageKind::kFatbinWrapper && op.is_library) {
    // The application passed a __fatBinC_Wrapper_t; give the driver the same shape.
    std::vector<uint8_t>& wrapper = wrappers_.emplace_back(fb::kWrapperSize, 0);
    uint32_t magic = fb::kWrapperMagic, version = fb::kWrapperVersion;
    uint64_t data = reinterpret_cast<uint64_t>(bytes.data());
    std::memcpy(wrapper.data(), &magic, 4);
    std::memcpy(wrapper.data() + 4, &version, 4);
    std::memcpy(wrapper.data() + 8, &data, 8);
    image = wrapper.data();
  }
  LiveModule live;
  live.is_library = op.is_library;
  if (op.is_library) {
    if (api_.cuLibraryLoadData == nullptr) {
      return Error(ErrorKind::kUnsupported, "the driver has no cuLibraryLoadData")
          .at_call(a.seq)
          .in_record("moduleLoad");
    }
    if (CUresult r =
            api_.cuLibraryLoadData(&live.library, image, nullptr, nullptr, 0, nullptr, nullptr, 0);
        r != CUDA_SUCCESS) {
      return fail(a, std::string("cuLibraryLoadData (") + image_kind_name(op.kind) + ")", r)
          .with_handle(op.handle);
    }
  } else if (CUresult r = api_.cuModuleLoadData(&live.module, image); r != CUDA_SUCCESS) {
    return fail(a, std::string("cuModuleLoadData (") + image_kind_name(op.kind) + ")", r)
        .with_handle(op.handle);
  }
  modules_[op.handle] = live;
  return std::nullopt;
}

MaybeError Executor::do_function_get(const Action& a, const FunctionGetOp& op) {
  CUfunction f = nullptr;
  if (op.kind == FunctionGetOp::Kind::kKernelGetFunction) {
    auto it = functions_.find(op.kernel);
    if (it == functions_.end() || api_.cuKernelGetFunction == nullptr) {
      return Error(ErrorKind::kCapture,
                   "cuKernelGetFunction on a kernel the capture never obtained")
          .at_call(a.seq)
          .in_record("functionGet")
          .with_handle(op.kernel);
    }
    if (CUresult r = api_.cuKernelGetFunction(&f, reinterpret_cast<CUkernel>(it->second));
        r != CUDA_SUCCESS) {
      return fail(a, "cuKernelGetFunction", r).with_handle(op.handle);
    }
    functions_[op.handle] = f;
    return std::nullopt;
  }
  auto m = modules_.find(op.module);
  if (m == modules_.end()) {
    return Error(ErrorKind::kCapture,
                 "function '" + op.name + "' of a module the capture never loaded")
        .at_call(a.seq)
        .in_record("functionGet")
        .with_handle(op.module);
  }
  if (m->second.is_library) {
    CUkernel k = nullptr;
    if (CUresult r = api_.cuLibraryGetKernel(&k, m->second.library, op.name.c_str());
        r != CUDA_SUCCESS) {
      return fail(a, "cuLibraryGetKernel '" + op.name + "'", r).with_handle(op.handle);
    }
    f = reinterpret_cast<CUfunction>(k);
    library_kernels_.insert(f);
  } else if (CUresult r = api_.cuModuleGetFunction(&f, m->second.module, op.name.c_str());
             r != CUDA_SUCCESS) {
    return fail(a, "cuModuleGetFunction '" + op.name + "'", r).with_handle(op.handle);
  }
  functions_[op.handle] = f;
  return std::nullopt;
}

MaybeError Executor::do_global_get(const Action& a, const GlobalGetOp& op) {
  auto m = modules_.find(op.module);
  if (m == modules_.end()) {
    return Error(ErrorKind::kCapture,
                 "global '" + op.name + "' of a module the capture never loaded")
        .at_call(a.seq)
        .in_record("globalGet")
        .with_handle(op.module);
  }
  CUdeviceptr live = 0;
  size_t size = 0;
  CUresult r = m->second.is_library
                   ? api_.cuLibraryGetGlobal(&live, &size, m->second.library, op.name.c_str())
                   : api_.cuModuleGetGlobal(&live, &size, m->second.module, op.name.c_str());
  if (r != CUDA_SUCCESS) return fail(a, "getting global '" + op.name + "'", r);
  if (op.size != 0 && size != op.size) {
    warn("global '" + op.name + "' has " + std::to_string(size) + " bytes, " +
         std::to_string(op.size) + " at capture (call " + std::to_string(a.seq) + ")");
  }
  uint64_t placed = std::min<uint64_t>(size, op.size == 0 ? size : op.size);
  memory_->add_global(op.module, op.address, placed, live);
  // Snapshot mismatches and copy checks name the variable a captured address lies in.
  if (op.address != 0 && placed != 0) {
    allocations_[op.address] = AllocationRef{a.seq, op.address, placed, "global " + op.name};
  }
  return std::nullopt;
}

MaybeError Executor::do_function_attribute(const Action& a, const FunctionAttributeOp& op) {
  auto it = functions_.find(op.function);
  if (it == functions_.end()) return std::nullopt;
  CUresult r = CUDA_SUCCESS;
  if (op.attribute == -1) {
    if (api_.cuFuncSetCacheConfig)
      r = api_.cuFuncSetCacheConfig(it->second, static_cast<CUfunc_cache>(op.value));
  } else if (op.is_kernel && api_.cuKernelSetAttribute) {
    r = api_.cuKernelSetAttribute(static_cast<CUfunction_attribute>(op.attribute),
                                  static_cast<int>(op.value),
                                  reinterpret_cast<CUkernel>(it->second), device_);
  } else if (api_.cuFuncSetAttribute) {
    r = api_.cuFuncSetAttribute(it->second, static_cast<CUfunction_attribute>(op.attribute),
                                static_cast<int>(op.value));
  }
  // Attributes tune; a driver that refuses one may still run the kernel (the launch will tell).
  if (r != CUDA_SUCCESS) {
    warn("call " + std::to_string(a.seq) + ": setting function attribute " +
         std::to_string(op.attribute) + " failed: " + driver_.error_name(r));
  }
  return std::nullopt;
}

CUstream Executor::stream_for(uint64_t captured) {
  if (serial_stream_ != nullptr) return serial_stream_;
  if (captured == 0) return nullptr;
  if (captured == reinterpret_cast<uint64_t>(CU_STREAM_LEGACY)) return CU_STREAM_LEGACY;
  if (captured == reinterpret_cast<uint64_t>(CU_STREAM_PER_THREAD)) return CU_STREAM_PER_THREAD;
  auto it = streams_.find(captured);
  if (it != streams_.end()) return it->second;
  warn("stream " + hex(captured) +
       " was never created in the capture: its work goes to the default stream");
  streams_[captured] = nullptr;
  return nullptr;
}

CUevent Executor::event_for(uint64_t captured) {
  auto it = events_.find(captured);
  if (it != events_.end()) return it->second;
  warn("event " + hex(captured) + " was never created in the capture: its uses are skipped");
  events_[captured] = nullptr;
  return nullptr;
}

MaybeError Executor::do_stream_create(const Action& a, const StreamCreateOp& op) {
  CUstream s = nullptr;
  CUresult r = op.priority != 0 && api_.cuStreamCreateWithPriority
                   ? api_.cuStreamCreateWithPriority(&s, op.flags, op.priority)
                   : api_.cuStreamCreate(&s, op.flags);
  if (r != CUDA_SUCCESS) return fail(a, "cuStreamCreate", r).with_handle(op.stream);
  streams_[op.stream] = s;
  return std::nullopt;
}

MaybeError Executor::do_event_create(const Action& a, const EventCreateOp& op) {
  CUevent e = nullptr;
  if (CUresult r = api_.cuEventCreate(&e, op.flags); r != CUDA_SUCCESS)
    return fail(a, "cuEventCreate", r);
  events_[op.event] = e;
  return std::nullopt;
}

MaybeError Executor::do_host_alloc(const Action& a, const HostAllocOp& op) {
  if (api_.cuMemHostAlloc == nullptr || api_.cuMemHostGetDevicePointer == nullptr) {
    return Error(ErrorKind::kUnsupported, "the driver cannot allocate mapped host memory")
        .at_call(a.seq)
        .in_record("memAlloc (host)");
  }
  if (host_buffers_.count(op.host) != 0) release_host(op.host);
  HostBuffer buffer;
  buffer.captured_device = op.device;
  // First choice: the captured pages themselves, registered, so that pointers to them stored
  // anywhere stay valid (the driver then usually gives the host address as device address).
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t first = op.host / page * page;
  const uint64_t bytes = (op.host + op.size + page - 1) / page * page - first;
  if (options_.address_mode == AddressMode::kSame && api_.cuMemHostRegister != nullptr &&
      api_.cuMemHostUnregister != nullptr) {
    void* want = reinterpret_cast<void*>(first);
    void* got = ::mmap(want, bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (got == want) {
      constexpr unsigned kRegister = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP;
      if (api_.cuMemHostRegister(want, bytes, kRegister) == CUDA_SUCCESS) {
        buffer.live = reinterpret_cast<void*>(op.host);
        buffer.mapped = want;
        buffer.mapped_bytes = bytes;
      } else {
        ::munmap(got, bytes);
      }
    } else if (got != MAP_FAILED) {
      ::munmap(got, bytes);  // an older kernel ignoring MAP_FIXED_NOREPLACE
    }
  }
  if (buffer.live == nullptr) {
    unsigned flags = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                     (op.flags & CU_MEMHOSTALLOC_WRITECOMBINED);
    if (op.kind == "hostRegister") flags &= ~CU_MEMHOSTALLOC_WRITECOMBINED;
    if (CUresult r = api_.cuMemHostAlloc(&buffer.live, op.size, flags); r != CUDA_SUCCESS)
      return fail(a, "cuMemHostAlloc", r).with_address(op.host);
    std::memset(buffer.live, 0, op.size);  // as fresh pages are: no leftover of another run
  }
  CUdeviceptr live = 0;
  if (CUresult r = api_.cuMemHostGetDevicePointer(&live, buffer.live, 0); r != CUDA_SUCCESS) {
    host_buffers_[op.host] = buffer;
    release_host(op.host);
    return fail(a, "cuMemHostGetDevicePointer", r).with_address(op.host);
  }
  host_buffers_[op.host] = buffer;
  memory_->add_host(op.device, op.size, live);
  allocations_[op.device] = AllocationRef{a.seq, op.device, op.size, op.kind};
  if (live != op.device && relocated_host_++ == 0) {
    info("host memory of call " + std::to_string(a.seq) + " (" + op.kind + ", " +
         std::to_string(op.size) + " bytes) could not be had at its captured device address " +
         hex(op.device) + " (now " + hex(live) +
         "): pointer-sized kernel parameters are rewritten, pointers stored in memory are not");
  }
  return std::nullopt;
}

void Executor::release_host(uint64_t captured_host) {
  auto it = host_buffers_.find(captured_host);
  if (it == host_buffers_.end()) return;
  HostBuffer& b = it->second;
  if (b.mapped != nullptr) {
    api_.cuMemHostUnregister(b.mapped);
    ::munmap(b.mapped, b.mapped_bytes);
  } else if (b.live != nullptr && api_.cuMemFreeHost != nullptr) {
    api_.cuMemFreeHost(b.live);
  }
  memory_->forget_host(b.captured_device);
  allocations_.erase(b.captured_device);
  host_buffers_.erase(it);
}

MaybeError Executor::do_host_free(const Action& a, const HostFreeOp& op) {
  // A kernel may still use it: the application's free waited for that too.
  if (host_buffers_.count(op.host) == 0) return std::nullopt;
  if (auto e = synchronize_all()) return e->at_call(a.seq);
  release_host(op.host);
  return std::nullopt;
}

Expected<uint64_t> Executor::device_address(const Action& a, uint64_t captured, uint64_t extent) {
  auto live = memory_->translate(captured, extent);
  if (!live) {
    return Error(ErrorKind::kCapture,
                 std::to_string(extent) + " bytes outside every captured allocation")
        .at_call(a.seq)
        .in_record(operation_name(a.op))
        .with_address(captured);
  }
  return *live;
}

MaybeError Executor::do_copy(const Action& a, const CopyOp& op) {
  const bool two_d = op.dimensions == 2 && op.depth == 1;
  const bool three_d = op.dimensions > 1 && !two_d;
  CUstream stream = stream_for(op.stream);
  uint64_t dst = 0, src = 0;
  if (op.direction != CopyDirection::kDeviceToHost && op.dst_array == 0) {
    auto d = device_address(a, op.dst, op.extent(op.dst_pitch, op.dst_height));
    if (!d) return d.error();
    dst = d.value();
  }
  if (op.direction != CopyDirection::kHostToDevice && op.src_array == 0) {
    auto s = device_address(a, op.src, op.extent(op.src_pitch, op.src_height));
    if (!s) return s.error();
    src = s.value();
  }
  std::vector<uint8_t> host;
  if (op.direction == CopyDirection::kHostToDevice) {
    auto payload = reader_.read_blob(op.payload);
    if (!payload) {
      return Error(ErrorKind::kCapture, "reading the copy payload: " + payload.status().to_string())
          .at_call(a.seq)
          .in_record("memcpy");
    }
    host = std::move(payload.value());
    // A tensor map the application copied to device memory (a 2D/3D copy's rows are not
    // searched: docs/replay.md, "Tensor maps").
    if (op.dimensions == 1 && !op.involves_array()) substitute_tensor_maps(op.dst, host);
  } else if (op.direction == CopyDirection::kDeviceToHost) {
    host.resize(op.size);
  }
  CUresult r = CUDA_SUCCESS;
  if (op.involves_array()) {
    // The linear device side (if any) as translated above, the array side(s) mapped there.
    CopyOp live = op;
    live.dst = dst;
    live.src = src;
    if (auto e = array_copy(a, live, host.data(), stream)) return e;
  } else if (two_d) {
    if (api_.cuMemcpy2DUnaligned == nullptr || api_.cuMemcpy2DAsync == nullptr) {
      return Error(ErrorKind::kUnsupported, "the driver has no 2D copies")
          .at_call(a.seq)
          .in_record("memcpy");
    }
    CUDA_MEMCPY2D c{};
    c.WidthInBytes = op.width;
    c.Height = op.height;
    set_copy_endpoints(c, op, host.data(), src, dst);
    r = op.async ? api_.cuMemcpy2DAsync(&c, stream) : api_.cuMemcpy2DUnaligned(&c);
  } else if (three_d) {
    if (api_.cuMemcpy3D == nullptr || api_.cuMemcpy3DAsync == nullptr) {
      return Error(ErrorKind::kUnsupported, "the driver has no 3D copies")
          .at_call(a.seq)
          .in_record("memcpy");
    }
    // The host side is the packed rectangle (payload / checksum layout); offsets are folded in.
    CUDA_MEMCPY3D c{};
    c.WidthInBytes = op.width;
    c.Height = op.height;
    c.Depth = op.depth;
    set_copy_endpoints(c, op, host.data(), src, dst);
    r = op.async ? api_.cuMemcpy3DAsync(&c, stream) : api_.cuMemcpy3D(&c);
  } else {
    switch (op.direction) {
      case CopyDirection::kHostToDevice:
        r = op.async ? api_.cuMemcpyHtoDAsync(dst, host.data(), op.size, stream)
                     : api_.cuMemcpyHtoD(dst, host.data(), op.size);
        break;
      case CopyDirection::kDeviceToHost:
        r = op.async ? api_.cuMemcpyDtoHAsync(host.data(), src, op.size, stream)
                     : api_.cuMemcpyDtoH(host.data(), src, op.size);
        break;
      case CopyDirection::kDeviceToDevice:
        r = op.async ? api_.cuMemcpyDtoDAsync(dst, src, op.size, stream)
                     : api_.cuMemcpyDtoD(dst, src, op.size);
        break;
    }
  }
  if (r != CUDA_SUCCESS) {
    return fail(a, std::string("copy (") + copy_direction_name(op.direction) + ")", r)
        .with_address(op.direction == CopyDirection::kDeviceToHost ? op.src : op.dst);
  }
  if (op.direction == CopyDirection::kHostToDevice && op.async) {
    // The driver may read an asynchronous copy's source later; keep it until a full sync.
    inflight_bytes_ += host.size();
    inflight_payloads_.push_back(std::move(host));
    if (inflight_bytes_ > kMaxInflightBytes) return synchronize_all();
  }
  if (op.direction != CopyDirection::kDeviceToHost) return std::nullopt;

  CopyCheck check;
  check.seq = a.seq;
  check.address = op.src;
  check.size = op.size;
  check.expected = op.checksum;
  check.launches_before = launches_done_;
  check.recent_launches.assign(recent_launches_.begin(), recent_launches_.end());
  check.order_dependent = result_.order_dependent_kernels;
  auto alloc = allocations_.upper_bound(op.src);
  if (alloc != allocations_.begin() &&
      op.src - std::prev(alloc)->second.address < std::prev(alloc)->second.size) {
    check.allocation = std::prev(alloc)->second;
  }
  if (options_.verify == VerifyMode::kNone || !op.has_checksum) {
    check.state = VerifyState::kUnverified;
    if (op.async) {
      // The driver may still be writing the buffer: keep it until the stream is known complete.
      pending_copies_.push_back(
          PendingCopy{result_.copies.size(), op.stream, std::move(host), false});
    }
    result_.copies.push_back(std::move(check));
    return std::nullopt;
  }
  return record_check(std::move(check), std::move(host), !op.async, op.stream);
}

Expected<std::string> Executor::save_output(std::span<const uint8_t> bytes) {
  std::string name = format::hash_blob(bytes).to_hex();
  std::filesystem::path path = std::filesystem::path(result_.outputs_dir) / name;
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return name;  // content-addressed: already there
  // Written under a temporary name and renamed, so a file with this name is always complete.
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      return Error(ErrorKind::kIo,
                   "--save-outputs: cannot write " + tmp.string() + ": " + std::strerror(errno));
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    return Error(ErrorKind::kIo,
                 "--save-outputs: cannot rename " + tmp.string() + ": " + ec.message());
  }
  ++result_.outputs_written;
  result_.outputs_written_bytes += bytes.size();
  return name;
}

MaybeError Executor::record_check(CopyCheck check, std::vector<uint8_t> bytes, bool complete,
                                  uint64_t stream) {
  size_t index = result_.copies.size();
  // The launches since the previous checked copy get this copy's verdict.
  std::vector<size_t> awaiting = std::move(launches_awaiting_verdict_);
  launches_awaiting_verdict_.clear();
  if (complete) {
    check.actual = copy_checksum(bytes);
    check.state = check.actual == check.expected ? VerifyState::kMatched : VerifyState::kMismatched;
    for (size_t l : awaiting) result_.launches[l].verification = check.state;
    if (!result_.outputs_dir.empty()) {
      auto name = save_output(bytes);
      if (!name) return name.error();
      check.output = name.value();
    }
    result_.copies.push_back(std::move(check));
    return std::nullopt;
  }
  check.state = VerifyState::kUnverified;
  result_.copies.push_back(std::move(check));
  // The verdict of an asynchronous copy arrives at settle time; remember who waits for it.
  PendingCopy pending{index, stream, std::move(bytes), true};
  pending_copies_.push_back(std::move(pending));
  pending_awaiting_.emplace_back(index, std::move(awaiting));
  return std::nullopt;
}

MaybeError Executor::settle_copies(bool all, uint64_t stream) {
  for (auto it = pending_copies_.begin(); it != pending_copies_.end();) {
    if (!all && it->stream != stream) {
      ++it;
      continue;
    }
    if (!it->verify) {
      it = pending_copies_.erase(it);
      continue;
    }
    CopyCheck& check = result_.copies[it->check];
    check.actual = copy_checksum(it->bytes);
    check.state = check.actual == check.expected ? VerifyState::kMatched : VerifyState::kMismatched;
    if (!result_.outputs_dir.empty()) {
      auto name = save_output(it->bytes);
      if (!name) return name.error();
      check.output = name.value();
    }
    for (auto& [index, launches] : pending_awaiting_) {
      if (index != it->check) continue;
      for (size_t l : launches) result_.launches[l].verification = check.state;
      launches.clear();
    }
    it = pending_copies_.erase(it);
  }
  return std::nullopt;
}

MaybeError Executor::synchronize_all() {
  if (CUresult r = api_.cuCtxSynchronize(); r != CUDA_SUCCESS)
    return driver_.failure("cuCtxSynchronize", r);
  inflight_payloads_.clear();
  inflight_bytes_ = 0;
  if (auto e = settle_copies(true, 0)) return e;
  pending_awaiting_.clear();
  return resolve_timings();
}

MaybeError Executor::do_memset(const Action& a, const MemsetOp& op) {
  uint64_t row = op.width * op.element_size;
  uint64_t extent = op.height > 1 ? (op.height - 1) * op.pitch + row : row;
  auto live = device_address(a, op.address, extent);
  if (!live) return live.error();
  CUdeviceptr d = live.value();
  CUstream stream = stream_for(op.stream);
  CUresult r = CUDA_SUCCESS;
  if (op.height <= 1) {
    switch (op.element_size) {
      case 1:
        r = op.async
                ? api_.cuMemsetD8Async(d, static_cast<unsigned char>(op.value), op.width, stream)
                : api_.cuMemsetD8(d, static_cast<unsigned char>(op.value), op.width);
        break;
      case 2:
        r = op.async
                ? api_.cuMemsetD16Async(d, static_cast<unsigned short>(op.value), op.width, stream)
                : api_.cuMemsetD16(d, static_cast<unsigned short>(op.value), op.width);
        break;
      default:
        r = op.async ? api_.cuMemsetD32Async(d, op.value, op.width, stream)
                     : api_.cuMemsetD32(d, op.value, op.width);
        break;
    }
  } else {
    // Row by row keeps to the required entry points; 2D memsets are rare and small.
    for (uint64_t y = 0; y < op.height && r == CUDA_SUCCESS; ++y) {
      CUdeviceptr row_ptr = d + y * op.pitch;
      switch (op.element_size) {
        case 1:
          r = api_.cuMemsetD8Async(row_ptr, static_cast<unsigned char>(op.value), op.width, stream);
          break;
        case 2:
          r = api_.cuMemsetD16Async(row_ptr, static_cast<unsigned short>(op.value), op.width,
                                    stream);
          break;
        default:
          r = api_.cuMemsetD32Async(row_ptr, op.value, op.width, stream);
          break;
      }
    }
    if (r == CUDA_SUCCESS && !op.async) r = api_.cuStreamSynchronize(stream);
  }
  if (r != CUDA_SUCCESS) return fail(a, "memset", r).with_address(op.address);
  return std::nullopt;
}

}  // namespace cusnap::replayer

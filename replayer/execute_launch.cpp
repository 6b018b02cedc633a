// Launches: function lookup, parameter blocks (with relocation), timing, repetitions.
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "replayer/execute.h"

namespace cusnap::replayer {
namespace {

constexpr size_t kRecentLaunches = 4;
constexpr size_t kMaxPendingTimings = 512;

}  // namespace

Expected<CUfunction> Executor::node_function_for(const Action& a, const LaunchOp& op) {
  auto f = function_for(a, op);
  if (!f || library_kernels_.count(f.value()) == 0) return f;
  if (auto it = kernel_functions_.find(f.value()); it != kernel_functions_.end()) return it->second;
  CUfunction function = nullptr;
  if (api_.cuKernelGetFunction == nullptr)
    return Error(ErrorKind::kUnsupported,
                 "a graph kernel node of a library kernel needs cuKernelGetFunction, which the "
                 "driver lacks")
        .at_call(a.seq);
  if (CUresult r = api_.cuKernelGetFunction(&function, reinterpret_cast<CUkernel>(f.value()));
      r != CUDA_SUCCESS)
    return fail(a, "cuKernelGetFunction (for a graph kernel node)", r).with_handle(op.function);
  kernel_functions_[f.value()] = function;
  return function;
}

Expected<CUfunction> Executor::function_for(const Action& a, const LaunchOp& op) {
  auto it = functions_.find(op.function);
  if (it != functions_.end()) return it->second;
  // The capture may lack the call that produced the handle (e.g. it started late): find the
  // kernel by name in the modules loaded so far.
  if (!op.kernel_name.empty()) {
    for (auto& [captured, m] : modules_) {
      CUfunction f = nullptr;
      CUresult r = CUDA_ERROR_NOT_FOUND;
      if (m.is_library && api_.cuLibraryGetKernel) {
        CUkernel k = nullptr;
        r = api_.cuLibraryGetKernel(&k, m.library, op.kernel_name.c_str());
        f = reinterpret_cast<CUfunction>(k);
        if (r == CUDA_SUCCESS) library_kernels_.insert(f);
      } else if (!m.is_library) {
        r = api_.cuModuleGetFunction(&f, m.module, op.kernel_name.c_str());
      }
      if (r == CUDA_SUCCESS && f != nullptr) {
        warn("function handle of '" + op.kernel_name + "' (call " + std::to_string(a.seq) +
             ") was never obtained in the capture; found it by name");
        functions_[op.function] = f;
        return f;
      }
    }
  }
  return Error(ErrorKind::kCapture,
               "launch of a function the capture never obtained ('" + op.kernel_name + "')")
      .at_call(a.seq)
      .in_record("launch")
      .with_handle(op.function);
}

MaybeError Executor::do_launch(const Action& a, const LaunchOp& op, const GraphStep* step) {
  auto f = function_for(a, op);
  if (!f) return f.error();
  note_order_dependence(f.value(), op.kernel_name, a.seq);
  CUstream stream = stream_for(op.stream);
  // A scratch copy (its capacity is reused: no allocation per launch) that relocation may edit.
  std::vector<uint8_t>& params = params_scratch_;
  params.assign(op.params.begin(), op.params.end());
  // Tensor maps first: their 128 bytes are found as captured (pointer rewriting without a
  // layout would otherwise edit words inside them).
  substitute_tensor_maps(params, op);
  static const std::vector<ParamSlot> kNoLayout;
  unsigned rewritten = memory_->rewrite_pointers(params, op.via_extra ? kNoLayout : op.layout);
  if (op.has_layout && op.layout.empty()) rewritten = 0;
  map_object_handles(params, op.layout, op.via_extra);

  LaunchReport report;
  report.seq = a.seq;
  report.ordinal = op.ordinal;
  report.kernel = op.kernel_name;
  report.grid = op.grid;
  report.block = op.block;
  report.shared_bytes = op.shared_bytes;
  report.selected = step != nullptr ? step->selected : selector_->select(op.kernel_name);
  report.graph_node = step != nullptr ? step->node : 0;
  report.pointers_rewritten = rewritten;
  size_t index = result_.launches.size();
  result_.launches.push_back(std::move(report));
  launches_awaiting_verdict_.push_back(index);

  if (op.cooperative && api_.cuOccupancyMaxActiveBlocksPerMultiprocessor != nullptr) {
    int per_sm = 0, sms = 0;
    int threads = static_cast<int>(op.block[0] * op.block[1] * op.block[2]);
    if (api_.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f.value(), threads,
                                                         op.shared_bytes) == CUDA_SUCCESS &&
        api_.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device_) ==
            CUDA_SUCCESS) {
      uint64_t blocks = uint64_t{op.grid[0]} * op.grid[1] * op.grid[2];
      if (blocks > static_cast<uint64_t>(per_sm) * static_cast<uint64_t>(sms)) {
        return Error(ErrorKind::kTarget, "cooperative launch of " + std::to_string(blocks) +
                                             " blocks; the device can keep " +
                                             std::to_string(per_sm * sms) + " resident")
            .at_call(a.seq)
            .in_record("launch");
      }
    }
  }

  // Memory snapshots: an extracted or kernel-filtered capture starts the launch from its captured
  // inputs; in a whole-run capture the memory before the launch is only compared with what was
  // captured.
  const bool restores = plan_.restores_inputs() && op.before.has_value();
  if (restores) {
    if (auto e = restore_snapshot(a, *op.before)) return e;
  } else if (op.before && options_.verify != VerifyMode::kNone) {
    if (auto e = compare_snapshot(a, op, *op.before)) return e;
  }
  if (auto e = tap_snapshot(a, op, SnapshotPhase::kBeforeLaunch, step)) return e;

  const bool timed = result_.launches[index].selected && options_.timing;
  watchdog_.launch_issued(a);
  if (watchdog_.launch_limited()) {
    // Adaptive sampling restarts the limit at each run (timed_repetitions).
    unsigned runs = options_.warmup + std::max(options_.repeat, 1u);
    watchdog_.launch_started(a, timed && !options_.sampling.adaptive ? runs : 1);
  }
  bool nvtx = options_.nvtx;
  if (nvtx) {
    std::string name = (op.kernel_name.empty() ? std::string("kernel") : demangle(op.kernel_name)) +
                       " #" + std::to_string(op.ordinal) + " (call " + std::to_string(a.seq) + ")";
    nvtxRangePushA(name.c_str());
  }
  MaybeError error = timed ? timed_repetitions(a, op, f.value(), stream, params, index)
                           : issue_launch(a, op, f.value(), stream, params);
  if (nvtx) nvtxRangePop();
  if (error) return error;
  if (watchdog_.launch_limited()) {
    // The limit is on the launch's end: wait for it here (after the end event of a timed run,
    // so timing is unchanged), the watchdog thread watching the clock meanwhile.
    if (CUresult r = api_.cuStreamSynchronize(stream); r != CUDA_SUCCESS)
      return fail(a, "cuStreamSynchronize after the launch of '" + op.kernel_name + "'", r);
    watchdog_.launch_ended();
  }
  if (access_table_ != nullptr) {
    if (auto e = take_accesses(a, index)) return e;
  }
  if (op.after && options_.verify != VerifyMode::kNone) {
    if (auto e = compare_snapshot(a, op, *op.after)) return e;
  }
  if (auto e = tap_snapshot(a, op, SnapshotPhase::kAfterLaunch, step)) return e;

  recent_launches_.push_back(LaunchRef{a.seq, op.ordinal, op.kernel_name});
  if (recent_launches_.size() > kRecentLaunches) recent_launches_.pop_front();
  ++launches_done_;
  return std::nullopt;
}

MaybeError Executor::issue_launch(const Action& a, const LaunchOp& op, CUfunction f,
                                  CUstream stream, std::vector<uint8_t>& params) {
  std::vector<void*>& args = args_scratch_;
  args.clear();
  size_t params_size = params.size();
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, params.data(), CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &params_size, CU_LAUNCH_PARAM_END};
  void** kernel_params = nullptr;
  void** extra_ptr = nullptr;
  if (op.via_extra) {
    extra_ptr = extra;
  } else {
    for (const ParamSlot& slot : op.layout) args.push_back(params.data() + slot.offset);
    kernel_params = args.empty() ? nullptr : args.data();
  }
  CUresult r = CUDA_SUCCESS;
  const char* api = "cuLaunchKernel";
  if (op.kind == LaunchOp::Kind::kLaunchKernelEx && !op.attributes.empty()) {
    api = "cuLaunchKernelEx";
    if (api_.cuLaunchKernelEx == nullptr) {
      return Error(ErrorKind::kUnsupported, "the driver has no cuLaunchKernelEx")
          .at_call(a.seq)
          .in_record("launch");
    }
    std::vector<CUlaunchAttribute> attributes(op.attributes.size());
    for (size_t i = 0; i < attributes.size(); ++i) {
      std::memset(&attributes[i], 0, sizeof attributes[i]);
      attributes[i].id = static_cast<CUlaunchAttributeID>(op.attributes[i].id);
      std::memcpy(&attributes[i].value, op.attributes[i].value.data(),
                  std::min(op.attributes[i].value.size(), sizeof attributes[i].value));
    }
    CUlaunchConfig config{};
    config.gridDimX = op.grid[0];
    config.gridDimY = op.grid[1];
    config.gridDimZ = op.grid[2];
    config.blockDimX = op.block[0];
    config.blockDimY = op.block[1];
    config.blockDimZ = op.block[2];
    config.sharedMemBytes = op.shared_bytes;
    config.hStream = stream;
    config.attrs = attributes.data();
    config.numAttrs = static_cast<unsigned>(attributes.size());
    r = api_.cuLaunchKernelEx(&config, f, kernel_params, extra_ptr);
  } else if (op.kind == LaunchOp::Kind::kCooperative) {
    api = "cuLaunchCooperativeKernel";
    if (api_.cuLaunchCooperativeKernel == nullptr || op.via_extra) {
      return Error(ErrorKind::kUnsupported, "cooperative launch not possible on this driver")
          .at_call(a.seq)
          .in_record("launch");
    }
    r = api_.cuLaunchCooperativeKernel(f, op.grid[0], op.grid[1], op.grid[2], op.block[0],
                                       op.block[1], op.block[2], op.shared_bytes, stream,
                                       kernel_params);
  } else {
    r = api_.cuLaunchKernel(f, op.grid[0], op.grid[1], op.grid[2], op.block[0], op.block[1],
                            op.block[2], op.shared_bytes, stream, kernel_params, extra_ptr);
  }
  if (r != CUDA_SUCCESS) {
    return fail(a, std::string(api) + " of '" + op.kernel_name + "'", r).with_handle(op.function);
  }
  return std::nullopt;
}

MaybeError Executor::timed_repetitions(const Action& a, const LaunchOp& op, CUfunction f,
                                       CUstream stream, std::vector<uint8_t>& params,
                                       size_t report) {
  const bool adaptive = options_.sampling.adaptive;
  const unsigned runs = options_.warmup + std::max(options_.repeat, 1u);  // fixed sampling
  const bool repeated = adaptive || runs > 1;
  // An extracted capture's inputs are its beforeLaunch snapshot: each run starts from them
  // (do_launch wrote them for the first), which also covers module variables, which
  // save_memory() does not.
  const bool restores = plan_.restores_inputs() && op.before.has_value();
  if (repeated && !restores) {
    if (auto e = save_memory()) return e;
  }
  // Memory is restored between runs; CUDA arrays are not. Textures only read them; a surface
  // may write one, and a kernel that reads what it wrote there sees its own writes.
  if (repeated && !warned_surface_repeats_) {
    for (const auto& [captured, o] : objects_) {
      if (!o.surface) continue;
      warned_surface_repeats_ = true;
      warn("call " + std::to_string(a.seq) +
           ": repeated while surface objects exist: CUDA arrays are not restored between "
           "repetitions, so a kernel that reads an array it writes does not start each run "
           "from the same contents");
      break;
    }
  }
  auto take_event = [&](CUevent* e) -> CUresult {
    if (!event_pool_.empty()) {
      *e = event_pool_.back();
      event_pool_.pop_back();
      return CUDA_SUCCESS;
    }
    return api_.cuEventCreate(e, CU_EVENT_DEFAULT);
  };
  std::vector<double> samples;
  std::chrono::steady_clock::time_point sampling_start;
  bool capped = false;
  for (unsigned run = 0;; ++run) {
    if (!adaptive && run == runs) break;
    if (adaptive && run == options_.warmup) sampling_start = std::chrono::steady_clock::now();
    if (adaptive && run > options_.warmup) {
      std::chrono::duration<double> wall = std::chrono::steady_clock::now() - sampling_start;
      SamplingState state = sampling_state(options_.sampling, samples, wall.count());
      if (state == SamplingState::kCapped) capped = true;
      if (state != SamplingState::kMore) break;
    }
    // Adaptive: the number of runs is not known up front, so --timeout-launch limits each run.
    if (adaptive && run > 0 && watchdog_.launch_limited()) watchdog_.launch_started(a, 1);
    if (run > 0) {
      if (auto e = restores ? restore_snapshot(a, *op.before) : restore_memory()) return e;
    }
    if (options_.cache_control == CacheControl::kAll && repeated) {
      if (auto e = flush_l2(stream)) return e;
    }
    CUevent start = nullptr, end = nullptr;
    if (CUresult r = take_event(&start); r != CUDA_SUCCESS) return fail(a, "cuEventCreate", r);
    if (CUresult r = take_event(&end); r != CUDA_SUCCESS) return fail(a, "cuEventCreate", r);
    if (CUresult r = api_.cuEventRecord(start, stream); r != CUDA_SUCCESS)
      return fail(a, "cuEventRecord", r);
    if (auto e = issue_launch(a, op, f, stream, params)) return e;
    if (CUresult r = api_.cuEventRecord(end, stream); r != CUDA_SUCCESS)
      return fail(a, "cuEventRecord", r);
    if (!repeated) {
      // One run: read the time later, without stalling the pipeline now.
      pending_timings_.push_back(PendingTiming{report, start, end});
      if (pending_timings_.size() >= kMaxPendingTimings) return resolve_timings();
      return std::nullopt;
    }
    if (CUresult r = api_.cuEventSynchronize(end); r != CUDA_SUCCESS)
      return fail(a, "cuEventSynchronize", r);
    float ms = 0;
    if (CUresult r = api_.cuEventElapsedTime(&ms, start, end); r != CUDA_SUCCESS) {
      return fail(a, "cuEventElapsedTime", r);
    }
    event_pool_.push_back(start);
    event_pool_.push_back(end);
    if (run >= options_.warmup) samples.push_back(ms);
  }
  TimeStats& time = result_.launches[report].time;
  time = summarize_times(std::move(samples));
  time.cap_hit = capped;
  time.mode = options_.cache_control == CacheControl::kAll ? "cold" : "hot";
  return std::nullopt;
}

MaybeError Executor::resolve_timings() {
  for (const PendingTiming& t : pending_timings_) {
    if (CUresult r = api_.cuEventSynchronize(t.end); r != CUDA_SUCCESS)
      return driver_.failure("cuEventSynchronize", r);
    float ms = 0;
    if (CUresult r = api_.cuEventElapsedTime(&ms, t.start, t.end); r != CUDA_SUCCESS) {
      return driver_.failure("cuEventElapsedTime", r);
    }
    result_.launches[t.launch].time = summarize_times({static_cast<double>(ms)});
    result_.launches[t.launch].time.mode = "once";
    event_pool_.push_back(t.start);
    event_pool_.push_back(t.end);
  }
  pending_timings_.clear();
  return std::nullopt;
}

MaybeError Executor::save_memory() {
  if (CUresult r = api_.cuCtxSynchronize(); r != CUDA_SUCCESS)
    return driver_.failure("cuCtxSynchronize", r);
  uint64_t total = memory_->mapped_bytes();
  if (total == 0) return std::nullopt;
  if (snapshot_bytes_ < total) {
    if (snapshot_ != 0) api_.cuMemFree(snapshot_);
    snapshot_ = 0;
    snapshot_bytes_ = 0;
    if (CUresult r = api_.cuMemAlloc(&snapshot_, total); r != CUDA_SUCCESS) {
      Error e = driver_.failure("allocating " + std::to_string(total >> 20) +
                                    " MiB to save the inputs of repeated launches",
                                r);
      return e;
    }
    snapshot_bytes_ = total;
  }
  uint64_t offset = 0;
  for (const PlacedRange& p : memory_->ranges()) {
    if (CUresult r = api_.cuMemcpyDtoD(snapshot_ + offset, p.live_base, p.size);
        r != CUDA_SUCCESS) {
      return driver_.failure("saving device memory", r);
    }
    offset += p.size;
  }
  if (CUresult r = api_.cuCtxSynchronize(); r != CUDA_SUCCESS)
    return driver_.failure("cuCtxSynchronize", r);
  return std::nullopt;
}

MaybeError Executor::restore_memory() {
  if (CUresult r = api_.cuCtxSynchronize(); r != CUDA_SUCCESS)
    return driver_.failure("cuCtxSynchronize", r);
  uint64_t offset = 0;
  for (const PlacedRange& p : memory_->ranges()) {
    if (CUresult r = api_.cuMemcpyDtoD(p.live_base, snapshot_ + offset, p.size);
        r != CUDA_SUCCESS) {
      return driver_.failure("restoring device memory", r);
    }
    offset += p.size;
  }
  if (CUresult r = api_.cuCtxSynchronize(); r != CUDA_SUCCESS)
    return driver_.failure("cuCtxSynchronize", r);
  return std::nullopt;
}

MaybeError Executor::flush_l2(CUstream stream) {
  if (l2_scratch_ == 0) {
    int l2 = 0;
    api_.cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, device_);
    if (l2 <= 0) return std::nullopt;  // nothing to flush (or the driver cannot tell)
    l2_bytes_ = uint64_t{2} * static_cast<uint64_t>(l2);
    if (CUresult r = api_.cuMemAlloc(&l2_scratch_, l2_bytes_); r != CUDA_SUCCESS) {
      l2_scratch_ = 0;
      return driver_.failure("allocating the L2 flush buffer", r);
    }
  }
  static unsigned value = 0;
  if (CUresult r = api_.cuMemsetD32Async(l2_scratch_, ++value, l2_bytes_ / 4, stream);
      r != CUDA_SUCCESS) {
    return driver_.failure("flushing L2", r);
  }
  return std::nullopt;
}

}  // namespace cusnap::replayer

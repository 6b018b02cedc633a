// Kernel launches: function, geometry, stream, the raw parameter bytes (from kernelParams laid
// out by the function's parameter layout, or the `extra` buffer verbatim) and every
// cuLaunchKernelEx attribute.
#include <cstring>
#include <string>
#include <vector>

#include "graphs.h"
#include "handles.h"
#include "hooks.h"
#include "launch_fields.h"
#include "launch_filter.h"
#include "session.h"
#include "snapshot.h"

namespace cusnap::icpt {
namespace {

// The parameter buffer passed through `extra` (CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE), if any.
bool extra_buffer(void** extra, const void** data, size_t* size) {
  if (extra == nullptr) return false;
  const void* pointer = nullptr;
  const size_t* length = nullptr;
  for (int i = 0; i < 64 && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) pointer = extra[i + 1];
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) length = static_cast<const size_t*>(extra[i + 1]);
  }
  if (pointer == nullptr || length == nullptr) return false;
  *data = pointer;
  *size = *length;
  return true;
}

// Where a launch's layout comes from when the table does not have one yet. Rare: once per
// function that was loaded lazily or that the shim did not see being created.
void learn_layout(HandleTable& table, uint64_t handle, const FunctionInfo* info) {
  bool is_kernel = info != nullptr && info->is_kernel;
  std::string name = info != nullptr ? info->name : query_function_name(handle, is_kernel);
  if (auto queried = query_param_layout(handle, is_kernel)) {
    // Lazy loading: the launch just materialised the function, so the driver can answer now.
    table.learn(handle, name, &*queried, LayoutSource::kDriverQuery);
  } else if (auto from_image =
                 info != nullptr ? table.image_layout(info->module, name) : std::nullopt) {
    table.learn(handle, name, &from_image->layout, from_image->source);
  } else {
    table.learn(handle, name, nullptr, LayoutSource::kUnknown);
  }
}

}  // namespace

void with_launch_fields(schema::Launch::Kind kind, CUfunction f, const Geometry& g,
                        void** kernel_params, void** extra, const CUlaunchAttribute* attributes,
                        unsigned attribute_count, bool cooperative, LaunchFieldsUse use) {
  HandleTable& table = HandleTable::instance();
  uint64_t handle = handle_value(f);
  const LaunchFacts* facts = table.lookup_cached(handle);
  if (facts == nullptr || facts->info.layout_source == LayoutSource::kUnknown) {
    learn_layout(table, handle, facts != nullptr ? &facts->info : nullptr);
    facts = table.lookup_cached(handle);
  }
  const FunctionInfo* info = facts != nullptr ? &facts->info : nullptr;
  bool have_layout = info != nullptr && info->layout_source != LayoutSource::kUnknown;

  format::LaunchFields fields;
  fields.kind = kind;
  fields.function = handle;
  std::memcpy(fields.grid, g.grid, sizeof fields.grid);
  std::memcpy(fields.block, g.block, sizeof fields.block);
  fields.shared_bytes = g.shared;
  fields.stream = handle_value(g.stream);
  fields.cooperative = cooperative;
  if (info != nullptr) fields.kernel_name = info->name;
  if (have_layout) {
    fields.has_layout = true;
    fields.layout = info->layout;
    if (info->layout_seq != UINT64_MAX) fields.layout_seq = info->layout_seq;
  }
  // Packed parameters: on the stack for the usual few hundred bytes (the writer copies them).
  constexpr size_t kStackParams = 4096;
  alignas(16) uint8_t stack_params[kStackParams];
  std::vector<uint8_t> heap_params;
  const void* extra_data = nullptr;
  size_t extra_size = 0;
  if (kernel_params == nullptr && extra_buffer(extra, &extra_data, &extra_size)) {
    fields.via_extra = true;
    fields.has_params = true;
    fields.params = std::span<const uint8_t>(static_cast<const uint8_t*>(extra_data), extra_size);
  } else if (kernel_params != nullptr && have_layout) {
    size_t bytes = facts->params_bytes;
    uint8_t* packed = stack_params;
    if (bytes > kStackParams) {
      heap_params.resize(bytes);
      packed = heap_params.data();
    }
    std::memset(packed, 0, bytes);  // padding between parameters
    pack_params(info->layout, kernel_params, packed);
    fields.has_params = true;
    fields.params = std::span<const uint8_t>(packed, bytes);
  }
  constexpr unsigned kStackAttributes = 16;
  format::LaunchAttributeFields stack_attributes[kStackAttributes];
  std::vector<format::LaunchAttributeFields> heap_attributes;
  if (attributes != nullptr && attribute_count > 0) {
    format::LaunchAttributeFields* list = stack_attributes;
    if (attribute_count > kStackAttributes) {
      heap_attributes.resize(attribute_count);
      list = heap_attributes.data();
    }
    for (unsigned i = 0; i < attribute_count; ++i) {
      list[i].id = static_cast<uint32_t>(attributes[i].id);
      list[i].value = std::span<const uint8_t>(
          reinterpret_cast<const uint8_t*>(&attributes[i].value), sizeof attributes[i].value);
    }
    fields.attributes = std::span<const format::LaunchAttributeFields>(list, attribute_count);
  }
  use(fields, have_layout);
}

namespace {

void commit_launch(CallScope& call, format::LaunchFields& fields, bool have_layout,
                   bool has_kernel_params);

// The hot path of capture: no allocation, no lock and no driver call once the function is known
// (HandleTable::lookup_cached), and no message building: the fields are handed to the writer,
// which builds the record on a compression worker (format::Writer::append_launch). On a stream
// being captured the launch adds a kernel node instead (graphs.h): a graphNode record.
void record_launch(CallScope& call, schema::Launch::Kind kind, CUfunction f, const Geometry& g,
                   void** kernel_params, void** extra, const CUlaunchAttribute* attributes,
                   unsigned attribute_count, bool cooperative) {
  // A kernel-filtered capture records only the launches its filter selected (launch_filter.h).
  if (g_kernel_filtered && !snapshot_selected_now()) {
    call.skip();
    return;
  }
  CapturedNode captured;
  if (call.result() == CUDA_SUCCESS && capture_possible() &&
      captured_node(g.stream, call.per_thread_stream(), &captured)) {
    auto add_node = [&](format::LaunchFields& fields, bool) {
      fields.stream = 0;
      auto node =
          init_node_record(call, schema::GraphNode::Kind::KERNEL, captured.graph, captured.node);
      set_captured(node, captured);
      format::build_launch(fields, node.initKernel());
      call.commit();
    };
    with_launch_fields(kind, f, g, kernel_params, extra, attributes, attribute_count, cooperative,
                       add_node);
    return;
  }
  auto commit = [&](format::LaunchFields& fields, bool have_layout) {
    commit_launch(call, fields, have_layout, kernel_params != nullptr);
  };
  with_launch_fields(kind, f, g, kernel_params, extra, attributes, attribute_count, cooperative,
                     commit);
}

void commit_launch(CallScope& call, format::LaunchFields& fields, bool have_layout,
                   bool has_kernel_params) {
  HandleTable& table = HandleTable::instance();
  uint64_t handle = fields.function;
  uint64_t ordinal = 0;
  uint64_t seq = commit_counted_launch([&] { return call.commit_launch(fields); }, &ordinal);
  snapshot_after(call, seq, ordinal);
  if (g_kernel_filtered) launch_filter_recorded();
  if (!have_layout && has_kernel_params && table.first_warning(handle)) {
    // The name refers to this thread's cached copy, which stays as it is until its next lookup.
    if (Session* session = Session::current()) {
      session->tool_event(1 /* warning */,
                          "no parameter layout for kernel '" + std::string(fields.kernel_name) +
                              "': the driver could not tell it; parameters not recorded",
                          seq);
    }
  }
}

}  // namespace

namespace hooks {

// Snapshots before selected launches (snapshot.h); nothing while snapshots are off.
CUSNAP_PRE_HOOK(cuLaunchKernel)
(CallScope& call, CUfunction f, unsigned int, unsigned int, unsigned int, unsigned int,
 unsigned int, unsigned int, unsigned int, CUstream hStream, void**, void**) {
  if (snapshots_enabled()) snapshot_before(call, f, hStream);
}

CUSNAP_PRE_HOOK(cuLaunchCooperativeKernel)
(CallScope& call, CUfunction f, unsigned int, unsigned int, unsigned int, unsigned int,
 unsigned int, unsigned int, unsigned int, CUstream hStream, void**) {
  if (snapshots_enabled()) snapshot_before(call, f, hStream);
}

CUSNAP_PRE_HOOK(cuLaunchKernelEx)
(CallScope& call, const CUlaunchConfig* config, CUfunction f, void**, void**) {
  if (snapshots_enabled()) snapshot_before(call, f, config != nullptr ? config->hStream : nullptr);
}

CUSNAP_POST_HOOK(cuLaunchKernel)
(CallScope& call, CUresult, CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
 unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
 unsigned int sharedMemBytes, CUstream hStream, void** kernelParams, void** extra) {
  Geometry g{
      {gridDimX, gridDimY, gridDimZ}, {blockDimX, blockDimY, blockDimZ}, sharedMemBytes, hStream};
  record_launch(call, schema::Launch::Kind::LAUNCH_KERNEL, f, g, kernelParams, extra, nullptr, 0,
                false);
}

CUSNAP_POST_HOOK(cuLaunchCooperativeKernel)
(CallScope& call, CUresult, CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
 unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
 unsigned int sharedMemBytes, CUstream hStream, void** kernelParams) {
  Geometry g{
      {gridDimX, gridDimY, gridDimZ}, {blockDimX, blockDimY, blockDimZ}, sharedMemBytes, hStream};
  record_launch(call, schema::Launch::Kind::LAUNCH_COOPERATIVE_KERNEL, f, g, kernelParams, nullptr,
                nullptr, 0, true);
}

CUSNAP_POST_HOOK(cuLaunchKernelEx)
(CallScope& call, CUresult, const CUlaunchConfig* config, CUfunction f, void** kernelParams,
 void** extra) {
  if (config == nullptr) {
    if (g_kernel_filtered && !snapshot_selected_now()) {
      call.skip();
      return;
    }
    call.record().initLaunch().setFunction(handle_value(f));
    uint64_t ordinal = 0;
    uint64_t seq = commit_counted_launch([&] { return call.commit(); }, &ordinal);
    snapshot_after(call, seq, ordinal);
    return;
  }
  Geometry g{{config->gridDimX, config->gridDimY, config->gridDimZ},
             {config->blockDimX, config->blockDimY, config->blockDimZ},
             config->sharedMemBytes,
             config->hStream};
  bool cooperative = false;
  for (unsigned i = 0; config->attrs != nullptr && i < config->numAttrs; ++i) {
    if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE &&
        config->attrs[i].value.cooperative != 0) {
      cooperative = true;
    }
  }
  record_launch(call, schema::Launch::Kind::LAUNCH_KERNEL_EX, f, g, kernelParams, extra,
                config->attrs, config->attrs != nullptr ? config->numAttrs : 0, cooperative);
}

}  // namespace hooks
}  // namespace cusnap::icpt

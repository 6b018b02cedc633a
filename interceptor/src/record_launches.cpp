// Kernel launches: function, geometry, stream, the raw parameter bytes (from kernelParams laid
// out by the function's parameter layout, or the `extra` buffer verbatim) and every
// cuLaunchKernelEx attribute.
#include <cstring>
#include <string>
#include <vector>

#include "handles.h"
#include "hooks.h"
#include "session.h"

namespace cusnap::icpt {
namespace {

struct Geometry {
  unsigned grid[3];
  unsigned block[3];
  unsigned shared;
  CUstream stream;
};

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
  } else if (auto from_image = info != nullptr ? table.image_layout(info->module, name) : std::nullopt) {
    table.learn(handle, name, &from_image->layout, from_image->source);
  } else {
    table.learn(handle, name, nullptr, LayoutSource::kUnknown);
  }
}

// The hot path of capture: no allocation, no lock and no driver call once the function is known
// (HandleTable::lookup_cached); parameters are packed straight into the record.
void record_launch(CallScope& call, schema::Launch::Kind kind, CUfunction f, const Geometry& g, void** kernel_params,
                   void** extra, const CUlaunchAttribute* attributes, unsigned attribute_count, bool cooperative) {
  HandleTable& table = HandleTable::instance();
  uint64_t handle = handle_value(f);
  const LaunchFacts* facts = table.lookup_cached(handle);
  if (facts == nullptr || facts->info.layout_source == LayoutSource::kUnknown) {
    learn_layout(table, handle, facts != nullptr ? &facts->info : nullptr);
    facts = table.lookup_cached(handle);
  }
  const FunctionInfo* info = facts != nullptr ? &facts->info : nullptr;
  static const std::string kNoName;
  const std::string& name = info != nullptr ? info->name : kNoName;
  bool have_layout = info != nullptr && info->layout_source != LayoutSource::kUnknown;

  auto launch = call.record().initLaunch();
  launch.setKind(kind);
  launch.setFunction(handle);
  launch.setGridX(g.grid[0]);
  launch.setGridY(g.grid[1]);
  launch.setGridZ(g.grid[2]);
  launch.setBlockX(g.block[0]);
  launch.setBlockY(g.block[1]);
  launch.setBlockZ(g.block[2]);
  launch.setSharedBytes(g.shared);
  launch.setStream(handle_value(g.stream));
  launch.setCooperative(cooperative);
  launch.setKernelName(capnp::Text::Reader(name.data(), name.size()));
  if (have_layout && info->layout_seq != UINT64_MAX) launch.setLayoutSeq(info->layout_seq);
  const void* extra_data = nullptr;
  size_t extra_size = 0;
  if (kernel_params == nullptr && extra_buffer(extra, &extra_data, &extra_size)) {
    launch.setViaExtra(true);
    launch.setParams(capnp::Data::Reader(static_cast<const uint8_t*>(extra_data), extra_size));
  } else if (kernel_params != nullptr && have_layout) {
    auto bytes = launch.initParams(static_cast<unsigned>(facts->params_bytes));  // zeroed
    pack_params(info->layout, kernel_params, bytes.begin());
  }
  if (have_layout) {
    const std::vector<ParamSlot>& layout = info->layout;
    auto slots = launch.initLayout(static_cast<unsigned>(layout.size()));
    for (size_t i = 0; i < layout.size(); ++i) {
      slots[i].setOffset(layout[i].offset);
      slots[i].setSize(layout[i].size);
    }
  }
  if (attributes != nullptr && attribute_count > 0) {
    auto list = launch.initAttributes(attribute_count);
    for (unsigned i = 0; i < attribute_count; ++i) {
      list[i].setId(static_cast<uint32_t>(attributes[i].id));
      list[i].setValue(capnp::Data::Reader(reinterpret_cast<const uint8_t*>(&attributes[i].value),
                                           sizeof attributes[i].value));
    }
  }
  uint64_t seq = call.commit();
  if (!have_layout && kernel_params != nullptr && table.first_warning(handle)) {
    // `name` refers to this thread's cached copy, which stays as it is until its next lookup.
    if (Session* session = Session::current()) {
      session->tool_event(1 /* warning */, "no parameter layout for kernel '" + name +
                                               "': the driver could not tell it; parameters not recorded",
                          seq);
    }
  }
}

}  // namespace

namespace hooks {

CUSNAP_POST_HOOK(cuLaunchKernel)(CallScope& call, CUresult, CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                 unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                 unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                 void** kernelParams, void** extra) {
  Geometry g{{gridDimX, gridDimY, gridDimZ}, {blockDimX, blockDimY, blockDimZ}, sharedMemBytes, hStream};
  record_launch(call, schema::Launch::Kind::LAUNCH_KERNEL, f, g, kernelParams, extra, nullptr, 0, false);
}

CUSNAP_POST_HOOK(cuLaunchCooperativeKernel)(CallScope& call, CUresult, CUfunction f, unsigned int gridDimX,
                                            unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,
                                            unsigned int blockDimY, unsigned int blockDimZ,
                                            unsigned int sharedMemBytes, CUstream hStream, void** kernelParams) {
  Geometry g{{gridDimX, gridDimY, gridDimZ}, {blockDimX, blockDimY, blockDimZ}, sharedMemBytes, hStream};
  record_launch(call, schema::Launch::Kind::LAUNCH_COOPERATIVE_KERNEL, f, g, kernelParams, nullptr, nullptr, 0, true);
}

CUSNAP_POST_HOOK(cuLaunchKernelEx)(CallScope& call, CUresult, const CUlaunchConfig* config, CUfunction f,
                                   void** kernelParams, void** extra) {
  if (config == nullptr) {
    call.record().initLaunch().setFunction(handle_value(f));
    call.commit();
    return;
  }
  Geometry g{{config->gridDimX, config->gridDimY, config->gridDimZ},
             {config->blockDimX, config->blockDimY, config->blockDimZ},
             config->sharedMemBytes,
             config->hStream};
  bool cooperative = false;
  for (unsigned i = 0; config->attrs != nullptr && i < config->numAttrs; ++i) {
    if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && config->attrs[i].value.cooperative != 0) {
      cooperative = true;
    }
  }
  record_launch(call, schema::Launch::Kind::LAUNCH_KERNEL_EX, f, g, kernelParams, extra, config->attrs,
                config->attrs != nullptr ? config->numAttrs : 0, cooperative);
}

}  // namespace hooks
}  // namespace cusnap::icpt

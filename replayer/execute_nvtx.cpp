// The application's NVTX ranges and marks in a replay (docs/replay.md, "NVTX"): each nvtx record
// becomes the same NVTX call again, with the same domain (created by name), message, category and
// color, at its place among the replayed calls, so that a tool filtering on NVTX (nsys, ncu
// --nvtx-include) finds the same ranges around the same kernels. Messages are passed as ASCII
// (UTF-8) text even where the application registered them; payloads were not recorded.
#include <nvtx3/nvToolsExt.h>

#include "replayer/execute.h"

namespace cusnap::replayer {

void Executor::do_nvtx(const NvtxOp& op) {
  nvtxDomainHandle_t domain = nullptr;  // the default domain
  if (op.domain_handle != 0) {
    auto [it, created] = nvtx_domains_.try_emplace(op.domain_handle, nullptr);
    if (created) it->second = nvtxDomainCreateA(op.domain.c_str());
    domain = static_cast<nvtxDomainHandle_t>(it->second);
  }
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.category = op.category;
  if (op.has_color) {
    attributes.colorType = NVTX_COLOR_ARGB;
    attributes.color = op.color;
  }
  attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attributes.message.ascii = op.message.c_str();
  // The default domain through the CORE calls (nvtxRangePushEx, ...), as most applications
  // emit it; a named one through the domain calls.
  switch (op.kind) {
    case NvtxOp::Kind::kPush:
      if (domain != nullptr) {
        nvtxDomainRangePushEx(domain, &attributes);
      } else {
        nvtxRangePushEx(&attributes);
      }
      break;
    case NvtxOp::Kind::kPop:
      if (domain != nullptr) {
        nvtxDomainRangePop(domain);
      } else {
        nvtxRangePop();
      }
      break;
    case NvtxOp::Kind::kStart:
      nvtx_ranges_[op.range_id] = domain != nullptr ? nvtxDomainRangeStartEx(domain, &attributes)
                                                    : nvtxRangeStartEx(&attributes);
      break;
    case NvtxOp::Kind::kEnd:
      if (auto it = nvtx_ranges_.find(op.range_id); it != nvtx_ranges_.end()) {
        if (domain != nullptr) {
          nvtxDomainRangeEnd(domain, it->second);
        } else {
          nvtxRangeEnd(it->second);
        }
        nvtx_ranges_.erase(it);
      }
      break;
    case NvtxOp::Kind::kMark:
      if (domain != nullptr) {
        nvtxDomainMarkEx(domain, &attributes);
      } else {
        nvtxMarkEx(&attributes);
      }
      break;
  }
}

}  // namespace cusnap::replayer

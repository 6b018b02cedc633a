#include "stream_order.h"

#include <memory>

#include "log.h"
#include "shim_runtime.h"

namespace cusnap::icpt {
namespace {

void CUDA_CB run_work(void* user_data) {
  std::unique_ptr<std::function<void()>> work(static_cast<std::function<void()>*>(user_data));
  try {
    (*work)();
  } catch (...) {
    log_once(LogLevel::kError, "stream-order-work", "a stream-ordered recording step failed");
  }
}

}  // namespace

bool stream_is_capturing(CUstream stream, bool per_thread) noexcept {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUresult result = CUDA_ERROR_NOT_SUPPORTED;
  if (per_thread) {
    if (auto f = CUSNAP_REAL(cuStreamIsCapturing_ptsz)) result = f(stream, &status);
  } else if (auto f = CUSNAP_REAL(cuStreamIsCapturing)) {
    result = f(stream, &status);
  }
  // A driver that cannot tell has no stream capture to protect.
  return result == CUDA_SUCCESS && status != CU_STREAM_CAPTURE_STATUS_NONE;
}

bool run_in_stream_order(CUstream stream, bool per_thread, std::function<void()> work) noexcept {
  if (stream_is_capturing(stream, per_thread)) return false;
  auto launch = per_thread ? CUSNAP_REAL(cuLaunchHostFunc_ptsz) : CUSNAP_REAL(cuLaunchHostFunc);
  if (launch == nullptr) return false;
  try {
    auto* heap = new std::function<void()>(std::move(work));
    if (launch(stream, run_work, heap) != CUDA_SUCCESS) {
      delete heap;
      return false;
    }
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace cusnap::icpt

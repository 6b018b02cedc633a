// Access tracking: the process-wide switch and the last tracked launch's sets. Launches complete
// on stream worker threads while a client may call the table from any thread: one mutex guards
// both the pending record and the one handed out.
#include "driver/access_tracking.h"

#include <atomic>
#include <bit>
#include <mutex>
#include <utility>

#include "driver/module.h"
#include "generated_driver_api.h"

namespace cusnap::emu::driver {
namespace {

struct Record {
  bool present = false;
  uint64_t chunk_bytes = 0;
  uint64_t serial = 0;
  int status = CUDA_SUCCESS;
  std::string kernel;
  std::vector<uint64_t> read, written;
};

std::atomic<uint64_t> g_chunk_bytes{0};
std::mutex g_mutex;
Record g_last;   // completed, not taken yet
Record g_taken;  // what the last take_last_launch returned (its arrays are the client's view)
uint64_t g_serial = 0;

int enable(uint64_t chunk_bytes) {
  if (chunk_bytes != 0 && !std::has_single_bit(chunk_bytes)) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(g_mutex);
  g_chunk_bytes.store(chunk_bytes);
  g_last = Record{};
  g_taken = Record{};
  return CUDA_SUCCESS;
}

int take_last_launch(common::EmulatorLaunchAccesses* out) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_last.present) return CUDA_ERROR_NOT_FOUND;
  g_taken = std::move(g_last);
  g_last = Record{};
  out->chunk_bytes = g_taken.chunk_bytes;
  out->serial = g_taken.serial;
  out->status = g_taken.status;
  out->kernel = g_taken.kernel.c_str();
  out->read_chunks = g_taken.read.data();
  out->read_count = g_taken.read.size();
  out->written_chunks = g_taken.written.data();
  out->written_count = g_taken.written.size();
  return CUDA_SUCCESS;
}

// The determinism classification of compile() (ptx/schedule.cpp), as it decided the launch's
// block order.
int order_dependence(const void* function, const char** reason) {
  if (reason == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const Function* f = function_from_handle(function);
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *reason = f->desc->serial_blocks ? f->desc->serial_reason.c_str() : nullptr;
  return CUDA_SUCCESS;
}

const common::EmulatorAccessTable kTable = {sizeof(common::EmulatorAccessTable), enable,
                                            take_last_launch, order_dependence};

}  // namespace

uint64_t tracking_chunk_bytes() { return g_chunk_bytes.load(std::memory_order_relaxed); }

void note_tracked_launch(const std::string& kernel, int status, uint64_t chunk_bytes,
                         std::vector<uint64_t> read_chunks, std::vector<uint64_t> written_chunks) {
  std::lock_guard<std::mutex> lock(g_mutex);
  // A launch queued before tracking was switched off or changed still completes: its sets are
  // at the size it was tracked at, which the record says, so nothing is misread.
  g_last.present = true;
  g_last.chunk_bytes = chunk_bytes;
  g_last.serial = ++g_serial;
  g_last.status = status;
  g_last.kernel = kernel;
  g_last.read = std::move(read_chunks);
  g_last.written = std::move(written_chunks);
}

const common::EmulatorAccessTable* access_table() { return &kTable; }

}  // namespace cusnap::emu::driver

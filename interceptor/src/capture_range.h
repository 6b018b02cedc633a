// Capture ranges (docs/capture.md, "Capture ranges"): record only between a start and a stop
// trigger (cuProfilerStart/Stop, an NVTX range, SIGUSR1), Nsight Systems' names and semantics.
//
// - Outside a range the shim records nothing: CallScope lets only the calls that create or
//   destroy state run their recorders (contexts, modules, functions, variables, memory, streams,
//   events, arrays, texture objects: is_state_symbol); their records go to the state log, which
//   keeps the creation records of what is live (a destroy removes its creation record, so the
//   log is bounded by what the application holds) and the images of the loaded modules.
// - At the start of a range the session opens the range's file, the log's blobs and records are
//   written first (ordinary creation records, new seqs), then one memorySnapshot (phase
//   rangeStart) with the contents of every live allocation and module variable (snapshot.h),
//   then the range's calls as in a normal capture (their state records also go to the log).
// - At the end of the range the file is closed; `stop` then stops recording for good (the
//   fast path), `repeat[:N]` goes on keeping the log for the next range.
// - signal: the SIGUSR1 handler (installed at the application's first driver call) only counts
//   the signal in an atomic and chains to the handler that was installed before; the toggle
//   happens at the next intercepted call (CallScope's constructor tests one flag).
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <string>

#include "cusnap/capture/config.h"
#include "cusnap/format/blob_id.h"
#include "cusnap/format/capture.capnp.h"
#include "generated_shim_api.h"

namespace cusnap::format {
class Writer;
}

namespace cusnap::icpt {

// Constant after start-up: capture ranges are configured.
extern bool g_ranges_configured;
// Inside a range now.
extern std::atomic<bool> g_in_range;
// Work for the next intercepted call (the signal trigger: install the handler, apply toggles).
extern std::atomic<bool> g_range_attention;

// Reads the range settings (Session::start); false when they are invalid (logged: no capture).
bool configure_ranges(const capture::CaptureConfig& config) noexcept;
const capture::RangeSettings& range_settings() noexcept;

// The driver entry points (by name) that create or destroy state a replay needs: contexts,
// modules, functions, variables, memory, streams, events, arrays, texture objects, and the
// triggers. Kernel-filtered captures (launch_filter.h) record these too.
bool is_state_name(const char* name) noexcept;
// True for the calls whose recorders must run outside a range (they create or destroy state
// the range's start must restate, or they are a trigger).
bool is_state_symbol(SymbolId id) noexcept;
// A call outside a range that is not a state call is passed through unrecorded.
inline bool range_skips(SymbolId id) noexcept {
  return g_ranges_configured && !g_in_range.load(std::memory_order_relaxed) && !is_state_symbol(id);
}
// CallScope's constructor, when g_range_attention is set.
void range_attention() noexcept;

// Starts a range (no-op inside one, or when every range allowed has been recorded); ends it.
void range_begin(const char* why) noexcept;
void range_end() noexcept;
// At exit: a range still open is closed; when none ever started, an empty file says so.
void ranges_at_exit() noexcept;
// NVTX trigger: does a push/start of `message` in `domain` (nullptr: the default one) start one?
bool nvtx_starts_range(const std::string* domain, const std::string& message) noexcept;

// The state log (called by Session for every record while more ranges may come).
void range_note_record(format::schema::CallRecord::Reader record) noexcept;
// A module image (content `id`) a state record will name: kept while the module is loaded.
void range_keep_image(std::span<const uint8_t> bytes, const format::BlobId& id) noexcept;
// Writes the log's images and records to `writer` (the range's file, just opened).
bool range_write_state(format::Writer& writer, std::string& error) noexcept;

}  // namespace cusnap::icpt

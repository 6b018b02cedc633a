// Kernel-filtered capture (docs/capture.md, "Kernel filters"): `cusnap capture --kernel-name
// FILTER [--launch-skip N] [--launch-count M]` records in full only the launches the filter
// selects (the one selection, common/kernel_filter.h, through the snapshot machinery), with what
// their replay needs:
//
// - Every call that creates or destroys state (capture_range.h, is_state_name: contexts,
//   modules with their images, functions, variables, memory, streams, events, arrays, texture
//   objects) is recorded as it happens, so the file itself is the state log: no restatement at
//   each selected launch (several selected launches share one file and one set of creation
//   records). The bookkeeping calls the shim's own safety needs are recorded too (host
//   functions, event records and waits: host_funcs.h; stream capture begin/end: the capture
//   mode of the tool's calls).
// - Every other call (copies, memsets, unselected launches, synchronisation, graphs, ...) is
//   passed through unrecorded (CallScope), only counted for the snapshots' overlap detection.
// - A selected launch gets a beforeLaunch snapshot of every live allocation and module variable
//   (content-addressed: an unchanged chunk costs an index entry) that replay restores, the launch
//   record, and the afterLaunch snapshot replay verifies it against (snapshot.h).
// - Once --launch-count launches are recorded the shim writes the summary (a toolEvent, format/
//   kernel_filter_summary.h) and stops recording: every later call takes the fast path.
#pragma once

#include "cusnap/capture/config.h"
#include "generated_shim_api.h"

namespace cusnap::icpt {

// Constant after start-up: the capture is kernel-filtered.
extern bool g_kernel_filtered;

// Checks the settings (Session::start; false, logged, when they conflict: nothing is recorded)
// and builds the table of recorded entry points.
bool configure_launch_filter(const capture::CaptureConfig& config) noexcept;
// True for a call a kernel-filtered capture passes through unrecorded.
bool launch_filter_skips(SymbolId id) noexcept;
// After a selected launch's records: when the selection is exhausted, the summary is written
// and recording stops.
void launch_filter_recorded() noexcept;
// At close: the summary, unless written already.
void launch_filter_at_close() noexcept;

}  // namespace cusnap::icpt

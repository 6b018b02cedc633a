// --minimize: which memory an extracted launch reads and writes, found by replaying the extract
// once on the cusnap emulator with its access tracking (docs/extract.md, "Minimized extracts").
// The emulator is a driver the replayer dlopen()s; the tracking is asked for through the
// driver's cuGetExportTable (cusnap/common/emulator_access.h), so nothing here links it.
#include <algorithm>
#include <bit>
#include <filesystem>

#include "cusnap/extract/extract.h"
#include "replayer/replay.h"

namespace cusnap::extract {

using format::ErrorCode;
using format::Result;
using format::Status;

namespace {

// The tracking granularity: fine enough that a snapshot chunk is judged on its own bytes when
// allocations are not aligned to it, coarse enough that the sets stay small.
constexpr uint64_t kMaxTrackChunkBytes = 4096;

}  // namespace

Result<TouchedMemory> track_extracted(const std::string& path) {
  const std::string who = path + ": --minimize";
  auto opened = format::Reader::open(path);
  if (!opened) return opened.status();
  const uint64_t snapshot_chunk = (*opened)->header().getOptions().getSnapshotChunkBytes();
  opened->reset();
  replayer::ReplayOptions options;
  options.driver = "emulator";
  options.verify = replayer::VerifyMode::kChecksum;
  options.timing = false;
  options.nvtx = false;
  options.track_chunk_bytes =
      std::bit_floor(std::clamp<uint64_t>(snapshot_chunk, 1, kMaxTrackChunkBytes));
  auto replayed = replayer::replay_capture(path, options);
  if (!replayed) {
    return Status::error(ErrorCode::kInvalidArgument,
                         who + ": replaying it on the emulator failed: " +
                             replayed.error().to_string() + " (--keep-all keeps every byte)");
  }
  const replayer::ReplayResult& r = replayed.value();
  if (r.launches.size() != 1 || !r.launches.front().accesses) {
    return Status::error(ErrorCode::kInvalidArgument,
                         who + ": expected one tracked launch, the replay made " +
                             std::to_string(r.launches.size()));
  }
  if (!r.matched() || r.snapshots.compared_chunks == 0) {
    return Status::error(
        ErrorCode::kInvalidArgument,
        who + ": on the emulator the launch does not leave memory as captured (" +
            std::to_string(r.snapshots.mismatched_chunks) + " of " +
            std::to_string(r.snapshots.compared_chunks) +
            " chunks differ), so what it touched there says nothing about the capture: not "
            "minimized (--keep-all keeps every byte)");
  }
  const replayer::LaunchAccesses& a = *r.launches.front().accesses;
  TouchedMemory touched;
  touched.read = a.read;
  touched.written = a.written;
  touched.chunk_bytes = options.track_chunk_bytes;
  return touched;
}

Result<ExtractedLaunch> minimize_extracted(const std::string& path) {
  std::error_code ec;
  auto fail = [&](Status st) -> Result<ExtractedLaunch> {
    std::filesystem::remove(path, ec);
    return st;
  };
  auto touched = track_extracted(path);
  if (!touched) return fail(touched.status());
  // The extract is its own source: its one launch, with both snapshots (any route wrote them).
  auto opened = format::Reader::open(path);
  if (!opened) return fail(opened.status());
  format::Reader& extracted = **opened;
  ExtractOptions snapshots_only;
  snapshots_only.route = Route::kSnapshots;
  auto plans = plan_extraction(extracted, Selection{}, snapshots_only);
  if (!plans) return fail(plans.status());
  if (plans->size() != 1)
    return fail(Status::error(ErrorCode::kInvalidArgument,
                              path + ": --minimize: an extract holds one launch, this one " +
                                  std::to_string(plans->size())));
  const std::string temporary = path + ".minimizing";
  auto done = write_extracted(extracted, path, plans->front(), temporary, &*touched);
  opened->reset();
  if (done) {
    std::filesystem::rename(temporary, path, ec);
    if (ec) {
      done = Status::error(ErrorCode::kIo,
                           "cannot rename " + temporary + " to " + path + ": " + ec.message());
    } else {
      done->output_path = path;
    }
  }
  if (!done) {
    std::filesystem::remove(temporary, ec);
    return fail(done.status());
  }
  return done;
}

}  // namespace cusnap::extract

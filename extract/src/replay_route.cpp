// Writing every planned launch: the snapshot route by file work, the replay route in one replay
// pass of the source (replayer/) whose snapshot tap reads, before and after each such launch, the
// ranges a capture-time snapshot would have covered (docs/extract.md, "Routes").
#include <deque>
#include <map>

#include "cusnap/extract/extract.h"
#include "cusnap/format/blob_id.h"
#include "internal.h"
#include "replayer/driver.h"
#include "replayer/replay.h"

namespace cusnap::extract {

using format::ErrorCode;
using format::Result;
using format::Status;

namespace {

Status from_replay(const replayer::Error& e) {
  return Status::error(e.kind() == replayer::ErrorKind::kInvalidArgument
                           ? ErrorCode::kInvalidArgument
                           : ErrorCode::kNotFound,
                       "prefix replay: " + e.to_string());
}

}  // namespace

Status extract_launches(
    format::Reader& source, const std::string& source_path, const std::vector<LaunchPlan>& plans,
    const std::vector<std::string>& out_paths, const ExtractOptions& options,
    const std::function<void(const LaunchPlan&, const Result<ExtractedLaunch>&)>& done) {
  if (out_paths.size() != plans.size())
    return Status::error(ErrorCode::kInvalidArgument, "one output path per planned launch");
  const auto key = detail::launch_key;
  std::map<replayer::LaunchKey, size_t> replayed;  // launch -> index into plans
  for (size_t i = 0; i < plans.size(); ++i) {
    if (!plans[i].unsupported_reason.empty()) {
      done(plans[i], Status::error(ErrorCode::kInvalidArgument,
                                   describe(plans[i]) +
                                       " cannot be extracted: " + plans[i].unsupported_reason));
    } else if (plans[i].route == Route::kReplay) {
      replayed[key(plans[i])] = i;
    } else {
      done(plans[i], write_extracted(source, source_path, plans[i], out_paths[i]));
    }
  }
  if (replayed.empty()) return Status::ok();

  auto choice = replayer::resolve_driver(options.driver);
  if (!choice) return from_replay(choice.error());
  auto plan = replayer::build_plan(source);
  if (!plan) return from_replay(plan.error());

  replayer::ReplayOptions replay;
  replay.driver = choice->path;  // resolved once: the one ExtractInfo.routeDriver names
  replay.timing = false;
  replay.nvtx = false;
  if (options.on_warning) {
    replay.on_message = [&](replayer::MessageLevel level, const std::string& message) {
      if (level == replayer::MessageLevel::kWarning) options.on_warning(message);
    };
  }
  replayer::SnapshotTap tap;
  tap.chunk_bytes = plans[replayed.begin()->second].chunk_bytes;
  for (const auto& [launch, i] : replayed) {
    tap.ranges[launch] = plans[i].snapshot_ranges;
    // Module variables no record names: looked up on the driver at the launch.
    if (!plans[i].unrecorded_variables.empty())
      tap.variables[launch] = {plans[i].module_handle, plans[i].unrecorded_variables};
    // CUDA arrays under its texture/surface objects: read whole.
    for (const PlannedArray& a : plans[i].arrays)
      tap.arrays[launch].push_back(
          {a.handle, a.extent.width_bytes, a.extent.height, a.extent.depth});
  }

  // The before-state of the launch being extracted, kept until its after-state is read, and its
  // plan with the variables the replay looked up.
  LaunchPlan current;
  detail::PhaseContents before;
  std::vector<uint8_t> before_bytes;
  std::deque<std::vector<uint8_t>> before_array_bytes;  // stable: before.arrays points into it
  bool refused = false;
  std::map<replayer::LaunchKey, bool> reported;  // launch -> done() called
  tap.on_snapshot = [&](const replayer::TakenSnapshot& taken) -> replayer::MaybeError {
    const size_t index = replayed.at(replayer::LaunchKey{taken.launch_seq, taken.graph_kernel});
    const std::string& out = out_paths[index];
    if (taken.phase == replayer::SnapshotPhase::kBeforeLaunch) {
      current = plans[index];
      for (const replayer::TapVariable& v : taken.variables) {
        current.looked_up_variables.push_back({v.module, v.is_library, v.name, v.address, v.size});
        current.kept_ranges.emplace_back(v.address, v.size);
      }
    }
    const LaunchPlan& p = current;
    if (taken.phase == replayer::SnapshotPhase::kBeforeLaunch) {
      refused = false;
      before = {};
      before_bytes.clear();
      if (!taken.diverged.empty() && !options.allow_diverged) {
        refused = true;
        reported[key(p)] = true;
        done(p, Status::error(ErrorCode::kInvalidArgument,
                              describe(p) + ": the replay diverged from the capture before it (" +
                                  taken.diverged +
                                  "); its inputs would not be the application's "
                                  "(--allow-diverged writes it anyway)"));
        return std::nullopt;
      }
      // Copied: the tap's buffer is read again after the launch.
      uint64_t total = 0;
      for (const auto& c : taken.chunks)
        if (detail::kept(p, c.address, c.bytes.size())) total += c.bytes.size();
      before_bytes.reserve(total);
      for (const auto& c : taken.chunks) {
        if (!detail::kept(p, c.address, c.bytes.size())) continue;
        before_bytes.insert(before_bytes.end(), c.bytes.begin(), c.bytes.end());
        before.chunks.push_back({c.address, c.bytes.size(), c.id, false, {}});
      }
      uint64_t offset = 0;
      for (auto& c : before.chunks) {
        c.bytes = std::span<const uint8_t>(before_bytes.data() + offset, c.size);
        offset += c.size;
      }
      before_array_bytes.clear();
      for (const replayer::TakenArray& t : taken.arrays) {
        before_array_bytes.emplace_back(t.bytes.begin(), t.bytes.end());
        before.arrays.push_back({t.array, before_array_bytes.back()});
      }
      return std::nullopt;
    }
    if (refused) return std::nullopt;
    detail::PhaseContents after;
    for (const auto& c : taken.chunks)
      if (detail::kept(p, c.address, c.bytes.size()))
        after.chunks.push_back({c.address, c.bytes.size(), c.id, false, c.bytes});
    for (const replayer::TakenArray& t : taken.arrays) after.arrays.push_back({t.array, t.bytes});
    auto written = detail::write_capture(source, source_path, p, out, before, after, choice->path);
    if (written && !taken.diverged.empty()) {
      written->plan.notes.push_back("written although the replay had diverged before it (" +
                                    taken.diverged + ")");
    }
    reported[key(p)] = true;
    done(p, written);
    return std::nullopt;
  };
  replay.tap = std::move(tap);
  auto result = replayer::replay_plan(source, plan.value(), replay);
  if (!result) return from_replay(result.error());
  for (const auto& [launch, i] : replayed) {
    if (reported.count(launch) != 0) continue;
    done(plans[i],
         Status::error(ErrorCode::kNotFound,
                       describe(plans[i]) + ": the replay did not run it (the replay plan skipped "
                                            "the launch)"));
  }
  return Status::ok();
}

}  // namespace cusnap::extract

// `cusnap replay`: re-executes a capture on a driver chosen at run time, verifies the
// device-to-host results against the capture's checksums, and times launches (docs/replay.md).
#pragma once

#include <CLI/CLI.hpp>

namespace cusnap::cli {

// Exit codes of `cusnap replay` beyond those in common.h.
inline constexpr int kExitMismatch = 5;      // replayed to the end, a verification mismatched
inline constexpr int kExitReplayFailed = 6;  // target unusable or a replayed call failed
// --verify checksum, nothing compared (no copy checksum, no snapshot chunk), no --allow-unverified
inline constexpr int kExitNothingVerified = 7;
inline constexpr int kExitNothingSelected = 8;  // --kernel-name/--launch-skip selected no launch
// Past --timeout-launch / --timeout (replayer/watchdog.h), or CUDA_ERROR_LAUNCH_TIMEOUT.
inline constexpr int kExitTimeout = 9;

void register_replay(CLI::App& app, int& exit_code);

}  // namespace cusnap::cli

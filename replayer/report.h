// The --report FILE.json document (schema "cusnap-replay-report", version 1;
// docs/schemas/replay-report.md describes every field), written with cusnap's one JSON writer
// (cusnap/common/json_writer.h). Field names are stable: new fields may be added, none removed.
#pragma once

#include <string>

#include "replayer/replay.h"

namespace cusnap::replayer {

inline constexpr int kReportSchemaVersion = 1;

// The JSON text of a report (UTF-8, one object, newline at the end).
std::string report_json(const ReplayResult& result, const ReplayOptions& options);

// Writes report_json() to `path` (replacing it). Errors: the file cannot be written.
MaybeError write_report(const std::string& path, const ReplayResult& result,
                        const ReplayOptions& options);

}  // namespace cusnap::replayer

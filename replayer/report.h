// The --report FILE.json document (schema "cusnap-replay-report", version 2;
// docs/schemas/replay-report.md describes every field), written with cusnap's one JSON writer
// (cusnap/common/json_writer.h). Field names are stable: new fields may be added, none removed.
#pragma once

#include <string>

#include "replayer/replay.h"

namespace cusnap::replayer {

// 2: launches[].time_ms gains the samples (values), noise, cap_hit and mode; options the
// sampling policy (--repeat auto); outputs and copies[].output (--save-outputs).
inline constexpr int kReportSchemaVersion = 2;

// The JSON text of a report (UTF-8, one object, newline at the end).
std::string report_json(const ReplayResult& result, const ReplayOptions& options);

// Writes report_json() to `path` (replacing it). Errors: the file cannot be written.
MaybeError write_report(const std::string& path, const ReplayResult& result,
                        const ReplayOptions& options);

}  // namespace cusnap::replayer

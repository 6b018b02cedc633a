// The --report FILE.json document (schema "cusnap-replay-report", version 2;
// docs/schemas/replay-report.md describes every field), written with cusnap's one JSON writer
// (cusnap/common/json_writer.h). Field names are stable: new fields may be added, none removed.
#pragma once

#include <string>

#include "cusnap/common/json_writer.h"
#include "replayer/replay.h"

namespace cusnap::replayer {

// 2: launches[].time_ms gains the samples (values), noise, cap_hit and mode; options the
// sampling policy (--repeat auto); outputs and copies[].output (--save-outputs).
inline constexpr int kReportSchemaVersion = 2;

// The one JSON form of an element-wise comparison under a tolerance (the report's and compare's
// "tolerance" objects): rule, within, counts and the worst elements, whose two values are written
// under `first_key` and `second_key` ("expected"/"actual" in a report, "a"/"b" in compare).
void write_element_comparison(common::JsonWriter& j, const std::string& rule, bool within,
                              const ElementComparison& c, const char* first_key,
                              const char* second_key);

// The JSON text of a report (UTF-8, one object, newline at the end).
std::string report_json(const ReplayResult& result, const ReplayOptions& options);

// Writes report_json() to `path` (replacing it). Errors: the file cannot be written.
MaybeError write_report(const std::string& path, const ReplayResult& result,
                        const ReplayOptions& options);

}  // namespace cusnap::replayer

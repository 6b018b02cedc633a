// The body of `cusnap dump`, apart from its command line (the fuzzer drives it too).
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>

#include "call_range.h"
#include "cusnap/format/reader.h"
#include "cusnap/format/status.h"
#include "record_json.h"

namespace cusnap::cli {

// Writes calls [range.begin, range.end) of `reader` to `out`, one line each: the record's text,
// or with `json` its JSON Lines object. `printed` counts the lines written. A record or call
// frame that cannot be decoded (a damaged or hostile capture whose checksums still match) is
// passed to `on_bad` (its Status names the call and frame) and skipped; without `on_bad` the
// first one ends the dump with kMalformed naming its call. Never an exception out of it.
format::Status write_calls(format::Reader& reader, CallRange range, const RecordJson* json,
                           std::ostream& out, uint64_t& printed,
                           const std::function<void(const format::Status&)>& on_bad = {});

}  // namespace cusnap::cli

// The body of `cusnap dump`, apart from its command line (the fuzzer drives it too).
#pragma once

#include <cstdint>
#include <ostream>

#include "call_range.h"
#include "cusnap/format/reader.h"
#include "cusnap/format/status.h"
#include "record_json.h"

namespace cusnap::cli {

// Writes calls [range.begin, range.end) of `reader` to `out`, one line each: the record's text,
// or with `json` its JSON Lines object. `printed` counts the lines written. A record that
// Cap'n Proto cannot read (a damaged or hostile capture whose checksums still match) ends the
// dump with kMalformed naming its call, instead of an exception out of the command.
format::Status write_calls(format::Reader& reader, CallRange range, const RecordJson* json,
                           std::ostream& out, uint64_t& printed);

}  // namespace cusnap::cli

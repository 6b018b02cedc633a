// What `cusnap info` knows about a capture, gathered in one pass over the file.
//
// The result is an InfoReport message (cli/schema/info.capnp): the human output is rendered from
// it and `--json` encodes it, so both always say the same thing.
#pragma once

#include <capnp/message.h>

#include <functional>
#include <ostream>
#include <string>

#include "cusnap/cli/info.capnp.h"  // generated from cli/schema/info.capnp
#include "cusnap/format/reader.h"
#include "cusnap/format/status.h"

namespace cusnap::cli {

// Fills `out` from `reader`: header, integrity as found when opening (footer or scan; no deep
// check), counts, call kinds, kernels, bytes, and whether a replay may diverge: successful
// generic records flagged GenericCall.affectsDeviceState (or, in captures written before that
// field existed, carrying the interceptor's old "unmodelled: may affect device state" text).
// Reads every call record once. A record or call frame that cannot be decoded is passed to
// `on_bad` (its Status names the call and the frame) and left out of the counts; without
// `on_bad` the first one ends the collection with its Status. Never an exception out of it
// (kMalformed: a record Cap'n Proto cannot decode).
format::Status collect_info(format::Reader& reader, const std::string& display_path,
                            schema::InfoReport::Builder out,
                            const std::function<void(const format::Status&)>& on_bad = {});

// What `cusnap info` prints without --json: the report as text.
void print_info_text(std::ostream& out, schema::InfoReport::Reader info);

}  // namespace cusnap::cli

// What `cusnap info` knows about a capture, gathered in one pass over the file.
//
// The result is an InfoReport message (cli/schema/info.capnp): the human output is rendered from
// it and `--json` encodes it, so both always say the same thing.
#pragma once

#include <capnp/message.h>

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
// Reads every call record once. Fails only when a record cannot be read: a frame that the index
// lists is damaged, or a record Cap'n Proto cannot decode (kMalformed; never an exception).
format::Status collect_info(format::Reader& reader, const std::string& display_path,
                            schema::InfoReport::Builder out);

// What `cusnap info` prints without --json: the report as text.
void print_info_text(std::ostream& out, schema::InfoReport::Reader info);

}  // namespace cusnap::cli

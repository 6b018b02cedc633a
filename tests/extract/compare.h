// Whether two extracted captures hold the same content (test support): the same records in the
// same order with the same fields, the same snapshot chunks (sizes and hashes), the same header
// facts that describe the launch. Not compared: what differs by construction between two routes
// or two runs (seq, threadId, startNs, endNs of records; the header's identity, creation time,
// options other than the chunk size, ExtractInfo's source, launch seq and route).
#pragma once

#include <string>

#include "cusnap/format/reader.h"

namespace cusnap::extract::test {

// With `map_values`, the two captures may come from two runs of one program: addresses and
// handles may differ, consistently. An address field (or an 8-byte word of parameter bytes) of
// `a` inside an allocation or module variable of `a` must then be the same offset into the
// corresponding one of `b` (matched in record order); a handle field must map one to one;
// snapshot chunks are matched by place, and their bytes may differ only in 8-byte words that are
// such corresponding addresses (device memory holding pointers).
// Without it every field must be equal. Returns "" when the content is the same, else the first
// difference (the record and field path).
// With `host_memory_only_in_a`: a's host-memory allocations (cuMemAllocHost, cuMemHostAlloc,
// cuMemHostRegister records) and the snapshot chunks in them are left out first — what a
// snapshot-route extract holds and a replay-route one cannot (docs/extract.md, "Routes").
std::string compare_extracts(format::Reader& a, format::Reader& b, bool map_values,
                             bool host_memory_only_in_a = false);

}  // namespace cusnap::extract::test

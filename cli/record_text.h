// The human-readable form of a call record, one line per call (`cusnap dump`):
//
//   #<seq>  <threadId>  <apiName>  <result>  <kind> key=value ...
//
// The key=value part is derived from the schema by reflection, so new record fields show up
// without code changes. Rules: fields equal to their default (0, false, empty, null blob) are
// left out, except enums and `ordinal`; handles, addresses, flags and checksums print in hex, other
// integers in decimal; fooX/fooY/fooZ triples print as foo=(x,y,z); BlobIds print as 32 hex digits;
// Data prints as hex (first 32 bytes, then the total size); lists print as [a, b, ...] (first 16).
#pragma once

#include <string>

#include "cusnap/format/capture.capnp.h"

namespace cusnap::cli {

std::string record_text(format::schema::CallRecord::Reader record);

// True for a UInt64 field name that holds a handle, address, flag word or checksum.
bool is_hex_field(const std::string& name);

}  // namespace cusnap::cli

// Deferred launch records inside a call buffer (see cusnap/format/launch_record.h).
//
// A call buffer is a sequence of framed Cap'n Proto messages. Writer::append_launch() puts a
// *launch entry* there instead: the LaunchFields copied flat, behind a first word that no framed
// message can start with (a segment count of 2^32). Before the frame is compressed, a worker
// rewrites the buffer (expand_launch_entries) so that the file holds framed messages only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "buffer_pool.h"
#include "cusnap/format/launch_record.h"
#include "cusnap/format/status.h"

namespace cusnap::format::detail {

inline constexpr uint32_t kLaunchEntryMarker = 0xFFFFFFFFu;

// Bytes write_launch_entry() writes for `fields` (a multiple of 8).
size_t launch_entry_size(const LaunchFields& fields);
// Writes the entry at `out` (launch_entry_size bytes) with the writer's seq and ordinal.
void write_launch_entry(const LaunchFields& fields, uint64_t seq, uint64_t ordinal, uint8_t* out);

// `in` (a call buffer holding launch entries) as framed messages only, into `out` (acquired from
// `pool`). Errors name the byte offset of a malformed element (a writer bug, never user input).
Status expand_launch_entries(std::span<const uint8_t> in, BufferPool& pool, ByteBuffer& out);

}  // namespace cusnap::format::detail

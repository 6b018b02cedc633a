// Shared by the libFuzzer targets (format/fuzz, tests/fuzz, tests/replayer): the fuzz build's
// switch that lets mutated captures past the reader's checksums (format/src/internal.h; only
// the fuzz preset compiles it in), and the reader options every target opens captures with.
#pragma once

#include <cstdint>
#include <span>

#include "cusnap/format/reader.h"
#include "internal.h"  // format/src, through cusnap_format_fuzz_hooks

namespace cusnap::fuzz {

// From here on the reader takes every checksum and blob id as matching its bytes.
inline void skip_checksums(bool skip = true) {
  format::detail::fuzz_skip_checksums.store(skip, std::memory_order_relaxed);
}

// Reader limits that keep one input's allocations within the fuzzers' -rss_limit_mb.
inline format::ReaderOptions reader_options(bool use_footer) {
  format::ReaderOptions options;
  options.use_footer = use_footer;
  options.max_frame_raw_bytes = 8u << 20;
  options.traversal_limit_words = 1u << 20;
  return options;
}

}  // namespace cusnap::fuzz

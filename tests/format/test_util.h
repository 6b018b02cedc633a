// Shared helpers for the format tests: temp files, deterministic record generation.
#pragma once

#include <capnp/dynamic.h>
#include <capnp/message.h>

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "cusnap/format/capture.capnp.h"
#include "cusnap/format/reader.h"
#include "cusnap/format/writer.h"

namespace cusnap::format::test {

// A fresh directory under the system temp dir, removed at scope exit.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// Fills every field of `builder` (recursively, lists of 0..3 elements) with values drawn from
// `rng`. For a struct with a union, one member is chosen at random unless `union_member` >= 0.
// BlobIds stay null (no blob): a record may only name blobs stored before it.
void fill_random(capnp::DynamicStruct::Builder builder, std::mt19937_64& rng, int depth = 0,
                 int union_member = -1);

// A header message with a few recognizable fields set.
void make_header(capnp::MallocMessageBuilder& message, const std::string& marker = "test");

std::vector<uint8_t> random_bytes(size_t n, uint64_t seed);
// Bytes that compress well but not trivially (slowly varying float data).
std::vector<uint8_t> compressible_bytes(size_t n, uint64_t seed);

std::vector<uint8_t> read_file(const std::string& path);
void write_file(const std::string& path, const std::vector<uint8_t>& bytes);

// Capnp's text rendering of a record, with seq (and launch ordinal) cleared: the writer sets
// those, everything else must come back exactly as built.
std::string record_text_without_writer_fields(schema::CallRecord::Reader record);

}  // namespace cusnap::format::test

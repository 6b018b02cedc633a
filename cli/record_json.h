// JSON encoding of call records, shared by `cusnap dump --json` and its tests.
//
// Records are encoded by Cap'n Proto's JSON codec, field names = schema names, with two
// registered handlers so the output is compact and readable (both also decode, so a dump line
// converts back into the exact record):
//   - Data fields (Launch.params, LaunchAttribute.value, DeviceProperties.uuid) are lowercase hex
//     strings instead of arrays of numbers;
//   - BlobId structs are their 32-digit hex form (BlobId::to_hex) instead of {"high","low"}.
// Every other rule is the codec's: 64-bit integers are strings, enums are enumerant names, every
// primitive field of a present struct appears (defaults included), null pointers are omitted,
// and only the active member of a union appears.
#pragma once

#include <capnp/compat/json.h>

#include <memory>
#include <ostream>
#include <string>
#include <string_view>

#include "cusnap/format/capture.capnp.h"
#include "cusnap/format/reader.h"
#include "cusnap/format/status.h"

namespace cusnap::cli {

// Version of the JSON Lines envelope written by `dump --json` (field "v").
inline constexpr unsigned kDumpJsonVersion = 1;

class RecordJson {
 public:
  RecordJson();
  ~RecordJson();
  RecordJson(const RecordJson&) = delete;
  RecordJson& operator=(const RecordJson&) = delete;

  // The codec with cusnap's handlers registered (for headers and other schema structs too).
  const capnp::JsonCodec& codec() const;

  // Writes `value` as codec().encode(value, type) would, byte for byte, but piecewise: the codec
  // builds a JSON tree of the whole value first (some 250 times its size in memory), so parts
  // larger than `piece_words` are written field by field and element by element instead.
  void stream(std::ostream& out, capnp::DynamicValue::Reader value, capnp::Type type,
              uint64_t piece_words = 2048) const;

  // One JSON Lines line (no trailing newline):
  //   {"v":1,"seq":"12","kind":"launch","frame":3,"record":{...CallRecord...}}
  // `seq` duplicates record.seq so line filters need not descend into the record.
  std::string dump_line(const format::CallRef& call) const;

  // Decodes the "record" object of a dump line (or a bare CallRecord object) into `out`.
  // Errors (bad JSON, wrong types) come back as kInvalidArgument with the codec's message.
  format::Status decode_record(std::string_view json,
                               format::schema::CallRecord::Builder out) const;

  struct Handlers;

 private:
  std::unique_ptr<Handlers> handlers_;
  std::unique_ptr<capnp::JsonCodec> codec_;
};

}  // namespace cusnap::cli

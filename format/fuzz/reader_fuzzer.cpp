// libFuzzer target for the capture reader: any byte string must be refused or read without a
// crash, a leak, undefined behaviour or an out-of-bounds read (ASan/UBSan in the fuzz preset).
// Every access path is exercised, with and without checksum checks: footer and scan opening,
// iteration with a walk over every field, random access by call and launch, blob reads with hash
// checks, and verify().
#include <capnp/dynamic.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "cusnap/format/reader.h"
#include "fuzz_support.h"

using namespace cusnap::format;

namespace {

void walk(const capnp::DynamicValue::Reader& value);

void walk_struct(capnp::DynamicStruct::Reader s) {
  for (auto field : s.getSchema().getNonUnionFields()) {
    if (s.has(field)) walk(s.get(field));
  }
  KJ_IF_MAYBE (active, s.which()) {
    if (s.has(*active)) walk(s.get(*active));
  }
}

void walk(const capnp::DynamicValue::Reader& value) {
  switch (value.getType()) {
    case capnp::DynamicValue::STRUCT:
      walk_struct(value.as<capnp::DynamicStruct>());
      break;
    case capnp::DynamicValue::LIST:
      for (auto e : value.as<capnp::DynamicList>()) walk(e);
      break;
    default:
      break;
  }
}

void exercise(std::span<const uint8_t> bytes, bool use_footer) {
  auto opened = Reader::open_memory(bytes, cusnap::fuzz::reader_options(use_footer));
  if (!opened) return;
  Reader& r = *opened.value();
  try {
    walk_struct(capnp::toDynamic(r.header()));
  } catch (const kj::Exception&) {
  }
  (void)r.recovery().summary();
  (void)r.stats();
  uint64_t visited = 0;
  (void)r.for_each_call([&](const CallRef& ref) {
    try {
      walk_struct(capnp::toDynamic(ref.get()));
    } catch (const kj::Exception&) {
      // Cap'n Proto reports bad pointers in hostile messages by throwing; that is fine.
    }
    (void)ref.message_bytes();
    return ++visited < 5000;
  });
  if (r.call_count() > 0) {
    (void)r.call(r.call_count() - 1);
    (void)r.call(r.call_count() / 2);
  }
  (void)r.call(r.call_count());
  for (size_t i = 0; i < r.launches().size() && i < 8; ++i) (void)r.launch(i);
  for (size_t i = 0; i < r.blobs().size() && i < 8; ++i) (void)r.read_blob(r.blobs()[i].id);
  for (uint32_t i = 0; i < r.frames().size() && i < 4; ++i) (void)r.frame_payload(i);
  (void)r.verify().summary();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  // Once as a release build reads it, once with checksums taken as matching (fuzz_support.h), so
  // that mutations also reach the records, the index and the blobs behind the checksums.
  for (bool skip : {false, true}) {
    cusnap::fuzz::skip_checksums(skip);
    exercise(bytes, true);
    exercise(bytes, false);
  }
  return 0;
}

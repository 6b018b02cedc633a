// libFuzzer target for `cusnap info` and `cusnap dump` rendering: the library code the commands
// run (cli/info_collect.h, dump.h: text and JSON Lines) on any byte string opened as a capture,
// checksums skipped (fuzz_support.h) so mutations reach the records. Output goes to a string.
#include <capnp/message.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <sstream>

#include "dump.h"
#include "fuzz_support.h"
#include "info_collect.h"
#include "record_json.h"

using namespace cusnap;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::skip_checksums();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const cli::RecordJson json;
  for (bool use_footer : {true, false}) {
    auto opened = format::Reader::open_memory(std::span<const uint8_t>(data, size),
                                              fuzz::reader_options(use_footer));
    if (!opened) continue;
    format::Reader& reader = *opened.value();
    std::ostringstream out;
    {
      capnp::MallocMessageBuilder message;
      auto report = message.initRoot<cli::schema::InfoReport>();
      if (cli::collect_info(reader, "fuzz.cusnap", report).is_ok()) {
        cli::print_info_text(out, report.asReader());
        out << json.codec().encode(report.asReader()).cStr();
      }
    }
    uint64_t printed = 0;
    cli::CallRange range{0, std::min<uint64_t>(reader.call_count(), 2000)};
    (void)cli::write_calls(reader, range, nullptr, out, printed);
    (void)cli::write_calls(reader, range, &json, out, printed);
  }
  return 0;
}

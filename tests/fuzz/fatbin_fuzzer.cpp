// libFuzzer target for the fatbin library on bounded bytes: classification, the container walk
// with a limit, every entry's payload (zstd, LZ4 or stored) and the ELF extent. Functions that
// trust a bare pointer's headers (read_wrapper, image_size, flatten_rdc) are a driver's contract,
// not bounded input, and are left out.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cusnap/fatbin/fatbin.h"

using namespace cusnap;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A heap copy (aligned like any image a driver is handed), exactly `size` long: ASan sees any
  // read past it.
  std::vector<uint8_t> exact(data, data + size);
  const void* image = exact.data();
  // A limit of 0 means "trust the headers" (a bare pointer), so empty inputs stop here.
  if (size == 0) return 0;
  if (size >= 8) (void)fatbin::classify(image);
  (void)fatbin::elf_size(image, size);
  if (size < fatbin::kContainerHeaderSize) return 0;
  fatbin::Container container = fatbin::parse_container(image, size);
  std::string payload, error;
  for (const fatbin::Entry& entry : container.entries) {
    if (fatbin::entry_payload(image, entry, &payload, &error) && entry.kind == fatbin::kEntryElf &&
        !payload.empty()) {
      (void)fatbin::elf_size(payload.data(), payload.size());
    }
  }
  return 0;
}

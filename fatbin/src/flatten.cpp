// A version-2 wrapper as one fatbin container (flatten.h).
#include "cusnap/fatbin/flatten.h"

#include <cstring>

#include "load.h"

namespace cusnap::fatbin {
namespace {

// The container at `data`, or an error naming `what`.
Container parse_named(const void* data, const std::string& what, std::string* error) {
  if (classify(data) != ImageKind::kContainer) {
    *error =
        what + " is not a fatbin container (magic " + hex32(detail::load<uint32_t>(data, 0)) + ")";
    return {};
  }
  Container parsed = parse_container(data);
  if (!parsed.error.empty()) *error = what + ": " + parsed.error;
  return parsed;
}

bool has_ptx(const Container& container) {
  for (const Entry& entry : container.entries) {
    if (entry.kind == kEntryPtx) return true;
  }
  return false;
}

}  // namespace

Flattened flatten_rdc(const Wrapper& wrapper) {
  Flattened result;
  if (!wrapper.error.empty()) {
    result.error = wrapper.error;
    return result;
  }
  if (wrapper.version != kWrapperVersionRdc || wrapper.data == nullptr) {
    result.error = "fatbin wrapper v" + std::to_string(wrapper.version) +
                   ": only a version-2 wrapper with a linked fatbin is flattened";
    return result;
  }
  result.prelinked_count = wrapper.prelinked.size();
  std::string error;
  Container linked = parse_named(wrapper.data, "fatbin wrapper v2: the linked fatbin", &error);
  if (!error.empty()) {
    result.error = error;
    return result;
  }

  // Entry ranges to copy, in order: (base, entry).
  struct Piece {
    const uint8_t* base;
    Entry entry;
    size_t source;
  };
  std::vector<Piece> pieces;
  const auto* linked_base = static_cast<const uint8_t*>(wrapper.data);
  for (const Entry& entry : linked.entries) pieces.push_back({linked_base, entry, kFromLinked});
  if (!has_ptx(linked)) {
    for (size_t i = 0; i < wrapper.prelinked.size(); ++i) {
      std::string what = "fatbin wrapper v2: prelinked fatbin " + std::to_string(i);
      Container unit = parse_named(wrapper.prelinked[i], what, &error);
      if (!error.empty()) {
        result.error = error;
        return result;
      }
      const auto* base = static_cast<const uint8_t*>(wrapper.prelinked[i]);
      for (const Entry& entry : unit.entries) {
        if (entry.kind == kEntryPtx) pieces.push_back({base, entry, i});
      }
    }
  }

  uint64_t total = linked.header_size;
  for (const Piece& piece : pieces) total += piece.entry.end_offset() - piece.entry.header_offset;
  if (total > kMaxImageBytes) {
    result.error = "fatbin wrapper v2: the flattened fatbin would be " + std::to_string(total) +
                   " bytes, more than the " + std::to_string(kMaxImageBytes) + " an image may have";
    return result;
  }
  result.bytes.reserve(static_cast<size_t>(total));
  result.bytes.assign(linked_base, linked_base + linked.header_size);
  for (const Piece& piece : pieces) {
    result.bytes.insert(result.bytes.end(), piece.base + piece.entry.header_offset,
                        piece.base + piece.entry.end_offset());
    result.sources.push_back(piece.source);
  }
  uint64_t entries_size = total - linked.header_size;
  std::memcpy(result.bytes.data() + 8, &entries_size, sizeof entries_size);
  return result;
}

}  // namespace cusnap::fatbin

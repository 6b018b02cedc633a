#include "driver/ptx_selection.h"

#include <new>
#include <set>

#include "cusnap/fatbin/fatbin.h"
#include "cusnap/fatbin/flatten.h"

namespace cusnap::emu::driver {
namespace {

namespace fb = cusnap::fatbin;

enum class Pick : uint8_t { kFound, kNoPtx, kTooNew, kError };

// The best PTX entry of `container` (already parsed) for sm_<target_sm>, into `result`.
Pick pick_ptx(const void* container, const fb::Container& parsed, const std::string& what,
              uint32_t target_sm, PtxSelection* result) {
  const fb::Entry* best = nullptr;
  uint32_t oldest_ptx = 0;
  bool any_ptx = false;
  for (const fb::Entry& entry : parsed.entries) {
    if (entry.kind != fb::kEntryPtx) continue;
    if (!any_ptx || entry.sm < oldest_ptx) oldest_ptx = entry.sm;
    any_ptx = true;
    if (entry.sm <= target_sm && (best == nullptr || entry.sm > best->sm)) best = &entry;
  }
  if (best == nullptr) {
    if (!any_ptx) {
      result->error = what + " has no PTX entry (SASS only)";
      return Pick::kNoPtx;
    }
    result->error = "every PTX entry in " + what +
                    " targets a newer architecture (oldest compute_" + std::to_string(oldest_ptx) +
                    ") than the emulated sm_" + std::to_string(target_sm);
    return Pick::kTooNew;
  }
  result->sm = best->sm;
  result->error.clear();
  if (!fb::entry_payload(container, *best, &result->ptx, &result->error)) {
    result->ptx.clear();
    result->error = what + ": " + result->error;
    return Pick::kError;
  }
  return Pick::kFound;
}

// A container given by pointer (a bare image, or a version-1 wrapper's data).
PtxSelection select_from_container(const void* container, const std::string& what,
                                   uint32_t target_sm) {
  PtxSelection result;
  if (fb::classify(container) != fb::ImageKind::kContainer) {
    result.error = what + " does not point at a fatbin container";
    return result;
  }
  fb::Container parsed = fb::parse_container(container);
  if (!parsed.error.empty()) {
    result.error = what + ": " + parsed.error;
    return result;
  }
  result.sass_only = pick_ptx(container, parsed, what, target_sm, &result) == Pick::kNoPtx;
  return result;
}

// A version-2 wrapper: the choice made in its flattened container (ptx_selection.h).
PtxSelection select_from_rdc_wrapper(const fb::Wrapper& wrapper, uint32_t target_sm) {
  PtxSelection result;
  fb::Flattened flat = fb::flatten_rdc(wrapper);
  if (!flat.error.empty()) {
    result.error = flat.error;
    return result;
  }
  fb::Container parsed = fb::parse_container(flat.bytes.data(), flat.bytes.size());
  if (!parsed.error.empty() || parsed.entries.size() != flat.sources.size()) {
    result.error = "fatbin wrapper v2: its flattened fatbin does not parse: " + parsed.error;
    return result;
  }
  std::set<size_t> usable_sources;
  for (size_t i = 0; i < parsed.entries.size(); ++i) {
    const fb::Entry& entry = parsed.entries[i];
    if (entry.kind == fb::kEntryPtx && entry.sm <= target_sm &&
        flat.sources[i] != fb::kFromLinked) {
      usable_sources.insert(flat.sources[i]);
    }
  }
  if (usable_sources.size() > 1) {
    result.error = "fatbin wrapper v2 (relocatable device code) with PTX for sm_" +
                   std::to_string(target_sm) + " in " + std::to_string(usable_sources.size()) +
                   " prelinked fatbins: running them needs device linking of several PTX modules, "
                   "which the emulator does not support (one rdc translation unit only)";
    return result;
  }
  std::string what = "fatbin wrapper v2 (its linked fatbin and " +
                     std::to_string(flat.prelinked_count) + " prelinked fatbins)";
  result.sass_only = pick_ptx(flat.bytes.data(), parsed, what, target_sm, &result) == Pick::kNoPtx;
  return result;
}

PtxSelection select(const void* image, uint32_t target_sm) {
  PtxSelection result;
  switch (fb::classify(image)) {
    case fb::ImageKind::kPtxText:
      result.ptx = static_cast<const char*>(image);
      return result;
    case fb::ImageKind::kElf:
      result.sass_only = true;
      result.error = "the image is an ELF cubin (SASS only)";
      return result;
    case fb::ImageKind::kUnknown:
      result.error = fb::unknown_image_error(image);
      return result;
    case fb::ImageKind::kWrapper: {
      fb::Wrapper wrapper = fb::read_wrapper(image);
      if (!wrapper.error.empty()) {
        result.error = wrapper.error;
        return result;
      }
      if (wrapper.version == fb::kWrapperVersionRdc)
        return select_from_rdc_wrapper(wrapper, target_sm);
      return select_from_container(wrapper.data, "fatbin wrapper: its data pointer", target_sm);
    }
    case fb::ImageKind::kContainer:
      break;
  }
  return select_from_container(image, "the fatbin", target_sm);
}

}  // namespace

PtxSelection select_ptx(const void* image, uint32_t target_sm) {
  try {
    return select(image, target_sm);
  } catch (const std::bad_alloc&) {
    PtxSelection result;
    result.error = "out of memory while reading the image";
    return result;
  }
}

}  // namespace cusnap::emu::driver

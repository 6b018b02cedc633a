// What a code image handed to cuModuleLoadData* / cuLibraryLoadData is, and how many bytes it
// spans, from the pointer alone (the driver API passes no size): a fatbin wrapper
// (__fatBinC_Wrapper_t, what the CUDA runtime passes), a fatbin container (header + entries
// size), an ELF cubin (the furthest of its section/program header tables and section contents),
// or NUL-terminated PTX text (strlen). Anything else is kUnknown with size 0.
//
// Fatbin wrappers come in two versions (see emulator/fatbin/fatbin.h for the layout nvcc 13
// writes). Version 1 points at one fatbin: the view is that fatbin, in place. Version 2 (what the
// runtime registers for -rdc=true programs) points at the device-linked fatbin (cubins only) and
// at a NULL-terminated list of "prelinked" fatbins (each rdc object's PTX and relocatable
// cubins), scattered over the program's data: no single size covers it. For version 2 the view
// is therefore a new, self-contained fatbin built at call time and owned by the view: the linked
// fatbin's header and entries verbatim, followed by the PTX entries of the prelinked fatbin when
// exactly one of them has PTX (one rdc translation unit: what a PTX-only consumer such as the
// emulator can run). With PTX in several prelinked fatbins the PTX would need device linking, so
// only the linked fatbin is kept. Relocatable cubins are never copied: they are already part of
// the linked cubin, and a driver must not pick them as loadable code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace cusnap::icpt {

enum class ImageKind : uint8_t { kUnknown, kPtx, kCubin, kFatbin, kFatbinWrapper };

struct ImageView {
  ImageKind kind = ImageKind::kUnknown;
  const uint8_t* data = nullptr;  // the bytes to store (for a wrapper: the fatbin it points to)
  size_t size = 0;
  // Set only for a version-2 wrapper: the flattened fatbin `data` points into (see above).
  std::shared_ptr<const std::vector<uint8_t>> owned = nullptr;
};

// Sizes larger than this are treated as corrupt headers (kUnknown).
inline constexpr size_t kMaxImageBytes = size_t{4} << 30;

ImageView inspect_image(const void* image) noexcept;

}  // namespace cusnap::icpt

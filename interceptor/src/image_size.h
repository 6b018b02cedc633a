// What a code image handed to cuModuleLoadData* / cuLibraryLoadData is, and how many bytes it
// spans, from the pointer alone (the driver API passes no size): a fatbin wrapper
// (__fatBinC_Wrapper_t, what the CUDA runtime passes), a fatbin container (header + entries
// size), an ELF cubin (the furthest of its section/program header tables and section contents),
// or NUL-terminated PTX text (strlen). Anything else is kUnknown with size 0.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cusnap::icpt {

enum class ImageKind : uint8_t { kUnknown, kPtx, kCubin, kFatbin, kFatbinWrapper };

struct ImageView {
  ImageKind kind = ImageKind::kUnknown;
  const uint8_t* data = nullptr;  // the bytes to store (for a wrapper: the fatbin it points to)
  size_t size = 0;
};

// Sizes larger than this are treated as corrupt headers (kUnknown).
inline constexpr size_t kMaxImageBytes = size_t{4} << 30;

ImageView inspect_image(const void* image) noexcept;

}  // namespace cusnap::icpt

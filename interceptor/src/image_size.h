// What a code image handed to cuModuleLoadData* / cuLibraryLoadData is, and which bytes a
// capture stores for it, from the pointer alone (the driver API passes no size). The container
// knowledge is the shared fatbin library (fatbin/, cusnap::fatbin); this file is the
// interceptor's policy on top of it:
//   * a fatbin container: its declared size; a version-1 fatbin wrapper (what the CUDA runtime
//     passes): the container it points to, in place;
//   * a version-2 wrapper (-rdc=true programs): the container cusnap::fatbin::flatten_rdc builds
//     (cusnap/fatbin/flatten.h), owned by the view: the linked fatbin and the PTX of every
//     prelinked fatbin. The emulator runs a v2 wrapper from that same container, so the stored
//     image loads with the kernels the original program loaded;
//   * an ELF cubin: its extent (cusnap::fatbin::elf_size); PTX text: strlen (the NUL excluded);
//   * anything else, or a broken header: kUnknown with size 0 (the load is recorded without an
//     image, and the application is never harmed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "cusnap/fatbin/fatbin.h"

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
inline constexpr size_t kMaxImageBytes = cusnap::fatbin::kMaxImageBytes;

ImageView inspect_image(const void* image) noexcept;

}  // namespace cusnap::icpt

#include "image_size.h"

#include <cstring>
#include <new>

#include "cusnap/fatbin/flatten.h"

namespace cusnap::icpt {
namespace {

namespace fb = cusnap::fatbin;

ImageView container_view(const void* data, ImageKind kind) {
  uint64_t size = fb::container_size(data);
  if (size == 0) return {};
  return {kind, static_cast<const uint8_t*>(data), static_cast<size_t>(size)};
}

ImageView wrapper_view(const void* image) {
  fb::Wrapper wrapper = fb::read_wrapper(image);
  if (!wrapper.error.empty() || fb::classify(wrapper.data) != fb::ImageKind::kContainer) return {};
  if (wrapper.version == fb::kWrapperVersion)
    return container_view(wrapper.data, ImageKind::kFatbinWrapper);
  fb::Flattened flat = fb::flatten_rdc(wrapper);
  if (!flat.error.empty()) return {};
  auto bytes = std::make_shared<std::vector<uint8_t>>(std::move(flat.bytes));
  ImageView view{ImageKind::kFatbinWrapper, bytes->data(), bytes->size()};
  view.owned = std::move(bytes);
  return view;
}

}  // namespace

ImageView inspect_image(const void* image) noexcept {
  if (image == nullptr) return {};
  try {
    switch (fb::classify(image)) {
      case fb::ImageKind::kWrapper:
        return wrapper_view(image);
      case fb::ImageKind::kContainer:
        return container_view(image, ImageKind::kFatbin);
      case fb::ImageKind::kElf: {
        uint64_t size = fb::elf_size(image);
        if (size == 0) return {};
        return {ImageKind::kCubin, static_cast<const uint8_t*>(image), static_cast<size_t>(size)};
      }
      case fb::ImageKind::kPtxText:
        return {ImageKind::kPtx, static_cast<const uint8_t*>(image),
                std::strlen(static_cast<const char*>(image))};
      case fb::ImageKind::kUnknown:
        break;
    }
  } catch (const std::bad_alloc&) {
    // A v2 wrapper's flattened copy could not be made: the load is recorded without an image.
  }
  return {};
}

}  // namespace cusnap::icpt

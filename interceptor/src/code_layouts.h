// Kernel parameter layouts read from a code image itself: the fallbacks for when the driver
// cannot report them (cuFuncGetParamInfo / cuKernelGetParamInfo need a 12.4+ driver).
//
// Sources, in the order a layout is trusted (architecture decision 4):
// - a cubin's `.nv.info.<kernel>` section: its EIATTR_KPARAM_INFO records give each parameter's
//   ordinal, offset and size exactly as the compiler laid them out (cuda-facts.md, "Cubin
//   .nv.info records"). A section that has EIATTR_KPARAM_INFO_V2 records (very large structs,
//   format not known to us) yields no layout rather than a wrong one;
// - the `.entry` signature of PTX (ptx_signature.h).
// A fatbin (or the fatbin a runtime wrapper points to) is searched entry by entry through the
// shared fatbin reader (fatbin/, which decompresses zstd and LZ4 entries). Cubins for
// different architectures agree on the parameter ABI, so the first one that describes a kernel
// wins; and every entry of a fatbin is compiled from the same source, so PTX is only read (and
// decompressed) when no cubin in the fatbin has `.nv.info` layouts.
//
// Everything here is bounds-checked against the image size: a damaged image gives fewer layouts,
// never a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cusnap/fatbin/fatbin.h"
#include "cusnap/fatbin/variables.h"
#include "handles.h"
#include "image_size.h"

namespace cusnap::icpt {

// Every kernel layout `image` describes. `image.size` must be the image's size (inspect_image);
// for kFatbinWrapper, `image.data` is the fatbin the wrapper points to (as inspect_image gives it).
ImageLayouts image_layouts(const ImageView& image);

// The module variables `image` defines, for snapshots: fatbin::image_variables (PTX, a cubin's
// symbol table, or a fatbin's first cubin that has one, else its first PTX entry). Empty for an
// image that cannot be read.
std::vector<cusnap::fatbin::Variable> image_variables(const ImageView& image);

// The layouts in the `.nv.info.<kernel>` sections of an ELF cubin, by kernel name. std::nullopt
// when the bytes are not a well-formed 64-bit little-endian ELF.
std::optional<std::map<std::string, std::vector<ParamSlot>>> cubin_param_layouts(
    std::span<const uint8_t> elf);

// One fatbin entry, its payload decompressed. kind: 1 PTX, 2 ELF cubin.
struct FatbinEntry {
  uint16_t kind = 0;
  uint32_t sm = 0;
  std::string payload;  // PTX text without its terminating NUL(s), or the cubin bytes
};
inline constexpr uint16_t kFatbinEntryPtx = cusnap::fatbin::kEntryPtx;
inline constexpr uint16_t kFatbinEntryElf = cusnap::fatbin::kEntryElf;
// Calls `visit` with each entry of kind `kind` of a fatbin container (one decompressed payload
// in memory at a time) until it returns false. An entry that cannot be decoded (bad header,
// corrupt compressed data) ends the walk. False when the container header itself is bad.
bool for_each_fatbin_entry(std::span<const uint8_t> container, uint16_t kind,
                           const std::function<bool(const FatbinEntry&)>& visit);

}  // namespace cusnap::icpt

// The inputs of the driver linker (cuLinkAddData/AddFile) and of static-library loads, turned
// into PTX the linker can use (ptx_link.h):
//
// * PTX text: itself.
// * A fatbin (container or wrapper): its PTX for the emulated sm (ptx_selection.h).
// * A host object (ELF, what nvcc -c writes): the fatbin in its `.nv_fatbin` section
//   (`__nv_relfatbin` for relocatable device code, -rdc=true).
// * An `ar` archive (a static library, nvcc -lib): each member as above, named
//   "<archive>(<member>)"; the archive's symbol tables are skipped.
// * A cubin (machine code), LTO IR or anything else: refused, naming the input or member.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "driver/ptx_link.h"
#include "generated_driver_api.h"

namespace cusnap::emu::driver {

// True when `image` starts like an `ar` archive ("!<arch>\n"); `size` is what is known of it.
bool is_ar_archive(const void* image, size_t size);

// Appends the PTX that `data` (of `type`, `size` bytes) contributes to `out`. On failure returns
// the CUresult the driver would and sets `error`.
CUresult add_link_input(CUjitInputType type, const void* data, size_t size, const std::string& name,
                        std::vector<LinkInput>* out, std::string* error);

}  // namespace cusnap::emu::driver

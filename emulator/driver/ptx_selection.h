// Which PTX the emulator runs for a code image handed to cuModuleLoadData / cuLibraryLoadData:
// the emulator's own policy on top of the shared fatbin reader (fatbin/, cusnap::fatbin).
//
// * PTX text: the text itself.
// * A fatbin container, or the container a version-1 wrapper points at: the PTX entry with the
//   highest sm not above the emulated sm_<target> (what a driver JIT-compiling for that GPU
//   takes); an error when every PTX entry is newer; `sass_only` when there is no PTX.
// * A version-2 (relocatable device code) wrapper: the same choice, made in the container
//   cusnap::fatbin::flatten_rdc makes of the wrapper, which is also what the interceptor stores
//   in a capture for it, so a replay runs exactly the kernels the program loaded. Refused when
//   the PTX usable on the target comes from more than one prelinked fatbin: running it would
//   need device linking of several PTX modules (extern functions and variables), which the
//   emulator does not do. Prelinked fatbins whose PTX is all newer than the target do not count:
//   every rdc program lists the device runtime's fatbin (libcudadevrt), whose only PTX is for the
//   newest architecture.
// * A bare ELF cubin: `sass_only` (the emulator executes PTX, never SASS); anything else is
//   refused as unrecognised.
#pragma once

#include <cstdint>
#include <string>

namespace cusnap::emu::driver {

struct PtxSelection {
  std::string ptx;         // the text, without trailing NULs
  uint32_t sm = 0;         // the entry's target (0 for plain PTX text)
  bool sass_only = false;  // the image has machine code but no PTX: refuse it
  std::string error;       // empty on success; "newer architecture" in it when the PTX is too new
};

PtxSelection select_ptx(const void* image, uint32_t target_sm);

}  // namespace cusnap::emu::driver

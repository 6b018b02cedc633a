// One self-contained fatbin container for a version-2 (relocatable device code) wrapper.
//
// A v2 wrapper is the device-linked fatbin plus a NULL-terminated list of prelinked fatbins
// scattered over the program's data (fatbin.h), so no single byte range holds it. The interceptor
// stores the flattened container in a capture in place of the wrapper, and the emulator runs the
// PTX of the same flattened container when it is handed the wrapper itself, so a capture replays
// with exactly the kernels the original program loaded.
//
// The rule (independent of which architecture will run the image):
//   * the linked fatbin's header and entries, verbatim (only the header's entries-size field is
//     rewritten);
//   * when the linked fatbin has no PTX entry (what nvcc 13 always writes), then every PTX entry
//     of every prelinked fatbin, verbatim, in list order. The PTX-less prelinked fatbins add
//     nothing, and relocatable cubins are never copied: they are already part of the linked cubin,
//     and a driver must not pick them as loadable code.
// A consumer that picks "the PTX entry with the highest sm not above the target" (the emulator,
// and a driver JIT-compiling for its GPU) therefore gets from the flattened container the same
// entry it would get from the one prelinked fatbin with PTX usable on that target. When the PTX
// of several prelinked fatbins is usable on a target, running it needs device linking across
// them, which a plain container cannot express: that case is the consumer's to refuse
// (`sources` says where each entry came from); the flattened image still holds all the PTX.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cusnap/fatbin/fatbin.h"

namespace cusnap::fatbin {

struct Flattened {
  std::vector<uint8_t> bytes;  // a fatbin container; empty on error
  // For each entry of `bytes`, in order: kFromLinked, or the index of the prelinked fatbin it
  // was copied from.
  std::vector<size_t> sources;
  size_t prelinked_count = 0;  // how many fatbins the prelinked list holds
  std::string error;           // empty on success
};
inline constexpr size_t kFromLinked = static_cast<size_t>(-1);

// Flattens a version-2 wrapper as read by read_wrapper (an error for any other version, a linked
// fatbin or prelinked entry that is not a well-formed container, or a result over
// kMaxImageBytes). Errors say which fatbin and which byte offset in it.
Flattened flatten_rdc(const Wrapper& wrapper);

}  // namespace cusnap::fatbin

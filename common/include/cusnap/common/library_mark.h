// Marks a shared object as one of cusnap's two libcuda.so.1 with an ELF note, so that the driver
// search (driver_search.h) can tell the cusnap interceptor and the cusnap emulator from NVIDIA's
// driver by reading the file, without loading it, whatever the file is called or where a copy of
// it lies. Adds no symbol, no code and no dependency.
//
// The note: owner "cusnap", type kLibraryNoteType, descriptor the role as a NUL-terminated string
// (kInterceptorRole or kEmulatorRole), in an allocated SHT_NOTE section, which the linker puts in
// a PT_NOTE segment. Use the macro once, at namespace scope, in a source file compiled into the
// library itself (not into a static archive, whose unreferenced members are not linked):
//   CUSNAP_MARK_LIBRARY("interceptor");
#pragma once

#include <cstdint>

namespace cusnap::common {

inline constexpr const char* kLibraryNoteOwner = "cusnap";
inline constexpr uint32_t kLibraryNoteType = 1;
inline constexpr const char* kInterceptorRole = "interceptor";
inline constexpr const char* kEmulatorRole = "emulator";

}  // namespace cusnap::common

// `role` must be a string literal equal to kInterceptorRole or kEmulatorRole.
#define CUSNAP_MARK_LIBRARY(role)               \
  __asm__(                                      \
      ".pushsection .note.cusnap,\"a\",%note\n" \
      ".balign 4\n"                             \
      ".long 7\n"                               \
      ".long 2f - 1f\n"                         \
      ".long 1\n"                               \
      ".asciz \"cusnap\"\n"                     \
      ".balign 4\n"                             \
      "1: .asciz \"" role                       \
      "\"\n"                                    \
      "2: .balign 4\n"                          \
      ".popsection\n")

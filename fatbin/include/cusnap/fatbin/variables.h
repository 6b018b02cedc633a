// The module variables a code image defines (`__device__` and `__constant__` data, with their
// names and sizes): what a kernel of the module can reach besides its parameters, read from the
// image alone. The interceptor snapshots them (docs/capture.md, "Memory snapshots"); the driver
// places them, so only names and sizes are here, never addresses.
//
// - PTX: module-scope definitions in the `.global` and `.const` state spaces (`.extern`
//   declarations define nothing and are left out), their size the element type's (a `.v2`/`.v4`
//   vector multiplies it) times every array dimension. An array whose size is implied by its
//   initializer (`[]`) is left out: nvcc never writes one.
// - ELF cubin: its STT_OBJECT symbols of non-zero size defined in a `.nv.global*` or
//   `.nv.constant*` section (nvcc keeps every module variable in the symbol table, local binding
//   included; the kernels' parameter banks `.nv.constant0.<kernel>` hold no object symbols).
//
// Both are bounds-checked: a damaged image gives fewer variables, never a read outside it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cusnap::fatbin {

struct Variable {
  std::string name;
  uint64_t size = 0;
  bool constant = false;  // `.const` / `.nv.constant*` (else `.global` / `.nv.global*`)
  bool operator==(const Variable&) const = default;
};

// The variables PTX text defines, in the order it defines them.
std::vector<Variable> ptx_variables(std::string_view ptx);

// `ptx` with each `//` and `/* */` comment replaced by one space (a line comment's newline
// kept; string literals, which may hold "//", kept as they are): what ptx_variables reads, and
// what `cusnap redact --strip-ptx-comments` writes.
std::string ptx_without_comments(std::string_view ptx);

// The variables an ELF cubin defines, in symbol table order; std::nullopt when the bytes are not
// a well-formed 64-bit little-endian ELF with a symbol table.
std::optional<std::vector<Variable>> elf_variables(std::span<const uint8_t> elf);

// The variables of a whole code image as a capture stores it (classify() in fatbin.h): PTX text
// (up to its NUL), an ELF cubin, or a fatbin container: its first cubin with a symbol table,
// else its first PTX entry (every entry is compiled from the same source). Empty for anything
// else or bytes that cannot be read. The one dispatch: the interceptor's snapshots and the
// extract's replay route (which looks up what a capture without snapshots never recorded).
std::vector<Variable> image_variables(std::span<const uint8_t> image);

}  // namespace cusnap::fatbin

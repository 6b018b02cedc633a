// Code-image rewriting for `cusnap redact --strip-ptx-comments` and `--hash-names`
// (docs/redact.md, "Code images"; internal to reduce/).
//
// PTX text is rewritten; a fatbin container keeps its PTX entries (rewritten, stored
// uncompressed) and loses its cubin entries, whose SASS and ELF symbol and string tables this
// module does not rewrite: the driver then JIT-compiles the PTX (the emulator runs PTX anyway).
// An image with no PTX to keep (a bare cubin, a fatbin of cubins only) is refused, naming it.
#pragma once

#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cusnap/format/status.h"

namespace cusnap::reduce::detail {

struct CodeRewrite {
  bool strip_comments = false;  // comments and .file/.loc directives removed
  bool hash_names = false;      // every name of `names` replaced by hashed_name()
  std::string salt;             // hashed_name's salt
  std::set<std::string> names;  // module-scope names the capture's PTX defines
};

// The replacement of a kernel or variable name: "h_" and 24 hex digits of the XXH3-128 of
// (salt, NUL, name); a valid PTX identifier, the same for the same salt and name.
std::string hashed_name(const std::string& salt, std::string_view name);

// The names a PTX text defines at module scope: `.entry` and `.func` (not `.extern`) names and
// `.global`/`.const` variables (fatbin::ptx_variables).
std::vector<std::string> ptx_defined_names(std::string_view ptx);

// The PTX texts of a stored image (PTX text, or a fatbin container's PTX entries); `what` names
// the image in errors. Errors: an image without PTX (cubin, cubin-only fatbin, unreadable).
format::Result<std::vector<std::string>> image_ptx(std::span<const uint8_t> image,
                                                   const std::string& what);

// The rewritten PTX text (`rewrite`), or an error when it holds DWARF sections while names are
// hashed (names there are bytes, not identifiers).
format::Result<std::string> rewrite_ptx(std::string_view ptx, const CodeRewrite& rewrite,
                                        const std::string& what);

// The identifiers of free text (record fields, messages) that are names of `rewrite.names`,
// replaced; `<name>_param_<N>` too. No-op unless rewrite.hash_names.
std::string rewrite_text(std::string_view text, const CodeRewrite& rewrite);

// The rewritten image (same kind: PTX text with its NUL, or a fatbin container). `dropped`
// counts the cubin entries left out. Errors as image_ptx and rewrite_ptx.
format::Result<std::vector<uint8_t>> rewrite_image(std::span<const uint8_t> image,
                                                   const CodeRewrite& rewrite,
                                                   const std::string& what, unsigned* dropped);

}  // namespace cusnap::reduce::detail

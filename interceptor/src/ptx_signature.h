// Parameter layout from a PTX `.entry` signature: the fallback when the driver cannot report it
// (cuFuncGetParamInfo needs a 12.4+ driver). Parameters are laid out in order, each at the next
// offset aligned to its alignment: `.align N` when it precedes the type (by-value structs as
// `.b8 name[N]`), else the element size. An `.align` after `.ptr` describes the pointee and does
// not change the layout. (PTX inside fatbins is extracted by code_layouts.h.)
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "handles.h"

namespace cusnap::icpt {

// std::nullopt when `entry` is not declared in `ptx` or its signature cannot be parsed.
std::optional<std::vector<ParamSlot>> ptx_entry_layout(std::string_view ptx,
                                                       std::string_view entry);

// The layouts of every `.entry` in `ptx` whose signature parses, by entry name.
std::map<std::string, std::vector<ParamSlot>, std::less<>> ptx_entry_layouts(std::string_view ptx);

}  // namespace cusnap::icpt

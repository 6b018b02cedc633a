// Cap'n Proto reports a record it cannot read (a damaged or hostile capture whose checksums
// match) by throwing kj::Exception from a getter. This module's contract is errors as values
// (README: nothing throws but bad_alloc), so each entry point runs its body through this.
#pragma once

#include <kj/exception.h>

#include <string>
#include <utility>

#include "cusnap/format/status.h"

namespace cusnap::extract::detail {

template <typename F>
auto unreadable_as_error(F&& body) -> decltype(body()) {
  try {
    return std::forward<F>(body)();
  } catch (const kj::Exception& e) {
    return format::Status::error(format::ErrorCode::kMalformed,
                                 std::string("unreadable record: ") + e.getDescription().cStr());
  }
}

}  // namespace cusnap::extract::detail

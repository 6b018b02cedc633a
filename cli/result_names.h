// Names of CUresult values (the driver's return codes) without including cuda.h.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace cusnap::cli {

// "CUDA_ERROR_INVALID_VALUE" for 1; nullptr for a value this build does not know.
const char* result_name(int value);
// The name when known, else the decimal value.
std::string result_text(int value);
size_t result_name_count();
// The value of "CUDA_ERROR_INVALID_VALUE" (1); nullopt for a name this build does not know.
std::optional<int> result_value(const std::string& name);

}  // namespace cusnap::cli

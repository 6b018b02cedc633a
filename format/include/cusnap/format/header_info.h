// Helpers that fill the process-describing part of a CaptureHeader (no CUDA involved).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "cusnap/format/capture.capnp.h"  // generated from format/schema/capture.capnp

namespace cusnap::format {

// Tool version string compiled into the library (the CMake project version).
const char* tool_version();

// Fills toolName, toolVersion, schemaVersion, containerVersion, creationTimeNs,
// monotonicAtCreationNs, hostName, pid, commandLine (/proc/self/cmdline), workingDirectory and
// environment (variables whose name starts with one of `env_prefixes`, sorted by name).
// Fields it cannot determine are left unset. Never throws, never allocates outside the builder
// except for transient reads of /proc.
void fill_process_info(schema::CaptureHeader::Builder header,
                       std::span<const std::string_view> env_prefixes);

// Which launch of its source an extracted capture holds (ExtractInfo): "call N", or "call N,
// kernel node K of that graph launch". cusnap info and the --emit-cpp reproducer say it so.
std::string extracted_launch_text(schema::ExtractInfo::Reader extract);

// The default prefixes: CUDA_, CUSNAP_, LD_, NVIDIA_, PTX, OMP_NUM_THREADS.
std::span<const std::string_view> default_env_prefixes();

}  // namespace cusnap::format

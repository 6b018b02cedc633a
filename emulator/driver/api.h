// Shared by every hand-written entry point of the emulator.
//
// Entry points are defined as `CUSNAP_EXPORT CUresult CUDAAPI <exported symbol>(...)`; the
// generator scans for exactly that spelling to know what is implemented, and the generated
// declarations (generated_driver_api.h) make the compiler check each definition's ABI.
// Every entry point runs its body through guarded(): no exception ever crosses the C ABI.
#pragma once

#include <new>

#include "driver/log.h"
#include "generated_driver_api.h"

#define CUSNAP_EXPORT extern "C" __attribute__((visibility("default")))

namespace cusnap::emu::driver {

template <class Body>
CUresult guarded(const char* name, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    log(LogLevel::kError, "%s: out of host memory", name);
    return CUDA_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    log(LogLevel::kError, "%s: internal error: %s", name, e.what());
    return CUDA_ERROR_UNKNOWN;
  } catch (...) {
    log(LogLevel::kError, "%s: internal error", name);
    return CUDA_ERROR_UNKNOWN;
  }
}

}  // namespace cusnap::emu::driver

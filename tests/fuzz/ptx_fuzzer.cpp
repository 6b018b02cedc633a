// libFuzzer target for the emulator's PTX front end: any byte string is parsed and lowered into a
// Program (emulator/ptx/engine.h compile()), or refused with a message; nothing is executed.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine.h"

using namespace cusnap::emu;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ptx::CompileResult result =
      ptx::compile(std::string_view(reinterpret_cast<const char*>(data), size));
  if (result.program) {
    for (const ptx::KernelDesc& k : result.program->kernels()) {
      (void)result.program->find_kernel(k.name);
    }
    for (const ptx::VariableDesc& v : result.program->variables()) {
      (void)result.program->find_variable(v.name);
    }
  }
  return 0;
}

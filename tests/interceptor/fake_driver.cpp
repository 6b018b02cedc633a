// A fake "real driver" for the cuGetProcAddress tests: answers every non-empty name with success
// and a pointer of its own (the shim must replace it by its wrapper of exactly the right symbol,
// or pass it through untouched for names it does not know), and the empty-name probe with NULL.
#include <cstdint>
#include <cstring>

namespace {
int g_answer_target = 0;
}

extern "C" __attribute__((visibility("default"))) void* fake_driver_answer() {
  return &g_answer_target;
}

extern "C" __attribute__((visibility("default"))) int cuGetProcAddress_v2(const char* symbol,
                                                                          void** pfn, int,
                                                                          unsigned long long,
                                                                          int* status) {
  if (symbol == nullptr || pfn == nullptr) return 1;  // CUDA_ERROR_INVALID_VALUE
  bool found = symbol[0] != '\0';
  *pfn = found ? &g_answer_target : nullptr;
  if (status != nullptr) *status = found ? 0 : 1;  // SUCCESS / SYMBOL_NOT_FOUND
  return 0;
}

extern "C" __attribute__((visibility("default"))) int cuGetProcAddress(const char* symbol,
                                                                       void** pfn, int version,
                                                                       unsigned long long flags) {
  return cuGetProcAddress_v2(symbol, pfn, version, flags, nullptr);
}

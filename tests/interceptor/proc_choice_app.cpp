// For interceptor.proc_choice: looks entry points up through cuGetProcAddress_v2 of whatever
// libcuda.so.1 the loader finds (the shim, under `cusnap capture --driver <fake_driver>`) and
// calls each answer once, so the capture shows which export every call was recorded as. Prints
// "called <request> -> <export reached>" per call (the fake driver says which of its exports
// ran) and exits 0 when every look-up succeeded and every call reached the driver.
#include <dlfcn.h>

#include <cstdio>

namespace {

using GetProcV2 = int (*)(const char*, void**, int, unsigned long long, int*);
using Init = int (*)(unsigned int);
using Call = int (*)(void*, void*, void*, void*, void*, void*);
using Introspect = const char* (*)();

struct Request {
  const char* name;
  int version;
  unsigned long long flags;
};

const Request kRequests[] = {
    {"cuMemAlloc", 3020, 0},
    {"cuLaunchKernel", 7000, 0},
    {"cuLaunchKernel", 7000, 2},
    {"cuStreamBeginCapture", 10000, 0},
    {"cuMemcpy", 7000, 2},
    {"cuCtxSynchronize", 2000, 0},
    {"cuFutureEntryPoint", 13000, 0},
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: proc_choice_app FAKE_DRIVER\n");
    return 2;
  }
  void* cuda = ::dlopen("libcuda.so.1", RTLD_NOW);
  void* fake = ::dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (cuda == nullptr || fake == nullptr) {
    std::fprintf(stderr, "proc_choice_app: %s\n", ::dlerror());
    return 2;
  }
  auto init = reinterpret_cast<Init>(::dlsym(cuda, "cuInit"));
  auto get_proc = reinterpret_cast<GetProcV2>(::dlsym(cuda, "cuGetProcAddress_v2"));
  auto last_called = reinterpret_cast<Introspect>(::dlsym(fake, "fake_driver_last_called"));
  if (init == nullptr || get_proc == nullptr || last_called == nullptr || init(0) != 0) {
    std::fprintf(stderr, "proc_choice_app: no usable driver\n");
    return 2;
  }
  int failures = 0;
  for (const Request& r : kRequests) {
    void* pfn = nullptr;
    int status = -1;
    int result = get_proc(r.name, &pfn, r.version, r.flags, &status);
    if (result != 0 || status != 0 || pfn == nullptr) {
      std::fprintf(stderr, "proc_choice_app: %s@%d/%llu: result %d status %d\n", r.name, r.version,
                   r.flags, result, status);
      ++failures;
      continue;
    }
    // The fake ignores its arguments and answers CUDA_ERROR_NOT_SUPPORTED.
    int called = reinterpret_cast<Call>(pfn)(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
    std::printf("called %s@%d/%llu -> %s (%d)\n", r.name, r.version, r.flags, last_called(),
                called);
    if (called != 801) ++failures;
  }
  return failures == 0 ? 0 : 1;
}

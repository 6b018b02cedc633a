// For interceptor.no_capture: a CUDA program the shim never reaches. It opens the driver given
// on its command line by absolute path (the loader's search, and so `cusnap capture`'s
// LD_LIBRARY_PATH and LD_AUDIT redirection, never sees the name libcuda.so.1), calls cuInit and
// exits with the code given as its second argument when cuInit succeeded.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  if (argc != 3 || argv[1][0] != '/') {
    std::fprintf(stderr, "usage: absolute_driver_app /ABSOLUTE/libcuda.so.1 EXIT_CODE\n");
    return 2;
  }
  void* driver = ::dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  auto init =
      driver != nullptr ? reinterpret_cast<int (*)(unsigned)>(::dlsym(driver, "cuInit")) : nullptr;
  if (init == nullptr || init(0) != 0) {
    std::fprintf(stderr, "absolute_driver_app: no usable driver at %s\n", argv[1]);
    return 2;
  }
  std::fprintf(stderr, "absolute_driver_app: cuInit ok\n");
  return std::atoi(argv[2]);
}

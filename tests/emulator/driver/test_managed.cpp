// `__managed__` module variables (`.global .attribute(.managed)`, kernels/managed.cu): they live
// in managed memory, so the host reads and writes them through the address cuModuleGetGlobal
// returns and kernels see the same bytes; initializers apply; the pointer attributes say managed.
#include <cstring>
#include <string>
#include <vector>

#include "test_helpers.h"

using namespace cusnap_test;

#ifdef CUSNAP_TEST_HAVE_PTX_ENGINE

TEST_CASE("managed: __managed__ variables shared by host and kernels", "[managed]") {
  primary_context();
  const std::string ptx = read_file(kernel_path("managed.ptx"));
  REQUIRE(ptx.find(".attribute(.managed)") != std::string::npos);
  CUmodule module = nullptr;
  REQUIRE_CU(cuModuleLoadData(&module, ptx.c_str()));
  CUfunction accumulate = nullptr, scale = nullptr;
  REQUIRE_CU(cuModuleGetFunction(&accumulate, module, "accumulate"));
  REQUIRE_CU(cuModuleGetFunction(&scale, module, "scale"));

  CUdeviceptr counter_ptr = 0, histogram_ptr = 0, plain_ptr = 0;
  size_t bytes = 0;
  REQUIRE_CU(cuModuleGetGlobal(&counter_ptr, &bytes, module, "counter"));
  CHECK(bytes == sizeof(unsigned));
  REQUIRE_CU(cuModuleGetGlobal(&histogram_ptr, &bytes, module, "histogram"));
  CHECK(bytes == 8 * sizeof(int));
  REQUIRE_CU(cuModuleGetGlobal(&plain_ptr, &bytes, module, "plain"));

  SECTION("pointer attributes") {
    bool is_managed = false;
    REQUIRE_CU(cuPointerGetAttribute(&is_managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, histogram_ptr));
    CHECK(is_managed);
    is_managed = true;
    REQUIRE_CU(cuPointerGetAttribute(&is_managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, plain_ptr));
    CHECK_FALSE(is_managed);
    void* host = nullptr;
    REQUIRE_CU(cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, counter_ptr));
    CHECK(host == reinterpret_cast<void*>(counter_ptr));
    // The module owns the variable: it is not an allocation cuMemFree may release.
    CHECK(cuMemFree(histogram_ptr) == CUDA_ERROR_INVALID_VALUE);
  }

  SECTION("host writes, kernels update, host reads back") {
    auto* counter = reinterpret_cast<unsigned*>(counter_ptr);
    auto* histogram = reinterpret_cast<int*>(histogram_ptr);
    // The initializers, read by the host through the pointer.
    CHECK(*counter == 7);
    for (int i = 0; i < 8; ++i) CHECK(histogram[i] == i + 1);

    // The host's own writes, through the same pointer.
    std::vector<int> expected(8);
    for (int i = 0; i < 8; ++i) expected[i] = histogram[i] = 100 * i - 350;
    *counter = 40;

    const int n = 1000;
    std::vector<int> in(n);
    for (int i = 0; i < n; ++i) in[i] = (i * 37 + 11) % 203 - 60;
    CUdeviceptr d_in = 0;
    REQUIRE_CU(cuMemAlloc(&d_in, n * sizeof(int)));
    REQUIRE_CU(cuMemcpyHtoD(d_in, in.data(), n * sizeof(int)));
    int count = n;
    void* params[] = {&d_in, &count};
    REQUIRE_CU(cuLaunchKernel(accumulate, 4, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr));
    REQUIRE_CU(cuCtxSynchronize());
    for (int v : in) expected[v & 7] += v;
    unsigned expected_counter = 41;
    CHECK(*counter == expected_counter);
    for (int i = 0; i < 8; ++i) {
      INFO("bin " << i);
      CHECK(histogram[i] == expected[i]);
    }

    // A host write between launches is what the next kernel reads.
    *counter = 5;
    REQUIRE_CU(cuLaunchKernel(scale, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr));
    REQUIRE_CU(cuCtxSynchronize());
    for (int i = 0; i < 8; ++i) {
      INFO("bin " << i);
      CHECK(histogram[i] == expected[i] * (5 + 3));
    }
    // Copies see the same bytes as the host's loads.
    std::vector<int> copied(8);
    REQUIRE_CU(cuMemcpyDtoH(copied.data(), histogram_ptr, 8 * sizeof(int)));
    CHECK(std::memcmp(copied.data(), histogram, 8 * sizeof(int)) == 0);
    REQUIRE_CU(cuMemFree(d_in));
  }

  REQUIRE_CU(cuModuleUnload(module));
}

TEST_CASE("managed: cuLibraryGetManaged finds __managed__ variables only", "[managed]") {
  primary_context();
  const std::string ptx = read_file(kernel_path("managed.ptx"));
  CUlibrary library = nullptr;
  REQUIRE_CU(cuLibraryLoadData(&library, ptx.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  CUdeviceptr managed = 0, global = 0;
  size_t bytes = 0, global_bytes = 0;
  REQUIRE_CU(cuLibraryGetManaged(&managed, &bytes, library, "histogram"));
  REQUIRE_CU(cuLibraryGetGlobal(&global, &global_bytes, library, "histogram"));
  CHECK(managed == global);
  CHECK(bytes == 8 * sizeof(int));
  CHECK(reinterpret_cast<const int*>(managed)[7] == 8);  // the initializer, read by the host
  bytes = 0;
  CHECK_CU(cuLibraryGetManaged(nullptr, &bytes, library, "counter"));
  CHECK(bytes == sizeof(unsigned));
  CHECK(cuLibraryGetManaged(&managed, &bytes, library, "plain") == CUDA_ERROR_NOT_FOUND);
  CHECK(cuLibraryGetManaged(&managed, &bytes, library, "missing") == CUDA_ERROR_NOT_FOUND);
  CHECK(cuLibraryGetManaged(nullptr, nullptr, library, "counter") == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuLibraryGetManaged(&managed, &bytes, nullptr, "counter") == CUDA_ERROR_INVALID_HANDLE);
  REQUIRE_CU(cuLibraryUnload(library));
}

#endif  // CUSNAP_TEST_HAVE_PTX_ENGINE

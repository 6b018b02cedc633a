# Every third-party dependency comes from a Debian package (scripts/setup installs them).
find_package(CapnProto CONFIG REQUIRED)      # capnproto + libcapnp-dev (0.9)
find_package(zstd CONFIG REQUIRED)           # libzstd-dev
find_package(spdlog CONFIG REQUIRED)         # libspdlog-dev
find_package(CLI11 CONFIG REQUIRED)          # libcli11-dev
find_package(Catch2 2 CONFIG REQUIRED)       # catch2 (2.x)
find_package(PkgConfig REQUIRED)
pkg_check_modules(LZ4 REQUIRED IMPORTED_TARGET liblz4)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
find_package(Threads REQUIRED)

# The CUDA toolkit provides headers and nvcc. No cusnap library or tool links libcudart (only the
# runtime-API samples and tests do, CUDA::cudart_static, as nvcc's default would); the driver is
# always chosen at run time (the emulator, or a libcuda.so.1 found by path).
find_package(CUDAToolkit REQUIRED)

# Static archives for code that is loaded into someone else's process (emulator, interceptor):
# their dependencies must stay private.
find_library(CUSNAP_ZSTD_STATIC NAMES libzstd.a REQUIRED)
find_library(CUSNAP_LZ4_STATIC NAMES liblz4.a REQUIRED)
find_library(CUSNAP_XXHASH_STATIC NAMES libxxhash.a REQUIRED)

include(CTest)

# Debian's capnproto source package for exactly the installed libcapnp-dev (scripts/setup fetches
# it): the interceptor compiles its own private, position-independent Cap'n Proto / kj from it
# (interceptor/CMakeLists.txt, CUSNAP_SHIM_PRIVATE_CAPNP).
set(CUSNAP_CAPNP_SOURCE_DIR "${CMAKE_SOURCE_DIR}/build/_deps/capnproto-${CapnProto_VERSION}" CACHE PATH
    "Debian's capnproto source tree matching the installed Cap'n Proto headers (scripts/setup fetches it)")

# `cmake --install`: the package-level files (docs/install.md). Each module installs its own
# targets and files (install() next to its targets); this adds the CMake package that gives
# find_package(cusnap) the exported libraries cusnap::format and cusnap::fatbin.
#
#   bin/cusnap                                  cli/
#   lib/cusnap/interceptor/libcuda.so.1, ...    interceptor/ (the shim, the LD_AUDIT helper)
#   lib/cusnap/emulator/libcuda.so.1            emulator/
#   lib/libcusnap_format.a, lib/libcusnap_fatbin.a, include/cusnap/{format,fatbin}/
#   lib/cmake/cusnap/                           here
#   share/cusnap/capture.capnp                  format/
#   share/man/man1/cusnap*.1, share/bash-completion/completions/cusnap,
#   share/zsh/site-functions/_cusnap            cli/ (generated from the CLI's --help)
include(CMakePackageConfigHelpers)

set(CUSNAP_INSTALL_BIN_DIR bin)
set(CUSNAP_INSTALL_SCHEMA_DIR share/cusnap)
set(cusnap_config_dir lib/cmake/cusnap)
file(STRINGS ${CMAKE_SOURCE_DIR}/format/schema/capture.capnp cusnap_schema_line
     REGEX "^const schemaVersion :UInt32 = [0-9]+;")
string(REGEX MATCH "[0-9]+" CUSNAP_CAPTURE_SCHEMA_VERSION "${cusnap_schema_line}")

install(EXPORT cusnapTargets NAMESPACE cusnap:: DESTINATION ${cusnap_config_dir})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/cusnapConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cusnapConfig.cmake INSTALL_DESTINATION ${cusnap_config_dir}
  PATH_VARS CUSNAP_INSTALL_BIN_DIR CUSNAP_INSTALL_SCHEMA_DIR)
# 0.x: a minor version may change the libraries' API, so only the same minor is compatible.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cusnapConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cusnapConfig.cmake ${CMAKE_BINARY_DIR}/cusnapConfigVersion.cmake
  DESTINATION ${cusnap_config_dir})

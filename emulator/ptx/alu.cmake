# ALU of the PTX engine: scalar semantics of arithmetic, logic, compare, convert and atomic
# instructions (contract: alu.h, precision notes: ALU.md). Included from emulator/ptx's
# CMakeLists.txt and from tests/emulator/alu; paths are relative to this file.
include_guard(GLOBAL)

add_library(cusnap_emu_alu STATIC
  ${CMAKE_CURRENT_LIST_DIR}/alu.cpp
  ${CMAKE_CURRENT_LIST_DIR}/alu_int.cpp
  ${CMAKE_CURRENT_LIST_DIR}/alu_float.cpp
  ${CMAKE_CURRENT_LIST_DIR}/alu_half.cpp
  ${CMAKE_CURRENT_LIST_DIR}/alu_cvt.cpp
  ${CMAKE_CURRENT_LIST_DIR}/alu_cmp_atom.cpp
)
target_include_directories(cusnap_emu_alu PUBLIC ${CMAKE_CURRENT_LIST_DIR})
set_target_properties(cusnap_emu_alu PROPERTIES
  POSITION_INDEPENDENT_CODE ON
  CXX_VISIBILITY_PRESET hidden
  VISIBILITY_INLINES_HIDDEN ON)
# The ALU changes the host rounding mode around operations (.rz/.rm/.rp) and reads the inexact
# flag (round-to-odd): the compiler must not fold or move floating-point operations across those
# calls, and must not assume errno-setting libm calls.
target_compile_options(cusnap_emu_alu PRIVATE -frounding-math -fno-math-errno)

# replayer.h200_captures: captures written on an NVIDIA H200 by scripts/gpu-check (the interceptor
# on NVIDIA's driver 580.159.04, 2026-12-04; captures/h200/README.md) replayed on the emulator:
# every one must replay and match every checksummed device-to-host copy the GPU produced.
#   cmake -DCUSNAP=... -DDIR=... -P gpu_captures.cmake
file(GLOB captures "${DIR}/*.cusnap")
list(LENGTH captures count)
if(count LESS 20)
  message(FATAL_ERROR "expected at least 20 H200 captures in ${DIR}, found ${count}")
endif()
set(failed "")
foreach(capture IN LISTS captures)
  get_filename_component(name "${capture}" NAME_WE)
  execute_process(COMMAND "${CUSNAP}" replay --driver emulator --progress off "${capture}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "mismatched, 0 unverified: MATCHED")
    string(APPEND failed "\n  ${name}: rc=${rc}\n${out}${err}")
  endif()
endforeach()
if(failed)
  message(FATAL_ERROR "H200 captures that did not replay verified on the emulator:${failed}")
endif()
# With the emulator taking address hints as NVIDIA's driver 580 did on the H200 (rounded up to
# 32 MiB: the address-hint question of scripts/gpu-check), pointer_chase - pointers stored in
# device memory, at a captured address that is not a multiple of 32 MiB - must still get its
# captured address (replayer/memory.cpp, reserve_at) and verify; relocated it reads garbage.
execute_process(COMMAND ${CMAKE_COMMAND} -E env CUSNAP_EMU_VA_HINT_ROUND=33554432
                        "${CUSNAP}" replay --driver emulator --progress off "${DIR}/pointer_chase.cusnap"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(NOT rc EQUAL 0 OR NOT out MATCHES "all at their captured addresses" OR NOT out MATCHES ": MATCHED")
  message(FATAL_ERROR "pointer_chase with 32 MiB-rounded hints: rc=${rc}\n${out}${err}")
endif()
message(STATUS "${count} H200 captures replayed verified on the emulator")

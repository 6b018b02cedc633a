# `cusnap capture`, `cusnap replay` and the shim resolve drivers through the one search
# (cusnap/common/driver_search.h). Arguments (-D): CUSNAP SHIM EMULATOR SAMPLE OUT_DIR
#   1. CUSNAP_REAL_DRIVER is auto's answer for capture and for replay alike: a capture made with
#      it replays with it, and the report says so;
#   2. --driver naming the interceptor, or a copy of it under another name, is refused up front
#      by capture and by replay, naming the file (it is no driver).
file(REMOVE_RECURSE ${OUT_DIR})
file(MAKE_DIRECTORY ${OUT_DIR}/copy)
file(COPY_FILE ${SHIM} ${OUT_DIR}/copy/libnvidia-not.so.1)
unset(ENV{CUSNAP_REAL_DRIVER})
unset(ENV{CUSNAP_EMULATOR_PATH})

set(ENV{CUSNAP_REAL_DRIVER} ${EMULATOR})
set(capture ${OUT_DIR}/override.cusnap)
execute_process(COMMAND ${CUSNAP} capture --force-overwrite -o ${capture} -- ${SAMPLE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT EXISTS ${capture})
  message(FATAL_ERROR "capture with CUSNAP_REAL_DRIVER (auto) failed (${rc}):\n${out}\n${err}")
endif()
execute_process(COMMAND ${CUSNAP} replay --progress off --report ${OUT_DIR}/override.json ${capture}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "replay with CUSNAP_REAL_DRIVER (auto) failed (${rc}):\n${out}\n${err}")
endif()
file(READ ${OUT_DIR}/override.json report)
string(JSON path GET "${report}" driver path)
string(JSON chosen GET "${report}" driver chosen)
if(NOT path STREQUAL EMULATOR OR NOT chosen STREQUAL "auto: CUSNAP_REAL_DRIVER")
  message(FATAL_ERROR "replay chose ${path} (${chosen}), expected ${EMULATOR} (auto: CUSNAP_REAL_DRIVER)")
endif()
unset(ENV{CUSNAP_REAL_DRIVER})

foreach(shim ${SHIM} ${OUT_DIR}/copy/libnvidia-not.so.1)
  execute_process(COMMAND ${CUSNAP} capture --driver ${shim} -o ${OUT_DIR}/refused.cusnap -- ${SAMPLE}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 1 OR NOT err MATCHES "the cusnap interceptor, not a driver" OR EXISTS ${OUT_DIR}/refused.cusnap)
    message(FATAL_ERROR "capture --driver ${shim}: expected exit 1 and a refusal, got ${rc}:\n${out}\n${err}")
  endif()
  execute_process(COMMAND ${CUSNAP} replay --driver ${shim} --progress off ${capture}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0 OR NOT err MATCHES "the cusnap interceptor, not a driver")
    message(FATAL_ERROR "replay --driver ${shim}: expected a refusal, got ${rc}:\n${out}\n${err}")
  endif()
endforeach()

message(STATUS "driver search: the interceptor refused as a driver; CUSNAP_REAL_DRIVER obeyed by capture and replay")

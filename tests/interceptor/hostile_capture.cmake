# interceptor.isolation.hostile: an application that carries its own Cap'n Proto and zstd
# (hostile definitions of functions the shim calls, ahead of everything else in the global lookup
# scope; see hostile_lib.cpp) is captured and replayed on the emulator. Arguments (-D):
#   APP IMAGE CUSNAP EMULATOR INSPECT OUT_DIR REPLAY (ON when `cusnap replay` is built)
# 1. APP runs on the emulator directly: exit 0 and its own host check passes;
# 2. under `cusnap capture`: the same stdout and exit code (a shim bound to the application's
#    Cap'n Proto or zstd hooks aborts the application here);
# 3. the capture is whole and holds the one launch;
# 4. `cusnap replay` on the emulator re-executes it and verifies the device-to-host copy (when
#    the replayer module is built).
get_filename_component(emu_dir ${EMULATOR} DIRECTORY)
set(capture ${OUT_DIR}/hostile.cusnap)
set(report ${OUT_DIR}/hostile.replay.json)
file(REMOVE ${capture} ${report})

set(ENV{LD_LIBRARY_PATH} "${emu_dir}")
execute_process(COMMAND ${APP} ${IMAGE} RESULT_VARIABLE direct_rc OUTPUT_VARIABLE direct_out ERROR_VARIABLE direct_err)
unset(ENV{LD_LIBRARY_PATH})
message("direct run (rc ${direct_rc}):\n${direct_out}${direct_err}")
if(NOT direct_rc STREQUAL "0" OR NOT direct_out MATCHES "marker 1729" OR NOT direct_out MATCHES "mismatches 0")
  message(FATAL_ERROR "the application fails on the emulator without capture")
endif()

execute_process(COMMAND ${CUSNAP} capture --driver emulator --force-overwrite -o ${capture} -- ${APP} ${IMAGE}
                RESULT_VARIABLE captured_rc OUTPUT_VARIABLE captured_out ERROR_VARIABLE captured_err)
message("captured run (rc ${captured_rc}):\n${captured_out}${captured_err}")
if(captured_err MATCHES "hostile_lib: ")
  message(FATAL_ERROR "the shim called the application's own definitions")
endif()
if(NOT captured_rc STREQUAL direct_rc)
  message(FATAL_ERROR "exit code under capture ${captured_rc}, without ${direct_rc}")
endif()
if(NOT captured_out STREQUAL direct_out)
  message(FATAL_ERROR "stdout differs under capture")
endif()

execute_process(COMMAND ${INSPECT} ${capture} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("inspect (rc ${rc}):\n${out}${err}")
if(NOT rc EQUAL 0 OR NOT out MATCHES "integrity whole" OR NOT out MATCHES "launches 1[^0-9]")
  message(FATAL_ERROR "the capture is not whole or does not hold the one launch")
endif()

if(NOT REPLAY)
  message("replay: not built (module replayer), not checked")
  return()
endif()
execute_process(COMMAND ${CUSNAP} replay ${capture} --driver ${EMULATOR} --progress off --report ${report}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("replay (rc ${rc}):\n${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "replay failed (rc ${rc})")
endif()
file(READ ${report} report_json)
string(JSON matched GET "${report_json}" verification matched)
string(JSON unverified GET "${report_json}" verification unverified)
if(NOT matched EQUAL 1 OR NOT unverified EQUAL 0)
  message(FATAL_ERROR "replay verified ${matched} device-to-host copies (expected 1), ${unverified} unverified")
endif()

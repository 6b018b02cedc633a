# interceptor.signals: the shim's fatal-signal handling never changes an application's own
# signal handling (signal_app.cpp): handled SIGHUPs, a recovered SIGSEGV and an alarm() behave
# exactly as in a direct run on the emulator (same stdout, same exit code), the shim does not
# flush on the signals the application handles (200 handled SIGHUPs between 200 recorded calls
# must not cut the capture into ~200 frames), and a fork()ed child killed by SIGTERM with the
# default disposition dies of SIGTERM with its own capture closed whole.
# Arguments (-D): APP CUSNAP INSPECT EMULATOR_DIR OUT_DIR
file(REMOVE_RECURSE ${OUT_DIR})
file(MAKE_DIRECTORY ${OUT_DIR})

function(inspect file out_var)
  execute_process(COMMAND ${INSPECT} ${file} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "inspect ${file} failed (${rc}):\n${out}${err}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

execute_process(COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${EMULATOR_DIR} ${APP} handled
                RESULT_VARIABLE direct_rc OUTPUT_VARIABLE direct_out ERROR_VARIABLE direct_err)
message("direct (rc ${direct_rc}):\n${direct_out}${direct_err}")
if(NOT direct_rc EQUAL 0 OR NOT direct_out STREQUAL "hup 200 segv 1 alarm 1\n")
  message(FATAL_ERROR "signal_app handled fails without the shim")
endif()
execute_process(COMMAND ${CUSNAP} capture --driver emulator -o ${OUT_DIR}/handled.cusnap -- ${APP} handled
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("captured (rc ${rc}):\n${out}${err}")
if(NOT rc EQUAL direct_rc OR NOT out STREQUAL direct_out)
  message(FATAL_ERROR "under capture: exit ${rc}, stdout '${out}'; directly: exit ${direct_rc}, '${direct_out}'")
endif()
inspect(${OUT_DIR}/handled.cusnap handled)
message("${handled}")
if(NOT handled MATCHES "integrity whole")
  message(FATAL_ERROR "the capture of signal_app handled is not whole")
endif()
string(REGEX MATCH "frames ([0-9]+)" ignored "${handled}")
if(CMAKE_MATCH_1 GREATER_EQUAL 100)
  message(FATAL_ERROR "${CMAKE_MATCH_1} frames: the shim flushed on signals the application handles")
endif()

execute_process(COMMAND ${CUSNAP} capture --driver emulator -o ${OUT_DIR}/fork.cusnap -- ${APP} fork-term
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("fork-term (rc ${rc}):\n${out}${err}")
if(NOT rc EQUAL 0 OR NOT out STREQUAL "child signal 15\n")
  message(FATAL_ERROR "the fork()ed child did not die of its SIGTERM")
endif()
file(GLOB children ${OUT_DIR}/fork.*.cusnap)
list(LENGTH children count)
if(NOT count EQUAL 1)
  message(FATAL_ERROR "expected the child's capture, found: ${children}")
endif()
inspect(${children} child)
message("${child}")
if(NOT child MATCHES "integrity whole")
  message(FATAL_ERROR "the SIGTERM'ed child's capture was not closed whole")
endif()

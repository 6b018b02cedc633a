# interceptor.no_capture: `cusnap capture` of applications the shim never reaches must not look
# like a successful capture: exit code 10 (docs/cli.md) and a message on stderr naming the
# application's own exit code. Two such applications: one that opens the driver by absolute path
# (the loader never searches for libcuda.so.1, so neither LD_LIBRARY_PATH nor LD_AUDIT applies)
# and a shell that never touches CUDA. And a capture that is written still exits with the
# application's code (here 3).
# Arguments (-D): CUSNAP APP EMULATOR SAMPLE OUT_DIR
file(MAKE_DIRECTORY ${OUT_DIR})

function(run_capture name expected_rc expected_err)
  set(capture ${OUT_DIR}/${name}.cusnap)
  file(REMOVE ${capture})
  execute_process(COMMAND ${CUSNAP} capture --driver emulator -o ${capture} -- ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${name} (rc ${rc}):\n${out}${err}")
  if(NOT rc EQUAL expected_rc)
    message(FATAL_ERROR "${name}: exit code ${rc}, expected ${expected_rc}")
  endif()
  if(NOT err MATCHES "${expected_err}")
    message(FATAL_ERROR "${name}: stderr does not say '${expected_err}'")
  endif()
endfunction()

run_capture(absolute 10 "no capture was written .*its exit code was 0; exiting 10" ${APP} ${EMULATOR} 0)
run_capture(absolute_rc5 10 "no capture was written .*its exit code was 5; exiting 10" ${APP} ${EMULATOR} 5)
run_capture(no_cuda 10 "no capture was written .*its exit code was 3; exiting 10" sh -c "exit 3")
# A capture written earlier is no excuse: --force-overwrite removes it before the run.
file(WRITE ${OUT_DIR}/stale.cusnap "an old capture")
execute_process(COMMAND ${CUSNAP} capture --driver emulator --force-overwrite -o ${OUT_DIR}/stale.cusnap
                        -- sh -c "exit 0" RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 10)
  message(FATAL_ERROR "stale file: exit code ${rc}, expected 10:\n${err}")
endif()
# The shim reached, here only by a child process of the application (its capture is
# <name>.<pid>.cusnap): the application's own exit code, whatever it is.
file(GLOB stale_children ${OUT_DIR}/reached.*.cusnap)
if(stale_children)
  file(REMOVE ${stale_children})
endif()
run_capture(reached 3 "cusnap capture: [0-9]+ calls" sh -c "\"${SAMPLE}\" >/dev/null && exit 3")
# The child capture that run left behind does not count for the next one.
execute_process(COMMAND ${CUSNAP} capture --driver emulator -o ${OUT_DIR}/reached.cusnap -- sh -c "exit 0"
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 10)
  message(FATAL_ERROR "stale child capture: exit code ${rc}, expected 10:\n${err}")
endif()

# interceptor.tsan.<sample>: one sample captured on the emulator in a ThreadSanitizer build.
# Arguments (-D): SAMPLE ARGS (list) SHIM_DIR EMULATOR INSPECT OUT SUPPRESSIONS
# The capture is configured through the environment (docs/capture.md), as a launcher would, so
# that this build needs neither the cli nor the replayer: only the instrumented sample, shim and
# emulator run. The sample (its threads, the emulator's stream workers, the shim's recorders and
# stream-order callbacks, the writer's compression and file threads, the exit-time close) must
# run without a single ThreadSanitizer report: halt_on_error makes the first one fatal, and any
# report on stderr fails the test even if the exit code survived. Then the file must be whole.
file(REMOVE ${OUT})
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env
          "TSAN_OPTIONS=halt_on_error=1 exitcode=66 second_deadlock_stack=1 suppressions=${SUPPRESSIONS}"
          LD_LIBRARY_PATH=${SHIM_DIR} CUSNAP_CAPTURE_OUTPUT=${OUT} CUSNAP_FORCE_OVERWRITE=1
          CUSNAP_REAL_DRIVER=${EMULATOR}
          ${SAMPLE} ${ARGS}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("exit ${rc}\n${out}${err}")
if(err MATCHES "ThreadSanitizer")
  message(FATAL_ERROR "ThreadSanitizer reported a problem (see above)")
endif()
if(NOT rc EQUAL 0 OR NOT out MATCHES "PASSED")
  message(FATAL_ERROR "the sample failed under capture (exit ${rc})")
endif()
execute_process(COMMAND ${INSPECT} ${OUT} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "integrity whole")
  string(REGEX MATCH "[^\n]*integrity[^\n]*" integrity "${out}")
  message(FATAL_ERROR "the capture is not whole (inspect exit ${rc}): ${integrity}${err}")
endif()
string(REGEX MATCH "launches [0-9]+" launches "${out}")
message("capture whole, ${launches}")

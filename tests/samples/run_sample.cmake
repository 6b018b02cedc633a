# Runs one sample and checks its exit status and output (ctest alone checks either the status or
# a regex, not both). Arguments (-D):
#   SAMPLE        path of the executable
#   SAMPLE_ARGS   optional argument string, split on spaces
#   EXPECT_RC     exact exit status expected (a crash reports a signal name and never matches)
#   EXPECT_REGEX  regex the combined stdout+stderr must match; EXPECT_REGEX2 an optional second
# The environment (LD_LIBRARY_PATH) is inherited from the test.
if(NOT DEFINED SAMPLE OR NOT DEFINED EXPECT_RC)
  message(FATAL_ERROR "run_sample.cmake: SAMPLE and EXPECT_RC are required")
endif()
separate_arguments(args UNIX_COMMAND "${SAMPLE_ARGS}")
execute_process(COMMAND ${SAMPLE} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc STREQUAL EXPECT_RC)
  message(FATAL_ERROR "${SAMPLE} ${SAMPLE_ARGS}: exit status '${rc}', expected ${EXPECT_RC}")
endif()
foreach(regex IN ITEMS "${EXPECT_REGEX}" "${EXPECT_REGEX2}")
  if(NOT regex STREQUAL "" AND NOT "${out}${err}" MATCHES "${regex}")
    message(FATAL_ERROR "${SAMPLE} ${SAMPLE_ARGS}: output does not match '${regex}'")
  endif()
endforeach()

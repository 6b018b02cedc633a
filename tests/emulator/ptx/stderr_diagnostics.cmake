# Runs diagnostic_probe and checks where the emulator's diagnostics go: by default (no
# CUSNAP_LOG_LEVEL) the memcheck and refused-PTX messages are on stderr, naming kernel, block,
# thread, PTX line and address; stdout stays empty; CUSNAP_LOG_LEVEL=off silences them.
# Inputs: PROBE (the probe executable), STORE_LINE, REFUSED_LINE.
function(run_probe mode level out_var err_var)
  if(level STREQUAL "")
    set(env_args --unset=CUSNAP_LOG_LEVEL)
  else()
    set(env_args CUSNAP_LOG_LEVEL=${level})
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ${env_args} ${PROBE} ${mode}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "probe ${mode} (CUSNAP_LOG_LEVEL='${level}') exited ${rc}\nstdout:\n${out}\nstderr:\n${err}")
  endif()
  if(NOT out STREQUAL "")
    message(FATAL_ERROR "probe ${mode} wrote to stdout:\n${out}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
  set(${err_var} "${err}" PARENT_SCOPE)
endfunction()

run_probe(oob "" out err)
foreach(needle "store_tid" "block \\(0,0,0\\)" "thread \\((3[2-9]|[4-6][0-9]),0,0\\)" "line ${STORE_LINE}" "0x[0-9a-f]+")
  if(NOT err MATCHES "${needle}")
    message(FATAL_ERROR "memcheck diagnostic on stderr lacks '${needle}':\n${err}")
  endif()
endforeach()

run_probe(unsupported "" out err)
if(NOT err MATCHES "vadd.s32.s32.s32" OR NOT err MATCHES "line ${REFUSED_LINE}" OR NOT err MATCHES "'refused'")
  message(FATAL_ERROR "refused-PTX diagnostic on stderr lacks instruction, line or function:\n${err}")
endif()

foreach(mode oob unsupported)
  run_probe(${mode} off out err)
  if(NOT err STREQUAL "")
    message(FATAL_ERROR "CUSNAP_LOG_LEVEL=off still wrote to stderr (${mode}):\n${err}")
  endif()
endforeach()
message(STATUS "emulator diagnostics: on stderr by default, silenced by CUSNAP_LOG_LEVEL=off")

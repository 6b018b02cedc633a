# Runs emu_surface_probe in one MODE under the environment that mode needs and checks what the
# emulator reports. Inputs: PROBE (the executable), MODE, WORK_DIR (scratch files).
#   profiler  cuProfilerStart/Stop are counted in CUSNAP_EMU_STATS
file(MAKE_DIRECTORY ${WORK_DIR})

function(probe out_var err_var)
  cmake_parse_arguments(P "" "" "ENV;ARGS" ${ARGN})
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=CUSNAP_EMU_STATS --unset=CUSNAP_EMU_MEMORY
                          --unset=CUSNAP_LOG_LEVEL ${P_ENV} ${PROBE} ${P_ARGS}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "probe ${P_ARGS} with '${P_ENV}' exited '${rc}'\nstdout:\n${out}\nstderr:\n${err}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
  set(${err_var} "${err}" PARENT_SCOPE)
endfunction()

function(require_match text regex what)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "${what}: no match for '${regex}' in:\n${text}")
  endif()
endfunction()

if(MODE STREQUAL "profiler")
  set(stats ${WORK_DIR}/profiler_stats.json)
  file(REMOVE ${stats})
  probe(out err ENV CUSNAP_EMU_STATS=${stats} ARGS profiler)
  file(READ ${stats} json)
  require_match("${json}" "\"profiler\": {\"starts\": 2, \"stops\": 1}" "CUSNAP_EMU_STATS")
else()
  message(FATAL_ERROR "unknown MODE '${MODE}'")
endif()

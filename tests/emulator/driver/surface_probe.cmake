# Runs emu_surface_probe in one MODE under the environment that mode needs and checks what the
# emulator reports. Inputs: PROBE (the executable), MODE, WORK_DIR (scratch files).
#   profiler  cuProfilerStart/Stop are counted in CUSNAP_EMU_STATS
#   capture   calls captured into a graph count once in CUSNAP_EMU_STATS, graph launches do not
#   memory    the reported device memory is CUSNAP_EMU_MEMORY (default 16G) but never more than
#             half of the host's memory, and allocations beyond it fail with OUT_OF_MEMORY
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

# Sets TOTAL and HOST from the probe's "total <bytes>\nhost <bytes>" output.
macro(parse_memory text what)
  if(NOT "${text}" MATCHES "total ([0-9]+)\nhost ([0-9]+)\n")
    message(FATAL_ERROR "${what}: no sizes in:\n${text}")
  endif()
  set(TOTAL ${CMAKE_MATCH_1})
  set(HOST ${CMAKE_MATCH_2})
endmacro()

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
  string(JSON starts GET "${json}" profiler starts)
  string(JSON stops GET "${json}" profiler stops)
  if(NOT starts EQUAL 2 OR NOT stops EQUAL 1)
    message(FATAL_ERROR "CUSNAP_EMU_STATS: profiler starts ${starts}, stops ${stops} (expected 2, 1)")
  endif()
elseif(MODE STREQUAL "capture")
  set(stats ${WORK_DIR}/capture_stats.json)
  file(REMOVE ${stats})
  probe(out err ENV CUSNAP_EMU_STATS=${stats} ARGS capture)
  file(READ ${stats} json)
  string(JSON memsets GET "${json}" memsets count)
  string(JSON copies GET "${json}" copies hostToDevice count)
  string(JSON bytes GET "${json}" copies hostToDevice bytes)
  if(NOT memsets EQUAL 1 OR NOT copies EQUAL 1 OR NOT bytes EQUAL 4096)
    message(FATAL_ERROR "CUSNAP_EMU_STATS: memsets ${memsets}, host-to-device copies ${copies} "
                        "(${bytes} bytes); expected the two captured calls: 1, 1 (4096)")
  endif()
elseif(MODE STREQUAL "memory")
  # 64 MiB: exactly what is configured, and allocations are bounded by it.
  probe(out err ENV CUSNAP_EMU_MEMORY=64M ARGS memory)
  require_match("${out}" "total 67108864\n" "CUSNAP_EMU_MEMORY=64M")
  # More than any test machine has: capped at half of the host's memory, with a warning.
  probe(out err ENV CUSNAP_EMU_MEMORY=1024T ARGS memory)
  parse_memory("${out}" "CUSNAP_EMU_MEMORY=1024T")
  set(total ${TOTAL})
  set(host ${HOST})
  math(EXPR half "${host} / 2")
  if(total GREATER half OR total LESS_EQUAL 0)
    message(FATAL_ERROR "CUSNAP_EMU_MEMORY=1024T reported ${total} bytes on a host of ${host}")
  endif()
  require_match("${err}" "CUSNAP_EMU_MEMORY=1024T is more than half of the host's memory" "the cap's warning")
  # The default: 16 GiB or half the host, whichever is less.
  probe(out err ARGS memory)
  parse_memory("${out}" "default")
  set(total ${TOTAL})
  if(total GREATER 17179869184 OR total GREATER half)
    message(FATAL_ERROR "the default reported ${total} bytes on a host of ${host}")
  endif()
  if(half GREATER_EQUAL 17179869184 AND NOT total EQUAL 17179869184)
    message(FATAL_ERROR "the default reported ${total} bytes, expected 16 GiB on a host of ${host}")
  endif()
else()
  message(FATAL_ERROR "unknown MODE '${MODE}'")
endif()

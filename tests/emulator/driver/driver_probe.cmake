# Runs emu_driver_probe under the environment variables the emulator reads once per process and
# checks what it reports. Inputs: PROBE (the probe executable), ORDER_PTX (order.cu as PTX).
#   - determinism: kernels whose results depend on block order give bit-identical results with
#     CUSNAP_EMU_THREADS=1, 2 and 7, several runs each, and device printf output comes in block
#     order; the debug log names the serialised kernels
#   - CUSNAP_EMU_TIMEOUT: a kernel that never ends, and blocks that wait for a later block under
#     serialisation, fail with CUDA_ERROR_LAUNCH_TIMEOUT naming kernel and block; a long finite
#     kernel under the limit is unaffected; 0 turns the watchdog (and the device attribute) off
#   - CUSNAP_EMU_REDZONE: allocations are at least that far apart after their end
function(probe out_var err_var)
  cmake_parse_arguments(P "" "" "ENV;ARGS" ${ARGN})
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=CUSNAP_EMU_THREADS --unset=CUSNAP_EMU_TIMEOUT
                          --unset=CUSNAP_EMU_REDZONE --unset=CUSNAP_LOG_LEVEL ${P_ENV} ${PROBE} ${P_ARGS}
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

# ---- determinism ---------------------------------------------------------------------------
set(reference "")
foreach(threads 1 2 7)
  foreach(run 1 2 3)
    probe(out err ENV CUSNAP_EMU_THREADS=${threads} ARGS order ${ORDER_PTX})
    if(reference STREQUAL "")
      set(reference "${out}")
      set(reference_from "CUSNAP_EMU_THREADS=${threads} run ${run}")
    elseif(NOT out STREQUAL reference)
      message(FATAL_ERROR "results depend on the worker count or the run:\n${reference_from}:\n${reference}\n"
                          "CUSNAP_EMU_THREADS=${threads} run ${run}:\n${out}")
    endif()
  endforeach()
endforeach()
foreach(kernel tickets exchange cas_push float_sum count_parallel coop_tickets)
  require_match("${reference}" "${kernel} [0-9a-f]+" "probe output")
endforeach()
require_match("${reference}" "hello block 0 thread 0\nhello block 0 thread 16\nhello block 1 thread 0\n" "printf order")
require_match("${reference}" "hello block 63 thread 16\n$" "printf order")
probe(out err ENV CUSNAP_EMU_THREADS=2 CUSNAP_LOG_LEVEL=debug ARGS order ${ORDER_PTX})
foreach(kernel tickets exchange cas_push float_sum coop_tickets)
  require_match("${err}" "kernel ${kernel} runs its blocks one at a time in block-index order[^\n]*PTX line [0-9]+"
                "debug log")
endforeach()
if(err MATCHES "kernel count_parallel runs its blocks one at a time")
  message(FATAL_ERROR "commutative integer atomics were serialised:\n${err}")
endif()

# ---- watchdog ------------------------------------------------------------------------------
probe(out err ENV CUSNAP_EMU_TIMEOUT=1 ARGS timeout)
require_match("${err}" "kernel forever ran longer than the launch time limit of 1 s \\(CUSNAP_EMU_TIMEOUT\\): block \\(0,0,0\\), warp 0 at PTX line [0-9]+ was still running"
              "timeout message")
require_match("${err}" "failed \\(702\\)" "timeout error code")
probe(out err ENV CUSNAP_EMU_TIMEOUT=0.5 CUSNAP_EMU_THREADS=3 ARGS timeout)
require_match("${err}" "limit of 0.5 s" "fractional timeout")
foreach(threads 1 4)
  probe(out err ENV CUSNAP_EMU_TIMEOUT=1 CUSNAP_EMU_THREADS=${threads} ARGS spin)
  require_match("${err}" "kernel spin ran longer than the launch time limit of 1 s[^\n]*block \\(0,0,0\\)" "spin message")
  require_match("${err}" "one at a time in block-index order because of ordered load 'ld.volatile.global'" "spin reason")
endforeach()
# A few tenths of a second of interpretation (a 2-core build machine): far below the limit,
# far above what a limit misread as milliseconds (20 ms) would allow.
probe(out err ENV CUSNAP_EMU_TIMEOUT=20 ARGS finite 5000000)
probe(out err ARGS attribute)
require_match("${out}" "^1\n$" "KERNEL_EXEC_TIMEOUT with the default watchdog")
probe(out err ENV CUSNAP_EMU_TIMEOUT=0 ARGS attribute)
require_match("${out}" "^0\n$" "KERNEL_EXEC_TIMEOUT with CUSNAP_EMU_TIMEOUT=0")
probe(out err ENV CUSNAP_EMU_TIMEOUT=-3 ARGS attribute)
require_match("${err}" "CUSNAP_EMU_TIMEOUT=-3 is not a number of seconds" "invalid timeout warning")
require_match("${out}" "^1\n$" "KERNEL_EXEC_TIMEOUT after an invalid CUSNAP_EMU_TIMEOUT")

# ---- redzones ------------------------------------------------------------------------------
probe(out err ARGS redzone 256)
probe(out err ENV CUSNAP_EMU_REDZONE=65536 ARGS redzone 65536)
probe(out err ENV CUSNAP_EMU_REDZONE=0 ARGS redzone 0)
probe(out err ENV CUSNAP_EMU_REDZONE=lots ARGS redzone 256)
require_match("${err}" "CUSNAP_EMU_REDZONE=lots is not a byte count" "invalid redzone warning")

message(STATUS "emulator environment: deterministic across CUSNAP_EMU_THREADS, watchdog and redzones as documented")

# interceptor.threads: samples/multi_thread captured several times (thread interleavings differ
# from run to run), each capture checked for a consistent call order and replayed.
# Arguments (-D): SAMPLE CUSNAP INSPECT_THREADS EMULATOR OUT_DIR THREADS LAUNCHES SYNC_EVERY RUNS
# (SYNC_EVERY: the threads also synchronise their streams every so many launches, so that their
# calls interleave more finely.)
# Per run:
#  1. `cusnap capture --driver emulator` of the sample with CUSNAP_EMU_STATS: exit 0, PASSED;
#  2. inspect_threads: seq gap-free in file order, each thread's calls in the order it made them,
#     each stream's copies and launches in issue order (see inspect_threads.cpp);
#  3. `cusnap verify` says whole (exit 0);
#  4. the launches the emulator counted itself = THREADS * LAUNCHES = `cusnap info` launches;
#  5. `cusnap replay` on the emulator: exit 0, every device-to-host copy (one per thread)
#     verified against the checksum captured from the application's memory.
math(EXPR expected_launches "${THREADS} * ${LAUNCHES}")
foreach(run RANGE 1 ${RUNS})
  set(capture ${OUT_DIR}/threads-${run}.cusnap)
  set(stats ${OUT_DIR}/threads-${run}.stats.json)
  set(report ${OUT_DIR}/threads-${run}.replay.json)
  file(REMOVE ${capture} ${stats} ${report})

  set(ENV{CUSNAP_EMU_STATS} "${stats}")
  execute_process(COMMAND ${CUSNAP} capture --driver emulator --force-overwrite -o ${capture}
                          -- ${SAMPLE} --threads ${THREADS} --launches ${LAUNCHES} --sync-every ${SYNC_EVERY}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  unset(ENV{CUSNAP_EMU_STATS})
  if(NOT rc EQUAL 0 OR NOT out MATCHES "PASSED")
    message(FATAL_ERROR "run ${run}: the sample failed under capture (exit ${rc}):\n${out}${err}")
  endif()

  execute_process(COMMAND ${INSPECT_THREADS} ${capture} ${THREADS} ${LAUNCHES}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("run ${run}: ${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "run ${run}: the capture's call order is inconsistent (inspect_threads exit ${rc})")
  endif()
  if(run EQUAL 1)
    # The checker must be able to fail: the same capture against a wrong expectation.
    math(EXPR fewer "${LAUNCHES} - 1")
    math(EXPR more_threads "${THREADS} + 1")
    foreach(wrong "${THREADS};${fewer}" "${more_threads};${LAUNCHES}")
      execute_process(COMMAND ${INSPECT_THREADS} ${capture} ${wrong} RESULT_VARIABLE rc OUTPUT_VARIABLE out)
      if(NOT rc EQUAL 1 OR NOT out MATCHES "ORDER VIOLATION")
        message(FATAL_ERROR "inspect_threads accepted a wrong expectation (${wrong}): exit ${rc}\n${out}")
      endif()
    endforeach()
  endif()

  execute_process(COMMAND ${CUSNAP} verify ${capture} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "run ${run}: cusnap verify exit ${rc}:\n${out}${err}")
  endif()

  file(READ ${stats} stats_json)
  string(JSON emulated GET "${stats_json}" launches total)
  execute_process(COMMAND ${CUSNAP} info --json ${capture} RESULT_VARIABLE rc OUTPUT_VARIABLE info_json)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "run ${run}: cusnap info --json exit ${rc}")
  endif()
  string(JSON captured GET "${info_json}" counts launches)
  if(NOT emulated EQUAL expected_launches OR NOT captured EQUAL expected_launches)
    message(FATAL_ERROR "run ${run}: ${expected_launches} launches made, the emulator counted ${emulated}, "
                        "the capture holds ${captured}")
  endif()

  execute_process(COMMAND ${CUSNAP} replay ${capture} --driver ${EMULATOR} --progress off --report ${report}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "run ${run}: replay exit ${rc}:\n${out}${err}")
  endif()
  file(READ ${report} report_json)
  string(JSON matched GET "${report_json}" verification matched)
  string(JSON unverified GET "${report_json}" verification unverified)
  if(NOT matched EQUAL THREADS OR NOT unverified EQUAL 0)
    message(FATAL_ERROR "run ${run}: replay verified ${matched} device-to-host copies (expected ${THREADS}), "
                        "${unverified} unverified")
  endif()
  message("run ${run}: ${captured} launches captured and emulated, ${matched} copies verified on replay")
endforeach()

# Capture one sample on the emulator through the interceptor, replay it twice on the emulator.
# Inputs: SAMPLE, REPLAY, EMULATOR, INTERCEPTOR_DIR, WORK, NOTHING_SKIPPED (optional).
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(capture ${WORK}/capture.cusnap)
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env
          LD_LIBRARY_PATH=${INTERCEPTOR_DIR}
          CUSNAP_CAPTURE_OUTPUT=${capture}
          CUSNAP_FORCE_OVERWRITE=1
          CUSNAP_REAL_DRIVER=${EMULATOR}
          ${SAMPLE}
  WORKING_DIRECTORY ${WORK}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the sample failed under capture (exit ${rc}):\n${out}\n${err}")
endif()
if(NOT EXISTS ${capture})
  message(FATAL_ERROR "no capture written:\n${err}")
endif()

foreach(run 1 2)
  execute_process(COMMAND ${REPLAY} replay ${capture} --driver ${EMULATOR} --progress off
                          --report ${WORK}/report${run}.json
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "replay ${run}:\n${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "replay ${run} exit ${rc}")
  endif()
  file(READ ${WORK}/report${run}.json report)
  string(JSON verification${run} GET "${report}" verification)
  string(JSON matched GET "${report}" verification matched)
  string(JSON unverified GET "${report}" verification unverified)
  if(matched EQUAL 0)
    message(FATAL_ERROR "replay ${run}: no device-to-host copy was verified (${unverified} unverified)")
  endif()
  # Every device-to-host copy of a sample has a checksum (synchronous at the call, asynchronous
  # through a deferredResult record): an unverified one means the capture or the plan lost it.
  if(NOT unverified EQUAL 0)
    message(FATAL_ERROR "replay ${run}: ${unverified} device-to-host copies could not be verified")
  endif()
  # NOTHING_SKIPPED (texture, surface): no warning, and no copy, array, object or unmodelled
  # call of what the sample does left out of the replay.
  if(NOTHING_SKIPPED)
    string(JSON warnings GET "${report}" warnings)
    if(NOT warnings MATCHES "^\\[[ \n]*\\]$")
      message(FATAL_ERROR "replay ${run} warned: ${warnings}")
    endif()
    string(JSON skipped GET "${report}" skipped)
    if(skipped MATCHES "\"(memcpy|array|texObject|launch|generic cu(Array|Tex|Surf|Mipmapped|Memcpy|Launch))[^\"]*\"")
      message(FATAL_ERROR "replay ${run} skipped ${CMAKE_MATCH_0}: ${skipped}")
    endif()
  endif()
endforeach()
if(NOT verification1 STREQUAL verification2)
  message(FATAL_ERROR "the two replays disagree:\n${verification1}\n---\n${verification2}")
endif()

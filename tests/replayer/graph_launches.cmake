# A captured graph launched 10,000 times (graph_capture --size 10000): the capture holds a small
# record per launch naming the executable graph, never a copy of the graph (checked by record
# kinds and by the file size), and the replay runs 10,000 graph launches with every memcpy-node
# checksum verified. Arguments (-D): SAMPLE REPLAY EMULATOR INTERCEPTOR_DIR WORK
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(launches 10000)
set(capture ${WORK}/graph.cusnap)
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${INTERCEPTOR_DIR} CUSNAP_CAPTURE_OUTPUT=${capture}
          CUSNAP_FORCE_OVERWRITE=1 CUSNAP_REAL_DRIVER=${EMULATOR} ${SAMPLE} --size ${launches}
  WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "PASSED")
  message(FATAL_ERROR "the sample failed under capture (exit ${rc}):\n${out}\n${err}")
endif()

execute_process(COMMAND ${REPLAY} info --json ${capture} RESULT_VARIABLE rc OUTPUT_VARIABLE info)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cusnap info failed (rc ${rc})")
endif()
function(kind_count json kind out)
  string(JSON n LENGTH "${json}" callKinds)
  math(EXPR last "${n} - 1")
  set(count 0)
  foreach(i RANGE ${last})
    string(JSON k GET "${json}" callKinds ${i} kind)
    if(k STREQUAL kind)
      string(JSON count GET "${json}" callKinds ${i} count)
    endif()
  endforeach()
  set(${out} ${count} PARENT_SCOPE)
endfunction()
kind_count("${info}" graphExec exec_records)
kind_count("${info}" graphNode node_records)
kind_count("${info}" deferredResult deferred_records)
# instantiate + every launch + destroy; the graph's three nodes once.
math(EXPR expected_exec "${launches} + 2")
if(NOT exec_records EQUAL expected_exec OR NOT node_records EQUAL 3)
  message(FATAL_ERROR "graphExec records ${exec_records} (expected ${expected_exec}), "
                      "graphNode records ${node_records} (expected 3)")
endif()
if(NOT deferred_records EQUAL launches)
  message(FATAL_ERROR "${deferred_records} memcpy-node checksums for ${launches} graph launches")
endif()
string(JSON may_diverge GET "${info}" replayMayDiverge)
if(may_diverge)
  message(FATAL_ERROR "cusnap info says the replay may diverge:\n${info}")
endif()
# A launch record and its checksum record cost a few dozen bytes compressed; one copy of the
# graph's three node records alone is several hundred bytes uncompressed.
string(JSON file_bytes GET "${info}" fileBytes)
math(EXPR limit "${launches} * 40")
message(STATUS "${launches} graph launches: ${file_bytes} bytes (limit ${limit})")
if(file_bytes GREATER limit)
  message(FATAL_ERROR "the capture is ${file_bytes} bytes for ${launches} graph launches "
                      "(more than ${limit}: more than a small record per launch)")
endif()

execute_process(COMMAND ${REPLAY} replay ${capture} --driver ${EMULATOR} --progress off
                        --report ${WORK}/report.json
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "replay:\n${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "replay exit ${rc}")
endif()
file(READ ${WORK}/report.json report)
string(JSON matched GET "${report}" verification matched)
string(JSON mismatched GET "${report}" verification mismatched)
string(JSON unverified GET "${report}" verification unverified)
math(EXPR expected_matched "${launches} + 1")  # every launch's copy node, then the final copy
if(NOT matched EQUAL expected_matched OR NOT mismatched EQUAL 0 OR NOT unverified EQUAL 0)
  message(FATAL_ERROR "verification: ${matched} matched (expected ${expected_matched}), "
                      "${mismatched} mismatched, ${unverified} unverified")
endif()
string(JSON report_launches LENGTH "${report}" launches)
math(EXPR expected_launches "${launches} * 2")  # two kernel nodes per graph launch
if(NOT report_launches EQUAL expected_launches)
  message(FATAL_ERROR "the report lists ${report_launches} launches, expected ${expected_launches}")
endif()

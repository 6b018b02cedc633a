# Capture one sample on the emulator through the interceptor, replay it twice on the emulator
# (streams concurrent, as captured), then once with --serialize (all work on one stream, in
# capture order): all three must verify alike. NOTHING_SKIPPED=ON: nothing with device work may
# be skipped: the report's `skipped` may only count records that carry none (the context the
# replay runs in, cuInit/cuDeviceGet, deferred results already folded into their copies).
# NO_WARNINGS=ON: the replay warns about nothing (arrays, textures and surfaces are replayed whole)
# and `cusnap info` finds no unmodelled call.
# GRAPH_NODES=ON (samples with graphs): one more replay with --graph-timing nodes must verify
# alike, list the same launches (kernel, graph node, graph launch) in the same order, and time
# every kernel node the graph replays left untimed.
# REPLAY_ENV (optional, VAR=VALUE): the replays' environment differs from the capture's by it,
# e.g. another CUSNAP_EMU_TENSOR_MAP_KEY: a driver whose tensor-map encoding is not the
# capturing one's, so a replay passes only by encoding the maps again.
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

# NO_WARNINGS: `cusnap info` models every call too (nothing on stderr, replay may not diverge).
if(NO_WARNINGS)
  execute_process(COMMAND ${REPLAY} info --json ${capture}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE info ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT err STREQUAL "")
    message(FATAL_ERROR "cusnap info failed or warned (exit ${rc}):\n${err}")
  endif()
  string(JSON diverge GET "${info}" replayMayDiverge)
  if(diverge)
    string(JSON unmodelled GET "${info}" unmodelledCalls)
    message(FATAL_ERROR "cusnap info: replay may diverge: ${unmodelled}")
  endif()
endif()

set(runs 1 2 serialized)
if(GRAPH_NODES)
  list(APPEND runs nodes)
endif()
foreach(run IN LISTS runs)
  set(mode)
  set(want_serialize OFF)
  if(run STREQUAL "serialized")
    set(mode --serialize)
    set(want_serialize ON)
  elseif(run STREQUAL "nodes")
    set(mode --graph-timing nodes)
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ${REPLAY_ENV}
                          ${REPLAY} replay ${capture} --driver ${EMULATOR} --progress off
                          --report ${WORK}/report${run}.json ${mode}
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
  string(JSON serialize GET "${report}" options serialize)
  if(NOT serialize STREQUAL want_serialize)
    message(FATAL_ERROR "replay ${run}: the report says serialize=${serialize}")
  endif()
  if(NO_WARNINGS)
    string(JSON warnings GET "${report}" warnings)
    if(NOT warnings MATCHES "^\\[[ \n]*\\]$")
      message(FATAL_ERROR "replay ${run} warned: ${warnings}")
    endif()
  endif()
  if(NOTHING_SKIPPED)
    set(no_device_work contextSetCurrent primaryContext deferredResult "generic cuInit"
        "generic cuDeviceGet")
    string(JSON skipped GET "${report}" skipped)
    string(JSON skipped_kinds LENGTH "${report}" skipped)
    if(skipped_kinds GREATER 0)
      math(EXPR last "${skipped_kinds} - 1")
      foreach(i RANGE ${last})
        string(JSON kind MEMBER "${report}" skipped ${i})
        list(FIND no_device_work "${kind}" known)
        if(known EQUAL -1)
          message(FATAL_ERROR "replay ${run}: '${kind}' records were skipped: ${skipped}")
        endif()
      endforeach()
    endif()
  endif()
endforeach()
if(NOT verification1 STREQUAL verification2)
  message(FATAL_ERROR "the two replays disagree:\n${verification1}\n---\n${verification2}")
endif()
if(NOT verification1 STREQUAL verificationserialized)
  message(FATAL_ERROR "the concurrent and the --serialize replay disagree:\n${verification1}\n"
                      "---\n${verificationserialized}")
endif()

if(GRAPH_NODES)
  if(NOT verification1 STREQUAL verificationnodes)
    message(FATAL_ERROR "the graph and the --graph-timing nodes replay disagree:\n"
                        "${verification1}\n---\n${verificationnodes}")
  endif()
  file(READ ${WORK}/report1.json graph_report)
  file(READ ${WORK}/reportnodes.json nodes_report)
  string(JSON timing GET "${nodes_report}" options graph_timing)
  if(NOT timing STREQUAL "nodes")
    message(FATAL_ERROR "the nodes replay's report says graph_timing=${timing}")
  endif()
  string(JSON count LENGTH "${graph_report}" launches)
  string(JSON nodes_count LENGTH "${nodes_report}" launches)
  if(NOT count EQUAL nodes_count)
    message(FATAL_ERROR "${count} launches replaying graphs, ${nodes_count} node by node")
  endif()
  set(node_launches 0)
  math(EXPR last "${count} - 1")
  foreach(i RANGE ${last})
    foreach(field call kernel graph_node graph_launch)
      string(JSON a GET "${graph_report}" launches ${i} ${field})
      string(JSON b GET "${nodes_report}" launches ${i} ${field})
      if(NOT a STREQUAL b)
        message(FATAL_ERROR "launch ${i}: ${field} ${a} replaying graphs, ${b} node by node")
      endif()
    endforeach()
    string(JSON node GET "${nodes_report}" launches ${i} graph_node)
    if(NOT node STREQUAL "null" AND NOT node STREQUAL "")
      math(EXPR node_launches "${node_launches} + 1")
      string(JSON graph_time GET "${graph_report}" launches ${i} time_ms)
      string(JSON nodes_time TYPE "${nodes_report}" launches ${i} time_ms)
      if(NOT graph_time STREQUAL "null" AND NOT graph_time STREQUAL "")
        message(FATAL_ERROR "launch ${i}: a kernel node timed in a graph replay: ${graph_time}")
      endif()
      if(NOT nodes_time STREQUAL "OBJECT")
        message(FATAL_ERROR "launch ${i}: kernel node ${node} not timed node by node")
      endif()
    endif()
  endforeach()
  if(node_launches EQUAL 0)
    message(FATAL_ERROR "no kernel node among the launches of a graph sample")
  endif()
  message(STATUS "${node_launches} kernel-node launches, each timed node by node")
endif()

# extract.graph.<sample>: kernels that run inside CUDA graphs, extracted one kernel node at a time
# (docs/extract.md, "Kernels in graphs"), end to end on a real program.
# The sample is captured through the interceptor on the emulator (launch records get snapshots;
# kernel nodes never do). Then:
# 1. `cusnap replay --kernel-name regex:.` lists every launch the replay runs, kernel nodes of
#    graph launches included, in its order (the report's launches).
# 2. `cusnap extract --kernel-name regex:.` (route auto: kernel nodes by the replay route) must
#    write exactly that many extracts, each naming the same call as the report's launch of the
#    same rank, and at least one of them a kernel node ("kernel node K").
# 3. Each extract replayed alone on the emulator: every snapshot chunk matches.
# 4. Selection counts kernel nodes as the replay does: --launch-skip I --launch-count 1, for the
#    first kernel node I of the report, extracts that node (same call, same place in its launch,
#    and `cusnap info` names it as a kernel node of that graph launch).
# 5. --route snapshots refuses kernel nodes, saying why (no capture snapshots them).
# 6. The --emit-cpp reproducer of every extract of step 2 (reproducers.cmake): built with the
#    toolkit, each run on the emulator reports MATCH; a kernel node's manifest names the node.
# Inputs: SAMPLE, CUSNAP, EMULATOR, EMULATOR_DIR, INTERCEPTOR_DIR, XXH3_TEMPLATE, CUDA_ROOT,
# GENERATOR, CXX, WORK.
include(${CMAKE_CURRENT_LIST_DIR}/reproducers.cmake)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK} ${WORK}/launches ${WORK}/one)
set(ENV{CUSNAP_INTERCEPTOR_DIR} ${INTERCEPTOR_DIR})
execute_process(COMMAND ${CUSNAP} capture --driver ${EMULATOR} --snapshot-kernels regex:.
                        --snapshot-outputs --force-overwrite -o ${WORK}/capture.cusnap -- ${SAMPLE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "capture failed (rc ${rc}):\n${out}\n${err}")
endif()

# 1. What the replay runs.
execute_process(COMMAND ${CUSNAP} replay --driver ${EMULATOR} --progress off
                        --kernel-name regex:. --report ${WORK}/replay.json ${WORK}/capture.cusnap
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "replay failed (rc ${rc}):\n${out}\n${err}")
endif()
file(READ ${WORK}/replay.json report)
string(JSON launches LENGTH "${report}" launches)
set(calls "")
set(places "")  # per launch: its place among the launches of the same call
set(first_node -1)
set(previous_call -1)
set(place 0)
math(EXPR last "${launches} - 1")
foreach(i RANGE ${last})
  string(JSON call GET "${report}" launches ${i} call)
  string(JSON node ERROR_VARIABLE no_node GET "${report}" launches ${i} graph_node)
  if(call EQUAL previous_call)
    math(EXPR place "${place} + 1")
  else()
    set(place 0)
  endif()
  set(previous_call ${call})
  list(APPEND calls ${call})
  list(APPEND places ${place})
  if(first_node EQUAL -1 AND NOT no_node AND NOT node STREQUAL "")
    set(first_node ${i})
  endif()
endforeach()
if(first_node EQUAL -1)
  message(FATAL_ERROR "the replay ran no kernel node: nothing to test\n${report}")
endif()

# 2. Every launch extracted, in the same order.
execute_process(COMMAND ${CUSNAP} extract ${WORK}/capture.cusnap --kernel-name regex:.
                        --driver ${EMULATOR} -o ${WORK}/launches/call-%n.cusnap
                        --emit-cpp ${WORK}/repro/call-%n
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "extract failed (rc ${rc}):\n${out}\n${err}")
endif()
reproducer_dirs(reproducers "${out}")
string(REGEX MATCHALL "(^|\n)call [0-9]+ [^\n]*\\.cusnap," lines "${out}")
list(LENGTH lines written)
if(NOT written EQUAL launches)
  message(FATAL_ERROR "extract wrote ${written} captures, the replay ran ${launches} launches:\n${out}\n${err}")
endif()
set(i 0)
set(nodes 0)
foreach(line IN LISTS lines)
  string(REGEX REPLACE "^\n?call ([0-9]+) .*" "\\1" call "${line}")
  list(GET calls ${i} expected)
  if(NOT call EQUAL expected)
    message(FATAL_ERROR "extract #${i} is of call ${call}, the replay's launch #${i} of call ${expected}:\n${out}")
  endif()
  if(line MATCHES "kernel node ([0-9]+) ")
    list(GET places ${i} expected_place)
    if(NOT CMAKE_MATCH_1 EQUAL expected_place)
      message(FATAL_ERROR "extract #${i} is kernel node ${CMAKE_MATCH_1}, the replay's launch #${i} is #${expected_place} of its graph launch:\n${out}")
    endif()
    math(EXPR nodes "${nodes} + 1")
  endif()
  math(EXPR i "${i} + 1")
endforeach()
if(nodes EQUAL 0)
  message(FATAL_ERROR "no extract is a kernel node:\n${out}")
endif()

# 3. Each replayed alone.
file(GLOB extracted ${WORK}/launches/*.cusnap)
foreach(file IN LISTS extracted)
  execute_process(COMMAND ${CUSNAP} replay --driver ${EMULATOR} --progress off ${file}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "snapshot chunk\\(s\\) compared, all match")
    message(FATAL_ERROR "standalone replay of ${file} (rc ${rc}):\n${out}\n${err}")
  endif()
endforeach()

# 4. --launch-skip counts kernel nodes as the replay does.
list(GET calls ${first_node} node_call)
list(GET places ${first_node} node_place)
execute_process(COMMAND ${CUSNAP} extract ${WORK}/capture.cusnap --kernel-name regex:.
                        --launch-skip ${first_node} --launch-count 1 --driver ${EMULATOR}
                        -o ${WORK}/one/node.cusnap
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "^call ${node_call} kernel node ${node_place} ")
  message(FATAL_ERROR "--launch-skip ${first_node} should extract kernel node ${node_place} of call ${node_call} (rc ${rc}):\n${out}\n${err}")
endif()
execute_process(COMMAND ${CUSNAP} info ${WORK}/one/node.cusnap
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "\\(call ${node_call}, kernel node ${node_place} of that graph launch\\)")
  message(FATAL_ERROR "cusnap info does not name the kernel node (rc ${rc}):\n${out}\n${err}")
endif()

# 5. The snapshot route has nothing for kernel nodes.
execute_process(COMMAND ${CUSNAP} extract ${WORK}/capture.cusnap --call ${node_call}
                        --route snapshots -o ${WORK}/one/refused-%n.cusnap
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(GLOB refused ${WORK}/one/refused-*.cusnap)
if(rc EQUAL 0 OR refused OR NOT err MATCHES "kernel node of a graph launch, and a capture takes no snapshots")
  message(FATAL_ERROR "--route snapshots did not refuse the kernel nodes (rc ${rc}):\n${out}\n${err}")
endif()

# 6. The reproducers, built once and run on each extract's directory.
list(LENGTH reproducers count)
if(NOT count EQUAL launches)
  message(FATAL_ERROR "extract wrote ${count} reproducers for ${launches} launches")
endif()
list(GET reproducers 0 first)
build_reproducer(${first} ${WORK}/build program)
set(node_manifests 0)
foreach(dir IN LISTS reproducers)
  run_reproducer(${program} ${first} ${dir})
  file(STRINGS ${dir}/manifest.txt origin REGEX "^# Extracted from .*kernel node [0-9]+ of that graph launch")
  if(origin)
    math(EXPR node_manifests "${node_manifests} + 1")
  endif()
endforeach()
if(NOT node_manifests EQUAL nodes)
  message(FATAL_ERROR "${node_manifests} reproducer manifests name a kernel node, ${nodes} extracts are kernel nodes")
endif()
message(STATUS "${launches} launches (${nodes} kernel nodes) extracted and replayed alone, all match; "
               "their ${count} reproducers report MATCH")

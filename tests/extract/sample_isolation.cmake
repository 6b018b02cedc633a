# extract.sample.<sample>: the whole isolation path on a real program, end to end.
# The sample is captured through the interceptor on the emulator with a snapshot around every
# launch (--snapshot-outputs, so expected chunks hold their bytes), every launch is extracted,
# and each extracted capture is replayed alone on the emulator: every one must report that all
# its snapshot chunks match. A launch may be refused only because other device work overlapped
# it at capture time (its memory was not the launch's alone, so the interceptor recorded no
# snapshot); at least one launch must be extracted unless OVERLAP_ONLY is set (multi_thread,
# whose threads are always busy at once). With STICKY_REFUSAL (device_assert) a launch may also
# be refused because its snapshot failed on the sticky CUDA_ERROR_ASSERT (710) it raised on
# purpose.
# Then the prefix replay route (docs/extract.md): every launch extracted again by --route replay
# from the same capture must have the same content as its snapshot-route extract, exactly
# (COMPARE, compare.h); and every launch extracted from a capture made without snapshots (route
# auto replays) the same content up to addresses and handles, which differ between two runs
# (COMPARE --map; matched by launch ordinal). OVERLAP_ONLY samples run threads at once: their
# launch order differs between runs, so only the same-capture comparison is made there, and the
# replay-route extracts without a snapshot-route twin are replayed alone instead. Host memory
# (pinned, mapped, registered: saxpy_streams, multi_thread) is in snapshot-route extracts only:
# what host code wrote there is in no record, so the replay route leaves it out (with a note),
# and the comparison leaves it out of the snapshot-route side (--host-memory-only-in-first).
# Module variables the application never looked up are in both: snapshots taken at capture time
# cover them (the interceptor resolves them, globalGet byTool), and the replay route of a capture
# without snapshots looks up on its driver every variable of the launch's module image that no
# record names, and writes the same byTool records (module_vars: a __constant__ table only its
# initializer sets, a __device__ counter only a kernel writes). Both comparisons are in full.
# REPLAY_ENV (optional, VAR=VALUE): every replay (standalone, and the replay route's prefix
# replay) runs with it, e.g. another CUSNAP_EMU_TENSOR_MAP_KEY than the capture's, so that only
# tensor maps encoded again on the replay's driver load.
# With ARRAYS (texture, surface, texture_refs) every launch reaches a CUDA array, through a
# texture/surface object or a legacy reference of its module, whose contents no capture-time
# snapshot holds (docs/extract.md, "Textures and surfaces"): the snapshot route must refuse each
# launch, saying so, and the replay route extract it, with each array filled before the launch
# and checked after it; each such extract replayed alone must match, the arrays' checks among
# its verified copies; the array bytes the replay read must agree with what the interceptor
# recorded of the application's own array copies; and the extracts of a capture without
# snapshots must have the same content as the same capture's (COMPARE --map).
# Inputs: SAMPLE, CUSNAP, EMULATOR, INTERCEPTOR_DIR, COMPARE, WORK, OVERLAP_ONLY, STICKY_REFUSAL,
# ARRAYS, REPLAY_ENV.
include(${CMAKE_CURRENT_LIST_DIR}/sample_refusals.cmake)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK} ${WORK}/launches ${WORK}/replayed ${WORK}/plain)
set(ENV{CUSNAP_INTERCEPTOR_DIR} ${INTERCEPTOR_DIR})
execute_process(COMMAND ${CUSNAP} capture --driver ${EMULATOR} --snapshot-kernels regex:.
                        --snapshot-outputs --force-overwrite -o ${WORK}/capture.cusnap -- ${SAMPLE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "capture failed (rc ${rc}):\n${out}\n${err}")
endif()
execute_process(COMMAND ${CUSNAP} extract ${WORK}/capture.cusnap --kernel-name regex:.
                        --route snapshots -o ${WORK}/launches/call-%n.cusnap
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(snapshot_out "${out}")
if(ARRAYS)
  # The snapshot route has no array contents: every launch refused, saying which route has.
  file(GLOB extracted ${WORK}/launches/*.cusnap)
  string(REGEX MATCHALL "cannot be extracted: it reads or writes CUDA array 0x[0-9a-f]+ \\((texture|surface) (object 0x[0-9a-f]+ over CUDA array 0x[0-9a-f]+|reference '[^']+')\\), and capture-time snapshots do not hold array contents \\(--route auto or replay extracts it\\)"
         refusals "${err}")
  if(rc EQUAL 0 OR extracted OR NOT refusals)
    message(FATAL_ERROR "--route snapshots did not refuse the launches over CUDA arrays (rc ${rc}):\n${out}\n${err}")
  endif()
  set(snapshot_out "")
  set(rc 0)
endif()
check_extract_refusals(${rc} "${out}" "${err}")
file(GLOB extracted ${WORK}/launches/*.cusnap)
list(LENGTH extracted count)
if(count EQUAL 0 AND NOT OVERLAP_ONLY AND NOT ARRAYS)
  message(FATAL_ERROR "extract wrote no capture:\n${out}\n${err}")
endif()
set(matched 0)
foreach(file IN LISTS extracted)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ${REPLAY_ENV} ${CUSNAP} replay --driver ${EMULATOR} --progress off ${file}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "snapshot chunk\\(s\\) compared, all match")
    message(FATAL_ERROR "standalone replay of ${file} (rc ${rc}):\n${out}\n${err}")
  endif()
  math(EXPR matched "${matched} + 1")
endforeach()
message(STATUS "${matched} of ${count} extracted launches replayed alone, all chunks match")

# "call SEQ (launch ORDINAL, NAME): PATH, ..." lines of `cusnap extract` -> ORDINAL;PATH pairs.
function(extracted_by_ordinal text prefix)
  string(REGEX MATCHALL "call [0-9]+ \\(launch [0-9]+, [^\n]*\\): [^,\n]*\\.cusnap," lines
         "${text}")
  set(ordinals "")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^call [0-9]+ \\(launch ([0-9]+), .*\\): (.*\\.cusnap),$" "\\1"
           ordinal "${line}")
    string(REGEX REPLACE "^call [0-9]+ \\(launch ([0-9]+), .*\\): (.*\\.cusnap),$" "\\2"
           path "${line}")
    set(${prefix}_${ordinal} "${path}" PARENT_SCOPE)
    list(APPEND ordinals ${ordinal})
  endforeach()
  set(${prefix}_ordinals "${ordinals}" PARENT_SCOPE)
endfunction()
extracted_by_ordinal("${snapshot_out}" snap)

# The replay route from the same capture (its snapshots are verified on the way).
execute_process(COMMAND ${CMAKE_COMMAND} -E env ${REPLAY_ENV}
                        ${CUSNAP} extract ${WORK}/capture.cusnap --kernel-name regex:.
                        --kernel-name-base mangled --route replay --driver ${EMULATOR}
                        -o ${WORK}/replayed/call-%n.cusnap
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
# STICKY_REFUSAL: the prefix replay ends at the launch that asserts on purpose (exit 1, naming
# the error); the launches before it are written.
if(NOT rc EQUAL 0 AND NOT (STICKY_REFUSAL AND rc EQUAL 1 AND err MATCHES "device assert"))
  message(FATAL_ERROR "extract --route replay failed (rc ${rc}):\n${out}\n${err}")
endif()
extracted_by_ordinal("${out}" same)
list(LENGTH same_ordinals same_count)
if(same_count EQUAL 0)
  message(FATAL_ERROR "extract --route replay wrote no capture:\n${out}\n${err}")
endif()
set(compared 0)
set(alone 0)
foreach(ordinal IN LISTS same_ordinals)
  if(DEFINED snap_${ordinal})
    execute_process(COMMAND ${COMPARE} --host-memory-only-in-first
                            ${snap_${ordinal}} ${same_${ordinal}}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE cmp ERROR_VARIABLE cerr)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "launch ${ordinal}, snapshot route vs replay route:\n${cmp}${cerr}")
    endif()
    math(EXPR compared "${compared} + 1")
  else()
    execute_process(COMMAND ${CMAKE_COMMAND} -E env ${REPLAY_ENV} ${CUSNAP} replay --driver ${EMULATOR} --progress off
                            ${same_${ordinal}}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE rout ERROR_VARIABLE rerr)
    if(NOT rc EQUAL 0 OR NOT rout MATCHES "snapshot chunk\\(s\\) compared, all match")
      message(FATAL_ERROR "standalone replay of ${same_${ordinal}} (rc ${rc}):\n${rout}\n${rerr}")
    endif()
    # The array's after-state is an array-to-host copy with its checksum: verified.
    if(ARRAYS AND NOT rout MATCHES "\nverify +[1-9][0-9]* matched, 0 mismatched")
      message(FATAL_ERROR "standalone replay of ${same_${ordinal}} verified no array:\n${rout}")
    endif()
    math(EXPR alone "${alone} + 1")
  endif()
endforeach()
message(STATUS "route replay, same capture: ${compared} identical to the snapshot route, "
               "${alone} without a twin replayed alone, all match")
if(ARRAYS)
  # What the replay read from the arrays against what the interceptor recorded of the
  # application's own array copies: some fill of each extract is the bytes the application
  # copied into that array (a texture's), or some check the checksum of the application's copy
  # out of it after the kernels (a surface's).
  # Per array copy line: a copy out of the array by its hostChecksum, one into it by its payload.
  function(array_copy_values out_var text line_regex)
    string(REGEX MATCHALL "${line_regex}[^\n]*" lines "${text}")
    set(values "")
    foreach(line IN LISTS lines)
      if(line MATCHES "hostChecksum=(0x[0-9a-f]+)")
        list(APPEND values "checksum ${CMAKE_MATCH_1}")
      elseif(line MATCHES "payload=([0-9a-f]+)")
        list(APPEND values "payload ${CMAKE_MATCH_1}")
      endif()
    endforeach()
    set(${out_var} "${values}" PARENT_SCOPE)
  endfunction()
  execute_process(COMMAND ${CUSNAP} dump ${WORK}/capture.cusnap OUTPUT_VARIABLE dump RESULT_VARIABLE rc)
  array_copy_values(app "${dump}" "cuMemcpy[^ ]* +CUDA_SUCCESS +memcpy kind=arrayInvolved ")
  set(agreeing 0)
  foreach(ordinal IN LISTS same_ordinals)
    execute_process(COMMAND ${CUSNAP} dump ${same_${ordinal}} OUTPUT_VARIABLE x RESULT_VARIABLE rc)
    array_copy_values(ours "${x}" "cusnap +CUDA_SUCCESS +memcpy kind=arrayInvolved ")
    list(LENGTH ours n)
    math(EXPR odd "${n} % 2")
    if(n EQUAL 0 OR odd)
      message(FATAL_ERROR "${same_${ordinal}}: expected a fill and a check of each array:\n${x}")
    endif()
    set(agrees OFF)
    foreach(value IN LISTS ours)
      list(FIND app "${value}" at)
      if(NOT at EQUAL -1)
        set(agrees ON)
      endif()
    endforeach()
    if(NOT agrees)
      message(FATAL_ERROR "${same_${ordinal}}: neither its array's fill nor its check (${ours}) is "
                          "what the application's own array copies recorded (${app})")
    endif()
    math(EXPR agreeing "${agreeing} + 1")
  endforeach()
  message(STATUS "${agreeing} extracts' arrays agree with the application's array copies")
endif()
if(OVERLAP_ONLY)
  return()
endif()

# A capture without snapshots: route auto replays it.
execute_process(COMMAND ${CUSNAP} capture --driver ${EMULATOR} --force-overwrite
                        -o ${WORK}/plain.cusnap -- ${SAMPLE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "capture without snapshots failed (rc ${rc}):\n${out}\n${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env ${REPLAY_ENV}
                        ${CUSNAP} extract ${WORK}/plain.cusnap --kernel-name regex:.
                        --driver ${EMULATOR} -o ${WORK}/plain/call-%n.cusnap
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 AND NOT (STICKY_REFUSAL AND rc EQUAL 1 AND err MATCHES "device assert"))
  message(FATAL_ERROR "extract of the capture without snapshots failed (rc ${rc}):\n${out}\n${err}")
endif()
extracted_by_ordinal("${out}" plain)
set(compared 0)
# The twins: the snapshot route's extracts, or with ARRAYS (none there) the replay route's.
set(twin snap)
if(ARRAYS)
  set(twin same)
endif()
foreach(ordinal IN LISTS ${twin}_ordinals)
  if(NOT DEFINED plain_${ordinal})
    message(FATAL_ERROR "launch ${ordinal} was not extracted from the capture without snapshots")
  endif()
  execute_process(COMMAND ${COMPARE} --map --host-memory-only-in-first
                          ${${twin}_${ordinal}} ${plain_${ordinal}}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE cmp ERROR_VARIABLE cerr)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "launch ${ordinal}, snapshot route vs a capture without snapshots:\n"
                        "${cmp}${cerr}")
  endif()
  math(EXPR compared "${compared} + 1")
endforeach()
message(STATUS "route replay, capture without snapshots: ${compared} identical in content")

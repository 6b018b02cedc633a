# `cusnap minimize` on a capture the interceptor recorded (tests/data/saxpy_streams: launches of
# saxpy and scale_by_two on streams): with a flip injected into scale_by_two on one LIST entry,
# `--until mismatch:good,bad -j 2 --json` keeps launches of scale_by_two only and says so; the
# written capture still mismatches (cusnap compare of its two replays flags it); a condition the
# input does not meet exits 16 and writes nothing; one-driver mismatch is refused (exit 1).
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
unset(ENV{CUSNAP_EMU_INJECT})

function(run expected_rc)
  execute_process(COMMAND ${CUSNAP} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL expected_rc)
    message(FATAL_ERROR "cusnap ${ARGN}: exit ${rc}, expected ${expected_rc}\n${out}\n${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

file(WRITE ${WORK}/drivers.txt
     "good emulator\nbad emulator CUSNAP_EMU_INJECT=flip:^scale_by_two$\nsame emulator\n")
set(small ${WORK}/small.cusnap)
run(0 minimize ${CAPTURE} --until mismatch:good,bad --drivers ${WORK}/drivers.txt -j 2 --json
    -o ${small})
string(JSON schema GET "${out}" schema)
string(JSON outcome GET "${out}" outcome)
string(JSON before GET "${out}" calls before)
string(JSON after GET "${out}" calls after)
string(JSON replays GET "${out}" replays)
if(NOT schema STREQUAL "cusnap-minimize" OR NOT outcome STREQUAL "minimized" OR
   NOT after LESS before OR replays LESS 4)
  message(FATAL_ERROR "unexpected minimize JSON:\n${out}")
endif()
run(0 dump ${small})
string(REGEX MATCHALL "kernelName=[A-Za-z_0-9]+" kernels "${out}")
list(REMOVE_DUPLICATES kernels)
if(NOT kernels STREQUAL "kernelName=scale_by_two")
  message(FATAL_ERROR "the minimized capture launches ${kernels}, not scale_by_two alone")
endif()
# Still mismatches, as cusnap compare judges its replays on the two entries (each replay's own
# verdict against the recorded expectations is not meaningful after removals: docs/minimize.md).
execute_process(COMMAND ${CUSNAP} replay ${small} --driver emulator --report ${WORK}/good.json -q
                RESULT_VARIABLE rc)
set(ENV{CUSNAP_EMU_INJECT} "flip:^scale_by_two$")
execute_process(COMMAND ${CUSNAP} replay ${small} --driver emulator --report ${WORK}/bad.json -q
                RESULT_VARIABLE rc)
unset(ENV{CUSNAP_EMU_INJECT})
run(1 compare ${WORK}/good.json ${WORK}/bad.json)

run(16 minimize ${CAPTURE} --until mismatch:good,same --drivers ${WORK}/drivers.txt
    -o ${WORK}/none.cusnap)
if(EXISTS ${WORK}/none.cusnap)
  message(FATAL_ERROR "minimize wrote a capture for a condition the input does not meet")
endif()
run(1 minimize ${CAPTURE} --until mismatch -o ${WORK}/refused.cusnap)

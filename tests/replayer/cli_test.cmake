# cusnap replay on hand-built captures: exit codes, summary, report, damaged input.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

function(run_replay expected_rc)
  execute_process(COMMAND ${REPLAY} replay ${ARGN} --driver ${EMULATOR} --progress off
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL expected_rc)
    message(FATAL_ERROR "cusnap replay ${ARGN}: exit ${rc}, expected ${expected_rc}\n${out}\n${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
  set(err "${err}" PARENT_SCOPE)
endfunction()

execute_process(COMMAND ${MAKE_CAPTURE} ${WORK}/good.cusnap RESULT_VARIABLE rc)
execute_process(COMMAND ${MAKE_CAPTURE} ${WORK}/bad.cusnap mismatch OUTPUT_VARIABLE mismatch_seq RESULT_VARIABLE rc2)
if(NOT rc EQUAL 0 OR NOT rc2 EQUAL 0)
  message(FATAL_ERROR "could not write the test captures")
endif()
string(STRIP "${mismatch_seq}" mismatch_seq)

run_replay(0 ${WORK}/good.cusnap --report ${WORK}/good.json)
if(NOT out MATCHES "2 matched, 0 mismatched, 0 unverified: MATCHED")
  message(FATAL_ERROR "summary lacks the verification line:\n${out}")
endif()
file(READ ${WORK}/good.json report)
string(JSON result GET "${report}" verification result)
string(JSON launches LENGTH "${report}" launches)
string(JSON kernel GET "${report}" launches 0 kernel)
string(JSON samples GET "${report}" launches 0 time_ms samples)
if(NOT result STREQUAL "matched" OR NOT launches EQUAL 2 OR NOT kernel STREQUAL "axpy_int" OR NOT samples EQUAL 1)
  message(FATAL_ERROR "unexpected report: ${result} ${launches} ${kernel} ${samples}")
endif()

run_replay(5 ${WORK}/bad.cusnap --report ${WORK}/bad.json)
if(NOT out MATCHES "first mismatch: call ${mismatch_seq}:")
  message(FATAL_ERROR "the mismatch is not reported at call ${mismatch_seq}:\n${out}")
endif()
file(READ ${WORK}/bad.json report)
string(JSON first GET "${report}" verification first_mismatch call)
if(NOT first EQUAL mismatch_seq)
  message(FATAL_ERROR "report: first mismatch at ${first}, expected ${mismatch_seq}")
endif()

# The emulator under the replay counts too (CUSNAP_EMU_STATS), for the schema check below.
set(ENV{CUSNAP_EMU_STATS} ${WORK}/stats.json)
run_replay(0 ${WORK}/good.cusnap --repeat 3 --warmup 1 --kernel-name increment --report ${WORK}/rep.json)
unset(ENV{CUSNAP_EMU_STATS})
file(READ ${WORK}/rep.json report)
string(JSON samples GET "${report}" launches 1 time_ms samples)
string(JSON selected GET "${report}" launches 0 selected)
if(NOT samples EQUAL 3 OR NOT selected STREQUAL "OFF")
  message(FATAL_ERROR "repetitions: ${samples} samples, first launch selected=${selected}")
endif()

# Damaged input: a clear error and a documented exit code, never a crash.
file(WRITE ${WORK}/not.cusnap "this is not a capture")
run_replay(4 ${WORK}/not.cusnap)
run_replay(1 ${WORK}/missing.cusnap)
run_replay(1 ${WORK}/good.cusnap --repeat 0)

# The reports against their documented schemas (docs/schemas/): every field written is documented
# with its type, every documented field is written. A capture of a real program adds what the
# hand-built ones lack (its command line).
run_replay(0 ${DATA}/vector_add.cusnap --report ${WORK}/data.json)
foreach(check "replay-report.md;${WORK}/good.json;${WORK}/bad.json;${WORK}/rep.json;${WORK}/data.json"
              "emulator-stats.md;${WORK}/stats.json")
  list(POP_FRONT check doc)
  execute_process(COMMAND ${PYTHON} ${CHECK_SCHEMA} ${SCHEMAS}/${doc} ${check}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the documents do not follow docs/schemas/${doc}")
  endif()
endforeach()

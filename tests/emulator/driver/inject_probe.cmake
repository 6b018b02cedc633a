# CUSNAP_EMU_INJECT (docs/emulator.md, "Fault injection"), read once per process: runs
# emu_driver_probe inject under several values. Input: PROBE.
#   - no value, or rules naming another kernel: every element right, the baseline time
#   - flip:busy: exactly one element wrong, the first stored one (thread 0's, lowest address),
#     in bit 0; the time unchanged
#   - slow:busy:FACTOR: results right, the emulated time multiplied by FACTOR; rules combine
#   - malformed values: cuInit fails with CUDA_ERROR_INVALID_VALUE and an error naming the entry
function(probe out_var err_var value)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=CUSNAP_EMU_THREADS --unset=CUSNAP_LOG_LEVEL
                          --unset=CUSNAP_EMU_INJECT ${value} ${PROBE} inject
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "probe inject with '${value}' exited '${rc}'\nstdout:\n${out}\nstderr:\n${err}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
  set(${err_var} "${err}" PARENT_SCOPE)
endfunction()

function(parse out wrong_var first_var xor_var ns_var)
  if(NOT out MATCHES "wrong ([0-9]+) first ([0-9]+) xor ([0-9]+)\nelapsed_ns ([0-9]+)")
    message(FATAL_ERROR "unexpected probe output:\n${out}")
  endif()
  set(${wrong_var} ${CMAKE_MATCH_1} PARENT_SCOPE)
  set(${first_var} ${CMAKE_MATCH_2} PARENT_SCOPE)
  set(${xor_var} ${CMAKE_MATCH_3} PARENT_SCOPE)
  set(${ns_var} ${CMAKE_MATCH_4} PARENT_SCOPE)
endfunction()

probe(out err "")
parse("${out}" wrong first xor base_ns)
if(NOT wrong EQUAL 0 OR base_ns LESS 1000)
  message(FATAL_ERROR "baseline: ${wrong} wrong element(s), ${base_ns} ns")
endif()

foreach(value "CUSNAP_EMU_INJECT=flip:^other$" "CUSNAP_EMU_INJECT=slow:bus$y:3" "CUSNAP_EMU_INJECT=")
  probe(out err "${value}")
  parse("${out}" wrong first xor ns)
  if(NOT wrong EQUAL 0 OR NOT ns EQUAL base_ns)
    message(FATAL_ERROR "${value} changed a kernel it does not name: ${wrong} wrong, ${ns} ns (baseline ${base_ns})")
  endif()
endforeach()

probe(out err "CUSNAP_EMU_INJECT=flip:bu;CUSNAP_LOG_LEVEL=info")
parse("${out}" wrong first xor ns)
if(NOT wrong EQUAL 1 OR NOT first EQUAL 0 OR NOT xor EQUAL 1 OR NOT ns EQUAL base_ns)
  message(FATAL_ERROR "flip:bu: ${wrong} wrong (first ${first}, xor ${xor}), ${ns} ns (baseline ${base_ns})")
endif()
if(NOT err MATCHES "CUSNAP_EMU_INJECT: flip: bit 0 of the byte at 0x[0-9a-f]+ stored by busy")
  message(FATAL_ERROR "flip was not logged at info:\n${err}")
endif()

# FACTOR 2, and 1.5 * 2 from two rules: the time follows within rounding (1 ns per factor).
foreach(case "slow:busy:2|2" "slow:^busy$:1.5,slow:.:2|3")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 value)
  list(GET parts 1 factor)
  probe(out err "CUSNAP_EMU_INJECT=${value}")
  parse("${out}" wrong first xor ns)
  math(EXPR expected "${base_ns} * ${factor}")
  math(EXPR delta "${ns} - ${expected}")
  if(NOT wrong EQUAL 0 OR delta GREATER 2 OR delta LESS -2)
    message(FATAL_ERROR "${value}: ${wrong} wrong, ${ns} ns, expected ${expected} (baseline ${base_ns})")
  endif()
endforeach()

foreach(case "bogus|not flip:REGEX or slow:REGEX:FACTOR"
             "slow:busy|slow needs slow:REGEX:FACTOR"
             "slow:busy:0|is not a positive finite number"
             "slow:busy:x2|is not a positive finite number"
             "flip:|empty REGEX"
             "flip:busy,flip:(|bad REGEX")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 value)
  list(GET parts 1 message)
  probe(out err "CUSNAP_EMU_INJECT=${value}")
  if(NOT out MATCHES "^cuInit 1\n")
    message(FATAL_ERROR "CUSNAP_EMU_INJECT=${value} did not fail cuInit with CUDA_ERROR_INVALID_VALUE:\n${out}")
  endif()
  string(REGEX REPLACE "([][()^$.*+?|\\\\])" "\\\\\\1" message_regex "${message}")
  if(NOT err MATCHES "CUSNAP_EMU_INJECT=.*${message_regex}")
    message(FATAL_ERROR "CUSNAP_EMU_INJECT=${value}: no '${message}' in the error:\n${err}")
  endif()
endforeach()

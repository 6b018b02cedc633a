# cusnap bisect and cusnap matrix on the emulator, with faults injected through CUSNAP_EMU_INJECT
# (docs/bisect.md). Inputs: CUSNAP, MAKE_CAPTURE (tests/replayer's capture writer), WORK, RUNNER
# (local | slurm | template), WHAT (bisect | matrix), SLURM_CLUSTER + CLUSTER_DIR (slurm only:
# the fixture's script, whose `check` skips or fails when no cluster runs).
#   bisect: a LIST of 9 entries in which a fault starts at entry k: flip for every k in 1..8 on a
#     whole capture and on an extracted single-kernel capture (criterion results), slow at 1.3
#     (criterion time) for every k; each finds entry k in at most ceil(log2 9) + 1 = 5 replays;
#     slow at 1.01 is not flagged (no culprit, exit 15). With RUNNER slurm or template, every
#     answer (culprit, replays run and their verdicts) equals the local runner's.
#   matrix: 2 captures x 3 entries (good, flip, slow 1.3), criterion both: the table's verdicts,
#     files and exit code 13; with RUNNER slurm, the same verdicts as the local runner.
cmake_minimum_required(VERSION 3.25)

if(RUNNER STREQUAL "slurm")
  execute_process(COMMAND ${SLURM_CLUSTER} check ${CLUSTER_DIR} RESULT_VARIABLE rc
                  ERROR_VARIABLE err)
  if(rc EQUAL 77)
    message("${err}")
    # ctest SKIP_REGULAR_EXPRESSION
    message(STATUS "CUSNAP_TEST_SKIPPED")
    return()
  elseif(NOT rc EQUAL 0)
    message(FATAL_ERROR "no Slurm cluster for this test:\n${err}")
  endif()
  set(ENV{SLURM_CONF} "${CLUSTER_DIR}/etc/slurm.conf")
endif()
unset(ENV{CUSNAP_EMU_INJECT})
unset(ENV{CUSNAP_LOG_LEVEL})

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${MAKE_CAPTURE} ${WORK}/whole.cusnap RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "make_capture whole: ${rc}")
endif()
execute_process(COMMAND ${MAKE_CAPTURE} ${WORK}/extracted.cusnap snapshot extract
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "make_capture extracted: ${rc}")
endif()

if(RUNNER STREQUAL "template")
  # A template that leaves a mark per replay (so the test sees it was used) and runs {command}.
  set(runner_arg "--runner=echo {name} >{report}.via-template && {command}")
else()
  set(runner_arg "--runner=${RUNNER}")
endif()
if(RUNNER STREQUAL "slurm")
  list(APPEND runner_arg "--slurm-poll=0.2" "--slurm-timeout=300")
endif()

# Writes a LIST of `count` entries e0..e(count-1); entries from `k` on get `env`.
function(write_list path count k env)
  set(text "# written by bisect_test.cmake\n")
  math(EXPR last "${count} - 1")
  foreach(i RANGE ${last})
    if(i GREATER_EQUAL k AND NOT env STREQUAL "")
      string(APPEND text "e${i} emulator ${env}\n")
    else()
      string(APPEND text "e${i} emulator\n")
    endif()
  endforeach()
  file(WRITE ${path} "${text}")
endfunction()

# Runs cusnap bisect; sets <prefix>_rc, <prefix>_json and <prefix>_answer (culprit and every
# replay's entry and verdict: what two runners must agree on).
function(run_bisect prefix capture list criterion runner work)
  execute_process(COMMAND ${CUSNAP} bisect ${capture} --drivers ${list} --criterion ${criterion}
                          ${runner} --work-dir ${work} --json
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 600)
  string(JSON schema ERROR_VARIABLE json_error GET "${out}" schema)
  if(NOT schema STREQUAL "cusnap-bisect")
    message(FATAL_ERROR "bisect ${list} (${runner}) exited ${rc} without its JSON:\n${out}\n${err}")
  endif()
  string(JSON culprit_type TYPE "${out}" culprit)
  if(culprit_type STREQUAL "NULL")
    set(answer "culprit=none")
  else()
    string(JSON culprit GET "${out}" culprit)
    set(answer "culprit=${culprit}")
  endif()
  string(JSON n LENGTH "${out}" replays)
  math(EXPR last "${n} - 1")
  foreach(i RANGE ${last})
    string(JSON entry GET "${out}" replays ${i} entry)
    string(JSON verdict GET "${out}" replays ${i} verdict)
    string(JSON exit_code GET "${out}" replays ${i} exit_code)
    string(APPEND answer " ${entry}:${verdict}:${exit_code}")
  endforeach()
  set(${prefix}_rc ${rc} PARENT_SCOPE)
  set(${prefix}_json "${out}" PARENT_SCOPE)
  set(${prefix}_answer "${answer}" PARENT_SCOPE)
  set(${prefix}_replays ${n} PARENT_SCOPE)
  set(${prefix}_err "${err}" PARENT_SCOPE)
endfunction()

# One bisect case; `expected`: the culprit's name or "none".
function(bisect_case name capture env criterion k expected)
  set(list ${WORK}/${name}.list)
  write_list(${list} 9 ${k} "${env}")
  run_bisect(r ${WORK}/${capture}.cusnap ${list} ${criterion} "${runner_arg}" ${WORK}/${name})
  if(expected STREQUAL "none")
    set(expected_rc 15)
  else()
    set(expected_rc 0)
  endif()
  if(NOT r_rc EQUAL expected_rc OR NOT r_answer MATCHES "^culprit=${expected} ")
    message(FATAL_ERROR "${name}: expected culprit ${expected} (exit ${expected_rc}), got exit "
                        "${r_rc}: ${r_answer}\n${r_json}\n${r_err}")
  endif()
  # The culprit's first slower launch (time) is axpy_int's, the slowed kernel; its first
  # differing launch (results) is increment's: in the whole capture one copy observes axpy_int
  # and increment together and compare names the launch it follows (docs/compare.md), in the
  # extracted one increment is the only kernel.
  if(NOT expected STREQUAL "none")
    if(criterion STREQUAL "time")
      string(JSON first_kernel GET "${r_json}" first_slower kernel)
      set(expected_kernel axpy_int)
    else()
      string(JSON first_kernel GET "${r_json}" first_difference kernel)
      set(expected_kernel increment)
    endif()
    if(NOT first_kernel MATCHES "^${expected_kernel}$")
      message(FATAL_ERROR "${name}: first differing launch of ${first_kernel}:\n${r_json}")
    endif()
  endif()
  if(r_replays GREATER 5)
    message(FATAL_ERROR "${name}: ${r_replays} replays, more than ceil(log2 9) + 1 = 5: ${r_answer}")
  endif()
  if(NOT RUNNER STREQUAL "local")
    run_bisect(l ${WORK}/${capture}.cusnap ${list} ${criterion} "--runner=local"
               ${WORK}/${name}.local)
    if(NOT l_answer STREQUAL r_answer OR NOT l_rc EQUAL r_rc)
      message(FATAL_ERROR "${name}: ${RUNNER} and local runners disagree:\n"
                          "${RUNNER}: exit ${r_rc} ${r_answer}\nlocal: exit ${l_rc} ${l_answer}")
    endif()
  endif()
  if(RUNNER STREQUAL "template")
    file(GLOB marks ${WORK}/${name}/*.via-template)
    list(LENGTH marks marked)
    if(NOT marked EQUAL r_replays)
      message(FATAL_ERROR "${name}: ${marked} template marks for ${r_replays} replays")
    endif()
  endif()
  message(STATUS "${name}: ${r_answer}")
endfunction()

if(WHAT STREQUAL "bisect")
  if(RUNNER STREQUAL "slurm")
    set(ks 1 4 8)  # each bisect step is one job array; the local test covers every k
  else()
    set(ks 1 2 3 4 5 6 7 8)
  endif()
  foreach(k IN LISTS ks)
    bisect_case(flip_whole_${k} whole "CUSNAP_EMU_INJECT=flip:^axpy_int$" results ${k} e${k})
    bisect_case(slow_${k} whole "CUSNAP_EMU_INJECT=slow:axpy_int:1.3" time ${k} e${k})
    if(NOT RUNNER STREQUAL "slurm" OR k EQUAL 4)
      bisect_case(flip_extracted_${k} extracted "CUSNAP_EMU_INJECT=flip:." results ${k} e${k})
    endif()
  endforeach()
  bisect_case(slow_small whole "CUSNAP_EMU_INJECT=slow:axpy_int:1.01" time 3 none)
  # A fault under the other criterion is not a culprit: slow under results, flip under time.
  if(NOT RUNNER STREQUAL "slurm")
    bisect_case(slow_under_results whole "CUSNAP_EMU_INJECT=slow:.:1.3" results 2 none)
    bisect_case(flip_under_time whole "CUSNAP_EMU_INJECT=flip:." time 2 none)
    bisect_case(flip_under_both whole "CUSNAP_EMU_INJECT=flip:." both 5 e5)
  endif()
  return()
endif()

# ---- matrix ----------------------------------------------------------------------------------
file(WRITE ${WORK}/matrix.list
     "good emulator\nflipped emulator CUSNAP_EMU_INJECT=flip:.\nslowed emulator CUSNAP_EMU_INJECT=slow:.:1.3\n")
function(run_matrix prefix runner out_dir)
  execute_process(COMMAND ${CUSNAP} matrix --captures ${WORK}/whole.cusnap ${WORK}/extracted.cusnap
                          --drivers ${WORK}/matrix.list --criterion both ${runner} -o ${out_dir}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 600)
  foreach(f matrix.txt matrix.json matrix.html)
    if(NOT EXISTS ${out_dir}/${f})
      message(FATAL_ERROR "matrix (${runner}): no ${f}\n${out}\n${err}")
    endif()
  endforeach()
  file(READ ${out_dir}/matrix.json json)
  set(answer "")
  foreach(c 0 1)
    foreach(e 0 1 2)
      string(JSON verdict GET "${json}" captures ${c} cells ${e} verdict)
      string(JSON results GET "${json}" captures ${c} cells ${e} results_differ)
      string(JSON slower GET "${json}" captures ${c} cells ${e} slower)
      string(APPEND answer " ${c}.${e}:${verdict}:${results}:${slower}")
    endforeach()
  endforeach()
  set(${prefix}_rc ${rc} PARENT_SCOPE)
  set(${prefix}_answer "${answer}" PARENT_SCOPE)
  set(${prefix}_out "${out}" PARENT_SCOPE)
endfunction()

run_matrix(m "${runner_arg}" ${WORK}/matrix)
set(expected " 0.0:reference:OFF:OFF 0.1:differs:ON:OFF 0.2:differs:OFF:ON 1.0:reference:OFF:OFF 1.1:differs:ON:OFF 1.2:differs:OFF:ON")
if(NOT m_rc EQUAL 13 OR NOT m_answer STREQUAL expected)
  message(FATAL_ERROR "matrix: exit ${m_rc} (expected 13), cells${m_answer}\nexpected${expected}\n${m_out}")
endif()
file(READ ${WORK}/matrix/matrix.html html)
if(NOT html MATCHES "<td class=\"differs\"" OR NOT html MATCHES "<th>slowed</th>")
  message(FATAL_ERROR "matrix.html lacks its cells:\n${html}")
endif()
if(NOT m_out MATCHES "whole.cusnap +reference [0-9.e-]+ ms +RESULTS DIFFER")
  message(FATAL_ERROR "matrix text table:\n${m_out}")
endif()
if(NOT RUNNER STREQUAL "local")
  run_matrix(l "--runner=local" ${WORK}/matrix.local)
  if(NOT l_answer STREQUAL m_answer OR NOT l_rc EQUAL m_rc)
    message(FATAL_ERROR "matrix: ${RUNNER} and local disagree:\n${m_answer}\n${l_answer}")
  endif()
endif()
message(STATUS "matrix:${m_answer}")

# interceptor.nvtx: the application's NVTX ranges and marks (nvtx_app.cpp) are recorded through
# the NVTX injection interface and re-emitted by the replay (docs/capture.md and docs/replay.md,
# "NVTX"). A test injection library (nvtx_log_injection.cpp) logs what NVTX hands a tool:
#  1. directly on the emulator, without and with the logger: the same stdout (the reference log);
#  2. `cusnap capture`: the same stdout, `info` counts the records, `dump` shows them (registered
#     string resolved, domain named, the wide string converted);
#  3. `cusnap replay` with the logger: the log, less the replay's own per-launch ranges, equals
#     the reference, and the per-launch ranges lie inside the application's;
#  4. the environment-only route (no `cusnap capture`) records the same events;
#  5. an injection library already named by the environment is left alone (nothing recorded).
# Arguments (-D): APP IMAGE CUSNAP LOGGER SHIM_DIR EMULATOR_DIR OUT_DIR
file(REMOVE_RECURSE ${OUT_DIR})
file(MAKE_DIRECTORY ${OUT_DIR})

function(run out_var)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (rc ${rc}): ${ARGN}\n${out}${err}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

function(expect text regex what)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "${what}: no match for '${regex}' in:\n${text}")
  endif()
endfunction()

run(direct ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${EMULATOR_DIR} ${APP} ${IMAGE})
expect("${direct}" "^checksum [0-9a-f]+\n$" "direct run")
run(logged ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${EMULATOR_DIR} NVTX_INJECTION64_PATH=${LOGGER}
    CUSNAP_TEST_NVTX_LOG=${OUT_DIR}/original.log ${APP} ${IMAGE})
if(NOT logged STREQUAL direct)
  message(FATAL_ERROR "with the logger the application printed '${logged}', without '${direct}'")
endif()
file(READ ${OUT_DIR}/original.log original)
message("original run's NVTX:\n${original}")
expect("${original}" "push cusnap.test color=ffff0000 category=0 phase 2 \\(registered\\)" "original")

# 2. capture
run(captured ${CUSNAP} capture --driver emulator -o ${OUT_DIR}/nvtx.cusnap -- ${APP} ${IMAGE})
if(NOT captured STREQUAL direct)
  message(FATAL_ERROR "under capture the application printed '${captured}', directly '${direct}'")
endif()
run(info ${CUSNAP} info ${OUT_DIR}/nvtx.cusnap)
message("${info}")
expect("${info}" "NVTX: 12 record\\(s\\) from 1 thread\\(s\\): 4 push, 4 pop, 1 start, 1 end, 2 mark"
       "info")
expect("${info}" "cusnap.test +1 +1" "info's domain table")
expect("${info}" "\\(default\\) +4 +1" "info's domain table")
run(dump ${CUSNAP} dump ${OUT_DIR}/nvtx.cusnap)
message("${dump}")
foreach(pattern "nvtxMarkA.*kind=mark.*message=\"before cuda\""
                "nvtxDomainRangePushEx.*domain=cusnap.test.*message=\"phase 2 \\(registered\\)\""
                "nvtxRangePushEx.*message=\"phase 1\".*category=7.*color=4278255360.*hasColor=true"
                "nvtxRangePushW.*message=\"phase 3 wide é\""
                "nvtxRangeEnd.*kind=end.*message=\"phase 3 \\(start/end\\)\".*rangeId=1")
  expect("${dump}" "${pattern}" "dump")
endforeach()

# 3. replay
run(replayed ${CMAKE_COMMAND} -E env NVTX_INJECTION64_PATH=${LOGGER}
    CUSNAP_TEST_NVTX_LOG=${OUT_DIR}/replay.log ${CUSNAP} replay --driver emulator ${OUT_DIR}/nvtx.cusnap)
message("${replayed}")
file(READ ${OUT_DIR}/replay.log replay)
message("replay's NVTX:\n${replay}")
set(launch_range "(push|pop) - color=- category=0 step #[0-9]+ \\(call [0-9]+\\)\n")
string(REGEX REPLACE "${launch_range}" "" application_part "${replay}")
if(NOT application_part STREQUAL original)
  message(FATAL_ERROR "the replay's NVTX differs from the original run's:\n${application_part}")
endif()
expect("${replay}" "category=7 phase 1\npush - color=- category=0 step #0 \\(call [0-9]+\\)\npop"
       "the first launch's range inside phase 1")
string(REGEX MATCHALL "push - color=- category=0 step #" launches "${replay}")
list(LENGTH launches launch_count)
if(NOT launch_count EQUAL 4)
  message(FATAL_ERROR "expected 4 per-launch ranges in the replay, found ${launch_count}")
endif()

# 4. the environment-only route for launchers
run(env_only ${CMAKE_COMMAND} -E env CUSNAP_CAPTURE_OUTPUT=${OUT_DIR}/env.cusnap
    CUSNAP_REAL_DRIVER=${EMULATOR_DIR}/libcuda.so.1 LD_LIBRARY_PATH=${SHIM_DIR}
    NVTX_INJECTION64_PATH=${SHIM_DIR}/libcuda.so.1 ${APP} ${IMAGE})
if(NOT env_only STREQUAL direct)
  message(FATAL_ERROR "environment-only capture: the application printed '${env_only}'")
endif()
run(info ${CUSNAP} info ${OUT_DIR}/env.cusnap)
expect("${info}" "NVTX: 12 record\\(s\\)" "environment-only capture")

# 5. another tool's injection library stays
execute_process(COMMAND ${CMAKE_COMMAND} -E env NVTX_INJECTION64_PATH=${LOGGER}
                CUSNAP_TEST_NVTX_LOG=${OUT_DIR}/other.log
                ${CUSNAP} capture --driver emulator -o ${OUT_DIR}/other.cusnap -- ${APP} ${IMAGE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out STREQUAL direct OR NOT err MATCHES "NVTX ranges are not recorded")
  message(FATAL_ERROR "capture with another injection library (rc ${rc}):\n${out}${err}")
endif()
file(READ ${OUT_DIR}/other.log other)
if(NOT other STREQUAL original)
  message(FATAL_ERROR "the other tool did not get the application's NVTX:\n${other}")
endif()
run(info ${CUSNAP} info ${OUT_DIR}/other.cusnap)
if(info MATCHES "NVTX:")
  message(FATAL_ERROR "NVTX recorded although another injection library was named:\n${info}")
endif()

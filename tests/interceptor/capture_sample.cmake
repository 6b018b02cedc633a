# Captures one sample on the emulator and checks the capture. Arguments (-D):
#   NAME SAMPLE CUSNAP INSPECT EMU_DIR OUT_DIR
# 1. run SAMPLE directly on the emulator; 2. run it under `cusnap capture --driver emulator`;
# 3. stdout (timings masked) and exit codes must be identical, and 0;
# 4. the capture must be whole with every referenced blob present (inspect), every launch must
#    carry a parameter layout, `cusnap info --json` must agree on the launch count;
# 5. independent counts: both runs write the emulator's own statistics (CUSNAP_EMU_STATS, see
#    emulator/README.md). The launches per kernel must be the same in both runs and equal to
#    what the capture holds, and the bytes the emulator copied from host to device in the
#    captured run must equal the payload bytes the capture stored for those copies.
# Timings differ from run to run, and device printf lines from different blocks come in no
# defined order (on a GPU as on the emulator): compare the sorted lines with timings masked.
function(mask_timings text out)
  string(REGEX REPLACE "[0-9]+(\\.[0-9]+)? (ms|s|us)" "<time>" text "${text}")
  string(REGEX REPLACE "\\([0-9]+ launches/s\\)" "(<rate>)" text "${text}")
  string(REPLACE ";" "<semicolon>" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  list(SORT lines)
  string(REPLACE ";" "\n" text "${lines}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

set(capture ${OUT_DIR}/${NAME}.cusnap)
file(REMOVE ${capture})

set(direct_stats ${OUT_DIR}/${NAME}.direct-stats.json)
set(captured_stats ${OUT_DIR}/${NAME}.captured-stats.json)
file(REMOVE ${direct_stats} ${captured_stats})

set(ENV{LD_LIBRARY_PATH} "${EMU_DIR}")
set(ENV{CUSNAP_EMU_STATS} "${direct_stats}")
execute_process(COMMAND ${SAMPLE} RESULT_VARIABLE direct_rc OUTPUT_VARIABLE direct_out ERROR_VARIABLE direct_err)
unset(ENV{LD_LIBRARY_PATH})
set(ENV{CUSNAP_EMU_STATS} "${captured_stats}")
execute_process(COMMAND ${CUSNAP} capture --driver emulator --force-overwrite -o ${capture} -- ${SAMPLE}
                RESULT_VARIABLE captured_rc OUTPUT_VARIABLE captured_out ERROR_VARIABLE captured_err)
unset(ENV{CUSNAP_EMU_STATS})
message("direct run (rc ${direct_rc}):\n${direct_out}${direct_err}")
message("captured run (rc ${captured_rc}):\n${captured_out}${captured_err}")
if(NOT direct_rc STREQUAL "0")
  message(FATAL_ERROR "${NAME} fails on the emulator without capture (rc ${direct_rc})")
endif()
if(NOT captured_rc STREQUAL direct_rc)
  message(FATAL_ERROR "exit code under capture ${captured_rc}, without ${direct_rc}")
endif()
mask_timings("${direct_out}" direct_masked)
mask_timings("${captured_out}" captured_masked)
if(NOT direct_masked STREQUAL captured_masked)
  message(FATAL_ERROR "stdout differs under capture:\n--- direct\n${direct_masked}\n--- captured\n${captured_masked}")
endif()
if(NOT captured_err MATCHES "cusnap capture: [0-9]+ calls, [0-9]+ launches")
  message(FATAL_ERROR "no capture summary on stderr")
endif()

execute_process(COMMAND ${INSPECT} ${capture} RESULT_VARIABLE inspect_rc OUTPUT_VARIABLE inspect_out ERROR_VARIABLE inspect_err)
message("inspect:\n${inspect_out}${inspect_err}")
if(NOT inspect_rc EQUAL 0)
  message(FATAL_ERROR "inspect failed (rc ${inspect_rc}): a referenced blob is missing or the file is unreadable")
endif()
if(NOT inspect_out MATCHES "integrity whole")
  message(FATAL_ERROR "the capture is not whole")
endif()
string(REGEX MATCH "launches ([0-9]+)" _ "${inspect_out}")
set(captured_launches ${CMAKE_MATCH_1})
if(inspect_out MATCHES "slots=0 " AND NOT inspect_out MATCHES "params=0 slots=0 ")
  message(FATAL_ERROR "a launch has parameter bytes but no layout")
endif()
if(inspect_out MATCHES "no parameter layout")
  message(FATAL_ERROR "a launch was recorded without its parameter layout")
endif()
if(NOT inspect_out MATCHES "kind moduleLoad [1-9]")
  message(FATAL_ERROR "no module load recorded")
endif()
string(REGEX MATCHALL "\nmodule [0-9a-f]+ kind=[0-9]+ image=0 " empty_images "${inspect_out}")
if(empty_images)
  message(FATAL_ERROR "a module load was recorded without its image")
endif()

execute_process(COMMAND ${CUSNAP} info --json ${capture} RESULT_VARIABLE info_rc OUTPUT_VARIABLE info_json)
if(NOT info_rc EQUAL 0)
  message(FATAL_ERROR "cusnap info --json failed (rc ${info_rc})")
endif()
string(JSON info_launches GET "${info_json}" counts launches)
if(NOT info_launches EQUAL captured_launches)
  message(FATAL_ERROR "cusnap info counts ${info_launches} launches, the index ${captured_launches}")
endif()

# ---- independent counts from the emulator itself
foreach(run direct captured)
  if(NOT EXISTS ${${run}_stats})
    message(FATAL_ERROR "the emulator wrote no statistics for the ${run} run (${${run}_stats})")
  endif()
  file(READ ${${run}_stats} ${run}_json)
  string(JSON ${run}_total GET "${${run}_json}" launches total)
  string(JSON ${run}_failed GET "${${run}_json}" launches failed)
endforeach()
# The direct and the captured run asked the driver for the same launches, kernel by kernel.
string(JSON direct_kernels GET "${direct_json}" launches kernels)
string(JSON captured_kernels GET "${captured_json}" launches kernels)
if(NOT direct_kernels STREQUAL captured_kernels OR NOT direct_total EQUAL captured_total)
  message(FATAL_ERROR "the emulator saw different launches with and without capture:\n"
                      "  direct:   ${direct_total} ${direct_kernels}\n  captured: ${captured_total} ${captured_kernels}")
endif()
# Every launch the driver saw is in the capture, and nothing else.
if(NOT captured_total EQUAL captured_launches)
  message(FATAL_ERROR "the emulator saw ${captured_total} launch calls, the capture holds ${captured_launches}")
endif()
# Per kernel, when every launch succeeded (the emulator names only successful launches).
if(captured_failed EQUAL 0)
  string(JSON kernel_count LENGTH "${captured_json}" launches kernels)
  string(JSON info_kernel_count LENGTH "${info_json}" kernels)
  if(NOT kernel_count EQUAL info_kernel_count)
    message(FATAL_ERROR "the emulator launched ${kernel_count} distinct kernels, cusnap info lists ${info_kernel_count}")
  endif()
  math(EXPR last "${info_kernel_count} - 1")
  if(info_kernel_count GREATER 0)
    foreach(i RANGE ${last})
      string(JSON kernel GET "${info_json}" kernels ${i} name)
      string(JSON kernel_launches GET "${info_json}" kernels ${i} launches)
      string(JSON emulated ERROR_VARIABLE missing GET "${captured_json}" launches kernels "${kernel}")
      if(missing OR NOT emulated EQUAL kernel_launches)
        message(FATAL_ERROR "kernel ${kernel}: ${kernel_launches} launches in the capture, the emulator counted '${emulated}'")
      endif()
    endforeach()
  endif()
endif()
# The bytes that entered device memory from the host are the payload bytes the capture stored.
string(JSON htod_bytes GET "${captured_json}" copies hostToDevice bytes)
string(REGEX MATCH "hostToDevice payload bytes ([0-9]+)" _ "${inspect_out}")
if(NOT CMAKE_MATCH_1 EQUAL htod_bytes)
  message(FATAL_ERROR "the emulator copied ${htod_bytes} bytes host to device, the capture stored ${CMAKE_MATCH_1}")
endif()
message("launches: ${captured_launches} captured, ${captured_total} made (emulator statistics); "
        "host-to-device bytes: ${htod_bytes}")

# extract.sample.<sample>: the whole isolation path on a real program, end to end.
# The sample is captured through the interceptor on the emulator with a snapshot around every
# launch (--snapshot-outputs, so expected chunks hold their bytes), every launch is extracted,
# and each extracted capture is replayed alone on the emulator: every one must report that all
# its snapshot chunks match. A launch may be refused only because other device work overlapped
# it at capture time (its memory was not the launch's alone, so the interceptor recorded no
# snapshot); at least one launch must be extracted unless OVERLAP_ONLY is set (multi_thread,
# whose threads are always busy at once). With STICKY_REFUSAL (device_assert) a launch may also
# be refused because its snapshot failed on the sticky CUDA_ERROR_ASSERT (710) it raised on
# purpose. Inputs: SAMPLE, CUSNAP, EMULATOR, INTERCEPTOR_DIR, WORK, OVERLAP_ONLY, STICKY_REFUSAL.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(ENV{CUSNAP_INTERCEPTOR_DIR} ${INTERCEPTOR_DIR})
execute_process(COMMAND ${CUSNAP} capture --driver ${EMULATOR} --snapshot-kernels regex:.
                        --snapshot-outputs --force-overwrite -o ${WORK}/capture.cusnap -- ${SAMPLE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "capture failed (rc ${rc}):\n${out}\n${err}")
endif()
execute_process(COMMAND ${CUSNAP} extract ${WORK}/capture.cusnap --kernel-name regex:.
                        -o ${WORK}/launches
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  string(REPLACE ";" "," err_text "${err}")  # a CMake list must not split a message
  string(REGEX MATCHALL "error: [^\n]*" refusals "${err_text}")
  if(NOT refusals)
    message(FATAL_ERROR "extract failed (rc ${rc}) without naming a launch:\n${out}\n${err}")
  endif()
  foreach(line IN LISTS refusals)
    if(STICKY_REFUSAL AND line MATCHES "snapshot failed.*\\(CUresult 710\\)")
      continue()
    endif()
    if(NOT line MATCHES "overlapped the launch")
      message(FATAL_ERROR "extract refused a launch for another reason than an overlap:\n${line}")
    endif()
  endforeach()
endif()
if(IS_DIRECTORY ${WORK}/launches)
  file(GLOB extracted ${WORK}/launches/*.cusnap)
else()
  set(extracted ${WORK}/launches)  # a single launch: -o names the file
endif()
list(LENGTH extracted count)
if(count EQUAL 0 AND NOT OVERLAP_ONLY)
  message(FATAL_ERROR "extract wrote no capture:\n${out}\n${err}")
endif()
set(matched 0)
foreach(file IN LISTS extracted)
  execute_process(COMMAND ${CUSNAP} replay --driver ${EMULATOR} --progress off ${file}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "snapshot chunk\\(s\\) compared, all match")
    message(FATAL_ERROR "standalone replay of ${file} (rc ${rc}):\n${out}\n${err}")
  endif()
  math(EXPR matched "${matched} + 1")
endforeach()
message(STATUS "${matched} of ${count} extracted launches replayed alone, all chunks match")

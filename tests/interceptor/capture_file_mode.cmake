# interceptor.capture_file_mode: capture files are created 0600 (they hold the application's
# data) whatever the umask: the root process's file, a child process's file, and a file that
# --force-overwrite replaces, which existed with mode 0644 (format::Writer::create, which
# `cusnap extract` uses, is checked by format.<case>).
# Arguments (-D): CUSNAP SAMPLE OUT_DIR
file(REMOVE_RECURSE ${OUT_DIR})
file(MAKE_DIRECTORY ${OUT_DIR})

function(expect_mode path)
  execute_process(COMMAND stat -c %a ${path} RESULT_VARIABLE rc OUTPUT_VARIABLE mode
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0 OR NOT mode STREQUAL "600")
    message(FATAL_ERROR "${path}: mode '${mode}', expected 600")
  endif()
  message("${path}: mode ${mode}")
endfunction()

function(capture_with_umask)
  execute_process(COMMAND sh -c "umask 000 && exec \"$0\" \"$@\"" ${CUSNAP} capture --driver emulator ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cusnap capture ${ARGN} failed (${rc}):\n${err}")
  endif()
endfunction()

capture_with_umask(-o ${OUT_DIR}/root.cusnap -- ${SAMPLE})
expect_mode(${OUT_DIR}/root.cusnap)
capture_with_umask(-o ${OUT_DIR}/parent.cusnap -- sh -c "\"${SAMPLE}\"")
file(GLOB children ${OUT_DIR}/parent.*.cusnap)
list(LENGTH children count)
if(NOT count EQUAL 1)
  message(FATAL_ERROR "expected one child capture, found: ${children}")
endif()
expect_mode(${children})
file(WRITE ${OUT_DIR}/old.cusnap "an old file")
execute_process(COMMAND chmod 644 ${OUT_DIR}/old.cusnap)
capture_with_umask(--force-overwrite -o ${OUT_DIR}/old.cusnap -- ${SAMPLE})
expect_mode(${OUT_DIR}/old.cusnap)

# interceptor.write_failures: when the capture cannot be written -- RLIMIT_FSIZE (`ulimit -f`), an
# output that cannot be created, a full file system (a small tmpfs, only where this test may
# mount one) -- the application's stdout and exit code are those of a direct run, SIGXFSZ never
# kills it, and a capture cut short says so, and why where there is room for it:
# <file>.incomplete, shown by `cusnap info` (text and --json); the reason is always on stderr.
# Arguments (-D): CUSNAP SAMPLE EMULATOR_DIR OUT_DIR
file(REMOVE_RECURSE ${OUT_DIR})
file(MAKE_DIRECTORY ${OUT_DIR})

execute_process(COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${EMULATOR_DIR} ${SAMPLE}
                RESULT_VARIABLE direct_rc OUTPUT_VARIABLE direct_out ERROR_VARIABLE direct_err)
if(NOT direct_rc EQUAL 0)
  message(FATAL_ERROR "the sample fails on its own:\n${direct_out}${direct_err}")
endif()

function(capture_in_shell name shell_prefix output)
  execute_process(COMMAND sh -c "${shell_prefix} exec \"$0\" \"$@\"" ${CUSNAP} capture --driver emulator
                          -o ${output} -- ${SAMPLE}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${name} (rc ${rc}):\n${out}${err}")
  set(${name}_rc ${rc} PARENT_SCOPE)
  set(${name}_err "${err}" PARENT_SCOPE)
  if(NOT out STREQUAL direct_out)
    message(FATAL_ERROR "${name}: the application's stdout differs from a direct run:\n${out}")
  endif()
endfunction()

function(expect_incomplete name file reason)
  execute_process(COMMAND ${CUSNAP} info ${file} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("info ${file} (rc ${rc}):\n${out}")
  if(NOT rc EQUAL 0 OR NOT out MATCHES "\n  incomplete +the capture was not finished: [^\n]*${reason}")
    message(FATAL_ERROR "${name}: cusnap info does not say the capture is incomplete (${reason})")
  endif()
  execute_process(COMMAND ${CUSNAP} info --json ${file} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_QUIET)
  if(NOT out MATCHES "\"incomplete\": *\"[^\"]*${reason}")
    message(FATAL_ERROR "${name}: cusnap info --json has no integrity.incomplete (${reason})")
  endif()
endfunction()

# RLIMIT_FSIZE of 40 KiB: the capture (~120 KiB) cannot be finished; SIGXFSZ must not kill.
capture_in_shell(fsize "ulimit -f 40 &&" ${OUT_DIR}/fsize.cusnap)
if(NOT fsize_rc EQUAL direct_rc)
  message(FATAL_ERROR "fsize: exit code ${fsize_rc}, a direct run exits ${direct_rc}")
endif()
expect_incomplete(fsize ${OUT_DIR}/fsize.cusnap "File too large")

# An output that cannot be created: no capture at all (cusnap capture exits 10), the application
# runs as it would.
capture_in_shell(unwritable "" /dev/null/unwritable.cusnap)
if(NOT unwritable_rc EQUAL 10 OR NOT unwritable_err MATCHES "cannot create|cannot open|Not a directory")
  message(FATAL_ERROR "unwritable: exit code ${unwritable_rc} (expected 10) and the reason on stderr")
endif()

# A full file system: a 64 KiB tmpfs, where this test may mount one (root in a container that
# allows it); skipped with a message elsewhere.
set(small ${OUT_DIR}/small_fs)
file(MAKE_DIRECTORY ${small})
execute_process(COMMAND mount -t tmpfs -o size=64k cusnap_test ${small} RESULT_VARIABLE mounted
                OUTPUT_QUIET ERROR_QUIET)
if(mounted EQUAL 0)
  capture_in_shell(full "" ${small}/full.cusnap)
  execute_process(COMMAND cp ${small}/full.cusnap ${small}/full.cusnap.incomplete ${OUT_DIR}/ ERROR_QUIET)
  execute_process(COMMAND umount ${small})
  if(NOT full_rc EQUAL direct_rc)
    message(FATAL_ERROR "full: exit code ${full_rc}, a direct run exits ${direct_rc}")
  endif()
  # The note may have no room for its reason on a full file system: then it only marks the file.
  expect_incomplete(full ${OUT_DIR}/full.cusnap "")
  if(NOT full_err MATCHES "No space left on device")
    message(FATAL_ERROR "full: the shim did not say why the capture stopped")
  endif()
else()
  message("full file system: skipped (cannot mount a small tmpfs here)")
endif()

# Runs one client program (ctest -P script, tests/clients/CMakeLists.txt) in one of three modes:
#   direct   PYTHON SCRIPT on the emulator (LD_LIBRARY_PATH names its directory)
#   capture  the same under `cusnap capture --driver EMULATOR -o CAPTURE`: same verdict, exit 0
#   replay   `cusnap replay --driver EMULATOR CAPTURE` twice: each exits 0 with every check matched
# Arguments (-D): MODE PYTHON SCRIPT EMULATOR CUSNAP CAPTURE CUDA_HOME.
# A client whose Python packages could not be installed prints "SKIPPED:" (SKIP_REGULAR_EXPRESSION).
cmake_minimum_required(VERSION 3.25)

get_filename_component(emulator_dir "${EMULATOR}" DIRECTORY)
set(ENV{LD_LIBRARY_PATH} "${emulator_dir}")
set(ENV{CUDA_HOME} "${CUDA_HOME}")
get_filename_component(script_dir "${SCRIPT}" DIRECTORY)
set(ENV{PYTHONPATH} "${script_dir}")
set(ENV{PYTHONDONTWRITEBYTECODE} 1)  # nothing written into the source tree

function(run_checked)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  set(rc "${rc}" PARENT_SCOPE)
  set(out "${out}" PARENT_SCOPE)
endfunction()

if(MODE STREQUAL "direct")
  run_checked("${PYTHON}" "${SCRIPT}")
  if(NOT rc EQUAL 0 OR NOT out MATCHES "(^|\n)(OK|SKIPPED):")
    message(FATAL_ERROR "client exited ${rc}")
  endif()
elseif(MODE STREQUAL "capture")
  file(REMOVE "${CAPTURE}")
  run_checked("${CUSNAP}" capture --driver "${EMULATOR}" -o "${CAPTURE}" -- "${PYTHON}" "${SCRIPT}")
  if(NOT rc EQUAL 0 OR NOT out MATCHES "(^|\n)(OK|SKIPPED):")
    message(FATAL_ERROR "captured client exited ${rc}")
  endif()
  if(out MATCHES "(^|\n)OK:" AND NOT EXISTS "${CAPTURE}")
    message(FATAL_ERROR "no capture written to ${CAPTURE}")
  endif()
elseif(MODE STREQUAL "replay")
  if(NOT EXISTS "${CAPTURE}")
    # The capture test skipped (or failed, which ctest already reports): nothing to replay.
    message("SKIPPED: no capture ${CAPTURE}")
    return()
  endif()
  foreach(run 1 2)
    run_checked("${CUSNAP}" replay --driver "${EMULATOR}" --progress off "${CAPTURE}")
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "replay ${run} exited ${rc}")
    endif()
    if(NOT out MATCHES "verify +[1-9][0-9]* matched, 0 mismatched, 0 unverified: MATCHED")
      message(FATAL_ERROR "replay ${run}: not every result matched")
    endif()
  endforeach()
else()
  message(FATAL_ERROR "unknown MODE '${MODE}'")
endif()

# check_extract_refusals(RC OUT ERR [ALSO REGEX]): after `cusnap extract --kernel-name regex:.` of
# a sample's capture (sample_isolation.cmake, sample_emit_cpp.cmake), fails unless every launch
# it refused was refused for an allowed reason: other device work overlapped the launch at
# capture time (no snapshot was taken), with STICKY_REFUSAL set the snapshot failed on the sticky
# CUDA_ERROR_ASSERT (710) device_assert raises on purpose, or a message matching REGEX.
function(check_extract_refusals rc out err)
  cmake_parse_arguments(PARSE_ARGV 3 arg "" "ALSO" "")
  if(rc EQUAL 0)
    return()
  endif()
  string(REPLACE ";" "," err_text "${err}")  # a CMake list must not split a message
  string(REGEX MATCHALL "error: [^\n]*" refusals "${err_text}")
  if(NOT refusals)
    message(FATAL_ERROR "extract failed (rc ${rc}) without naming a launch:\n${out}\n${err}")
  endif()
  foreach(line IN LISTS refusals)
    if(STICKY_REFUSAL AND line MATCHES "snapshot failed.*\\(CUresult 710\\)")
      continue()
    endif()
    if(line MATCHES "overlapped the launch" OR (arg_ALSO AND line MATCHES "${arg_ALSO}"))
      continue()
    endif()
    message(FATAL_ERROR "extract refused a launch for another reason than an overlap:\n${line}")
  endforeach()
endfunction()

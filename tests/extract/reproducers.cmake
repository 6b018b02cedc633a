# Building and running `cusnap extract --emit-cpp` reproducers (docs/extract.md, "The C++
# reproducer"), for sample_emit_cpp.cmake and sample_graph_isolation.cmake.
# The program files (main.cpp, CMakeLists.txt, xxh3_128.h) are the same text in every emitted
# directory (only manifest.txt and the data files differ, and the program reads them at run time
# from the directory it is given), so one directory is built with its README's two commands and
# the others are checked to hold byte-identical program files and run with that binary.
# Uses GENERATOR, CXX, CUDA_ROOT, XXH3_TEMPLATE, EMULATOR_DIR, MAKE_FIXTURE (alter_reproducer),
# and REPRODUCER_ENV (optional,
# VAR=VALUE: every run of a reproducer has it, e.g. another CUSNAP_EMU_TENSOR_MAP_KEY than the
# capture's, so that only tensor maps the program encoded itself load).

# The reproducer directories extract's output OUTPUT reports, in order, into OUT_VAR.
function(reproducer_dirs out_var output)
  string(REGEX MATCHALL "  reproducer: [^\n]* \\(README" lines "${output}")
  set(dirs "")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^  reproducer: (.*) \\(README$" "\\1" dir "${line}")
    list(APPEND dirs ${dir})
  endforeach()
  set(${out_var} ${dirs} PARENT_SCOPE)
endfunction()

# Configures and builds the reproducer in DIR under BUILD as its README says; sets PROGRAM_VAR to
# the binary. Its xxh3_128.h must be exactly XXH3_TEMPLATE (tested against libxxhash).
function(build_reproducer dir build program_var)
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${dir} -B ${build} -G ${GENERATOR}
                          -DCMAKE_CXX_COMPILER=${CXX} -DCUDAToolkit_ROOT=${CUDA_ROOT}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "configuring ${dir} failed (rc ${rc}):\n${out}\n${err}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${build}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "building ${dir} failed (rc ${rc}):\n${out}\n${err}")
  endif()
  file(READ ${XXH3_TEMPLATE} template_text)
  file(READ ${dir}/xxh3_128.h emitted_text)
  if(NOT template_text STREQUAL emitted_text)
    message(FATAL_ERROR "${dir}/xxh3_128.h is not extract/templates/xxh3_128.h")
  endif()
  set(${program_var} ${build}/reproducer PARENT_SCOPE)
endfunction()

# Runs PROGRAM on the reproducer directory DIR on the emulator (with REPRODUCER_ENV); sets
# RC_VAR, OUT_VAR and ERR_VAR to its exit code, stdout and stderr.
function(run_on_emulator program dir rc_var out_var err_var)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${EMULATOR_DIR} ${REPRODUCER_ENV}
                          ${program} ${dir}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(${rc_var} "${rc}" PARENT_SCOPE)
  set(${out_var} "${out}" PARENT_SCOPE)
  set(${err_var} "${err}" PARENT_SCOPE)
endfunction()

# Copies the reproducer directory DIR to INTO and inverts the byte at OFFSET of its FILE there
# (MAKE_FIXTURE flip; OFFSET `all`: every byte).
function(alter_reproducer dir into file offset)
  file(COPY ${dir}/ DESTINATION ${into})
  execute_process(COMMAND ${MAKE_FIXTURE} flip ${into}/${file} ${offset} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "could not alter ${into}/${file} (rc ${rc})")
  endif()
endfunction()

# Runs PROGRAM (built from BUILT's directory) on DIR on the emulator: DIR must hold the same
# program files as BUILT, and the reproducer must print MATCH and exit 0.
function(run_reproducer program built dir)
  foreach(f main.cpp CMakeLists.txt xxh3_128.h)
    file(SHA256 ${built}/${f} want)
    file(SHA256 ${dir}/${f} sum)
    if(NOT sum STREQUAL want)
      message(FATAL_ERROR "${dir}/${f} differs from ${built}/${f}: one build cannot serve both")
    endif()
  endforeach()
  run_on_emulator(${program} ${dir} rc out err)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "\nMATCH \\(" OR out MATCHES "MISMATCH")
    message(FATAL_ERROR "the reproducer in ${dir} did not report a match (rc ${rc}):\n${out}\n${err}")
  endif()
endfunction()

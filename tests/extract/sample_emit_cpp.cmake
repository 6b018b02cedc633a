# extract.emit_cpp.sample.<sample>: a C++ reproducer for every extracted launch of a real program,
# built with the toolkit and run on the emulator (docs/extract.md, "The C++ reproducer").
# The sample is captured through the interceptor on the emulator with a snapshot around every
# launch and WITHOUT --snapshot-outputs: the expected state of each chunk the launch changed is
# only its XXH3-128, which the reproducer computes itself (xxh3_128.h); unchanged chunks keep
# their bytes and are compared byte for byte. Every launch is extracted with --emit-cpp; every
# reproducer must print MATCH and exit 0.
# The first reproducer is built with its README's two commands and the others run with that binary
# (reproducers.cmake).
# Then one hash in one copied reproducer is altered (its manifest's expected_hash line) and one
# byte of one expected data file in another: each must report MISMATCH at that chunk or byte and
# exit 1.
# Refusals allowed (sample_refusals.cmake, as in sample_isolation.cmake): a launch overlapped by
# other device work at capture time (OVERLAP_ONLY: multi_thread, where that may be every launch),
# device_assert's launch that asserts on purpose (STICKY_REFUSAL), and launches the reproducer
# does not support (multi-device cooperative launches; no sample makes one).
# Inputs: SAMPLE, CUSNAP, EMULATOR, EMULATOR_DIR, INTERCEPTOR_DIR, MAKE_FIXTURE, XXH3_TEMPLATE,
# CUDA_ROOT, GENERATOR, CXX, WORK, OVERLAP_ONLY, STICKY_REFUSAL.
include(${CMAKE_CURRENT_LIST_DIR}/sample_refusals.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/reproducers.cmake)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK} ${WORK}/launches)
set(ENV{CUSNAP_INTERCEPTOR_DIR} ${INTERCEPTOR_DIR})
string(TIMESTAMP started "%s")

execute_process(COMMAND ${CUSNAP} capture --driver ${EMULATOR} --snapshot-kernels regex:.
                        --force-overwrite -o ${WORK}/capture.cusnap -- ${SAMPLE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "capture failed (rc ${rc}):\n${out}\n${err}")
endif()
execute_process(COMMAND ${CUSNAP} extract ${WORK}/capture.cusnap --kernel-name regex:.
                        --route snapshots -o ${WORK}/launches/call-%n.cusnap
                        --emit-cpp ${WORK}/repro/call-%n
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
check_extract_refusals(${rc} "${out}" "${err}"
                       ALSO "the reproducer supports cuLaunchKernel, cuLaunchKernelEx and")
reproducer_dirs(dirs "${out}")
list(LENGTH dirs count)
if(count EQUAL 0)
  if(OVERLAP_ONLY)
    message(STATUS "every launch overlapped other device work at capture time: nothing to emit")
    return()
  endif()
  message(FATAL_ERROR "extract --emit-cpp wrote no reproducer:\n${out}\n${err}")
endif()

# The first reproducer, built as its README says.
list(GET dirs 0 first)
build_reproducer(${first} ${WORK}/build program)

# Every reproducer: the same program, run on its own directory.
set(matched 0)
set(with_hashes 0)
set(hashed_chunks 0)
set(hash_dir "")
set(bytes_dir "")
foreach(dir IN LISTS dirs)
  run_reproducer(${program} ${first} ${dir})
  math(EXPR matched "${matched} + 1")
  file(STRINGS ${dir}/manifest.txt hash_lines REGEX "^expected_hash ")
  list(LENGTH hash_lines n)
  if(n GREATER 0)
    math(EXPR with_hashes "${with_hashes} + 1")
    math(EXPR hashed_chunks "${hashed_chunks} + ${n}")
    if(NOT hash_dir)
      set(hash_dir ${dir})
    endif()
  endif()
  if(NOT bytes_dir AND EXISTS ${dir}/expected_0.bin)
    set(bytes_dir ${dir})
  endif()
endforeach()
message(STATUS "${matched} of ${count} reproducers report MATCH; ${with_hashes} of them compared "
               "${hashed_chunks} chunk(s) by XXH3-128")

# One altered hash: the chunk it names must be reported and the exit code must be 1.
if(NOT hash_dir)
  message(FATAL_ERROR "no reproducer compares a chunk by its hash: the capture without "
                      "--snapshot-outputs should have left the chunks the kernels wrote hash-only")
endif()
file(COPY ${hash_dir}/ DESTINATION ${WORK}/altered_hash)
file(READ ${WORK}/altered_hash/manifest.txt manifest)
string(REGEX MATCH "\nexpected_hash ([0-9a-f]+) [0-9]+ ([0-9a-f])([0-9a-f]*)\n" line "${manifest}")
set(address ${CMAKE_MATCH_1})
if(CMAKE_MATCH_2 STREQUAL "0")
  set(digit 1)
else()
  set(digit 0)
endif()
string(REGEX REPLACE "\nexpected_hash ${address} ([0-9]+) [0-9a-f]([0-9a-f]*)\n"
       "\nexpected_hash ${address} \\1 ${digit}\\2\n" manifest "${manifest}")
file(WRITE ${WORK}/altered_hash/manifest.txt "${manifest}")
execute_process(COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${EMULATOR_DIR} ${program}
                        ${WORK}/altered_hash
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 1 OR NOT out MATCHES "MISMATCH at 0x${address}: the chunk of [0-9]+ bytes there has XXH3-128 [0-9a-f]+, expected ${digit}")
  message(FATAL_ERROR "an altered expected hash (chunk 0x${address}) was not reported (rc ${rc}):\n"
                      "${out}\n${err}")
endif()
message(STATUS "altered hash: ${out}")

# One altered expected byte, where a reproducer compares bytes.
if(bytes_dir)
  file(COPY ${bytes_dir}/ DESTINATION ${WORK}/altered_byte)
  execute_process(COMMAND ${MAKE_FIXTURE} flip ${WORK}/altered_byte/expected_0.bin 0
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "could not alter ${WORK}/altered_byte/expected_0.bin (rc ${rc})")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${EMULATOR_DIR} ${program}
                          ${WORK}/altered_byte
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 1 OR NOT out MATCHES "MISMATCH at 0x[0-9a-f]+: expected 0x[0-9a-f]+, got 0x[0-9a-f]+ \\(expected_0.bin, byte 0\\)")
    message(FATAL_ERROR "an altered expected byte was not reported (rc ${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "altered byte: ${out}")
endif()
string(TIMESTAMP finished "%s")
math(EXPR seconds "${finished} - ${started}")
message(STATUS "${count} reproducers emitted, one built, all run, in ${seconds} s")

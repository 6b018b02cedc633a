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
# ARRAYS (texture, surface, texture_refs): the launches reach CUDA arrays, which only the replay
# route extracts (docs/extract.md, "Textures and surfaces"); its extracts hold every byte, so
# there is no hash to alter: instead one byte of an array's expected file must be reported as a
# MISMATCH in that array, and one byte of an array's input file must change what the kernel
# computes (a MISMATCH, exit 1).
# Inputs: SAMPLE, CUSNAP, EMULATOR, EMULATOR_DIR, INTERCEPTOR_DIR, MAKE_FIXTURE, XXH3_TEMPLATE,
# CUDA_ROOT, GENERATOR, CXX, WORK, OVERLAP_ONLY, STICKY_REFUSAL, ARRAYS, REPRODUCER_ENV (tma_gemm:
# another tensor-map encoding key than the capture's, so the program must encode its maps).
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
set(route snapshots)
if(ARRAYS)
  set(route auto)
endif()
execute_process(COMMAND ${CUSNAP} extract ${WORK}/capture.cusnap --kernel-name regex:.
                        --route ${route} --driver ${EMULATOR} -o ${WORK}/launches/call-%n.cusnap
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

if(ARRAYS)
  # An altered byte of an array's expected state: reported in that array.
  set(expected_dir "")
  set(input_dirs "")
  foreach(dir IN LISTS dirs)
    if(NOT expected_dir AND EXISTS ${dir}/array_expected_0.bin)
      set(expected_dir ${dir})
    endif()
    if(EXISTS ${dir}/array_input_0.bin)
      list(APPEND input_dirs ${dir})
    endif()
  endforeach()
  if(NOT expected_dir OR NOT input_dirs)
    message(FATAL_ERROR "no reproducer holds an array's input and expected state")
  endif()
  alter_reproducer(${expected_dir} ${WORK}/altered_array_expected array_expected_0.bin 0)
  run_on_emulator(${program} ${WORK}/altered_array_expected rc out err)
  if(NOT rc EQUAL 1 OR NOT out MATCHES "MISMATCH in CUDA array 0x[0-9a-f]+: expected 0x[0-9a-f]+, got 0x[0-9a-f]+ \\(array_expected_0.bin, byte 0\\)")
    message(FATAL_ERROR "an altered array byte was not reported (rc ${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "altered array expected byte: ${out}")
  # Every byte of an array's input inverted: a kernel that reads the array writes something
  # else to memory (one that only writes it, as the surface sample's first, does not), so at
  # least one reproducer must report a MISMATCH in memory ("at 0x", not only in the array, which
  # an unwritten array shows anyway), and none may fail otherwise.
  set(changed 0)
  set(i 0)
  foreach(dir IN LISTS input_dirs)
    alter_reproducer(${dir} ${WORK}/altered_array_input_${i} array_input_0.bin all)
    run_on_emulator(${program} ${WORK}/altered_array_input_${i} rc out err)
    if(rc EQUAL 1 AND out MATCHES "MISMATCH at 0x")
      math(EXPR changed "${changed} + 1")
    elseif(rc EQUAL 1 AND out MATCHES "MISMATCH in CUDA array")
    elseif(NOT rc EQUAL 0)
      message(FATAL_ERROR "${dir} with its array input inverted failed (rc ${rc}):\n${out}\n${err}")
    endif()
    math(EXPR i "${i} + 1")
  endforeach()
  if(changed EQUAL 0)
    message(FATAL_ERROR "no reproducer's kernel noticed its array input inverted: the arrays are not read")
  endif()
  message(STATUS "array inputs inverted: ${changed} of ${i} reproducers report a MISMATCH in memory")
  return()
endif()

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
run_on_emulator(${program} ${WORK}/altered_hash rc out err)
if(NOT rc EQUAL 1 OR NOT out MATCHES "MISMATCH at 0x${address}: the chunk of [0-9]+ bytes there has XXH3-128 [0-9a-f]+, expected ${digit}")
  message(FATAL_ERROR "an altered expected hash (chunk 0x${address}) was not reported (rc ${rc}):\n"
                      "${out}\n${err}")
endif()
message(STATUS "altered hash: ${out}")

# One altered expected byte, where a reproducer compares bytes.
if(bytes_dir)
  alter_reproducer(${bytes_dir} ${WORK}/altered_byte expected_0.bin 0)
  run_on_emulator(${program} ${WORK}/altered_byte rc out err)
  if(NOT rc EQUAL 1 OR NOT out MATCHES "MISMATCH at 0x[0-9a-f]+: expected 0x[0-9a-f]+, got 0x[0-9a-f]+ \\(expected_0.bin, byte 0\\)")
    message(FATAL_ERROR "an altered expected byte was not reported (rc ${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "altered byte: ${out}")
endif()
string(TIMESTAMP finished "%s")
math(EXPR seconds "${finished} - ${started}")
message(STATUS "${count} reproducers emitted, one built, all run, in ${seconds} s")

# `cusnap extract` through the executable, and its --emit-cpp reproducers built with the CUDA
# toolkit and run on the emulator: each prints MATCH and exits 0; with one expected byte altered
# it prints MISMATCH and exits non-zero. Inputs: CUSNAP, MAKE_FIXTURE, PTX, EMULATOR_DIR,
# CUDA_ROOT, GENERATOR, CXX, WORK.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

function(run_checked)
  cmake_parse_arguments(arg "" "EXPECT_RC;OUTPUT" "COMMAND;ENV" ${ARGN})
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ${arg_ENV} ${arg_COMMAND}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT "${arg_EXPECT_RC}" STREQUAL "")
    if(arg_EXPECT_RC STREQUAL "nonzero")
      if(rc EQUAL 0)
        message(FATAL_ERROR "expected failure: ${arg_COMMAND}\n${out}\n${err}")
      endif()
    elseif(NOT rc EQUAL arg_EXPECT_RC)
      message(FATAL_ERROR "exit ${rc}, expected ${arg_EXPECT_RC}: ${arg_COMMAND}\n${out}\n${err}")
    endif()
  endif()
  if(arg_OUTPUT)
    set(${arg_OUTPUT} "${out}${err}" PARENT_SCOPE)
  endif()
endfunction()

set(source ${WORK}/source.cusnap)
run_checked(COMMAND ${MAKE_FIXTURE} capture ${source} ${PTX} EXPECT_RC 0)

# A launch without snapshots, --route snapshots: a clear refusal, non-zero exit.
run_checked(COMMAND ${CUSNAP} extract ${source} --kernel-name regex:saxpy --launch-skip 1
                    --launch-count 1 --route snapshots -o ${WORK}/unsnapped.cusnap
            EXPECT_RC nonzero OUTPUT out)
if(NOT out MATCHES "--route replay \\(or auto\\) extracts it")
  message(FATAL_ERROR "no clear refusal for a launch without snapshots:\n${out}")
endif()
# Route auto replays the fixture for it, but the fixture has no copies that rebuild its memory:
# the replay differs from the capture's snapshots before the launch, and the extract is refused.
run_checked(COMMAND ${CUSNAP} extract ${source} --kernel-name regex:saxpy --launch-skip 1
                    --launch-count 1 --driver ${EMULATOR_DIR}/libcuda.so.1
                    -o ${WORK}/unsnapped.cusnap
            EXPECT_RC nonzero OUTPUT out)
if(NOT out MATCHES "the replay diverged from the capture before it" OR EXISTS
   ${WORK}/unsnapped.cusnap)
  message(FATAL_ERROR "no refusal of an extract from a diverged replay:\n${out}")
endif()
# Several launches into a directory: the two with snapshots are written even though the other
# two cannot be (exit non-zero for those).
run_checked(COMMAND ${CUSNAP} extract ${source} --kernel-name regex:. --route snapshots
                    -o ${WORK}/all
            EXPECT_RC nonzero OUTPUT out)
foreach(seq 10 13)
  if(NOT EXISTS ${WORK}/all/call-${seq}.cusnap)
    message(FATAL_ERROR "-o DIR: no call-${seq}.cusnap:\n${out}")
  endif()
endforeach()
if(NOT out MATCHES "skipped at capture time")
  message(FATAL_ERROR "-o DIR: the skipped launch is not reported:\n${out}")
endif()
# Neither --kernel-name nor --call: usage error.
run_checked(COMMAND ${CUSNAP} extract ${source} -o ${WORK}/x.cusnap EXPECT_RC 1)

foreach(kernel saxpy_int add_offset)
  set(repro ${WORK}/repro_${kernel})
  run_checked(COMMAND ${CUSNAP} extract ${source} --kernel-name ${kernel} --launch-count 1
                      -o ${WORK}/${kernel}.cusnap --emit-cpp ${repro}
              EXPECT_RC 0 OUTPUT out)
  message(STATUS "${out}")
  run_checked(COMMAND ${CUSNAP} verify ${WORK}/${kernel}.cusnap EXPECT_RC 0)
  foreach(f main.cpp CMakeLists.txt README.md xxh3_128.h module.bin params.bin manifest.txt input_0.bin
            expected_0.bin)
    if(NOT EXISTS ${repro}/${f})
      message(FATAL_ERROR "--emit-cpp wrote no ${f}")
    endif()
  endforeach()
  file(READ ${repro}/main.cpp main)
  if(main MATCHES "cusnap/" OR NOT main MATCHES "#include <cuda.h>")
    message(FATAL_ERROR "main.cpp must use plain cuda.h and no cusnap header")
  endif()
  # The two commands of its README.
  run_checked(COMMAND ${CMAKE_COMMAND} -S ${repro} -B ${repro}/build -G ${GENERATOR}
                      -DCMAKE_CXX_COMPILER=${CXX} -DCUDAToolkit_ROOT=${CUDA_ROOT}
              EXPECT_RC 0)
  run_checked(COMMAND ${CMAKE_COMMAND} --build ${repro}/build EXPECT_RC 0)
  run_checked(COMMAND ${repro}/build/reproducer ${repro} ENV LD_LIBRARY_PATH=${EMULATOR_DIR}
              EXPECT_RC 0 OUTPUT out)
  message(STATUS "${out}")
  if(NOT out MATCHES "MATCH \\(" OR out MATCHES "MISMATCH")
    message(FATAL_ERROR "${kernel}: the reproducer did not report a match:\n${out}")
  endif()
  if(NOT out MATCHES "reserved at their captured addresses")
    message(FATAL_ERROR "${kernel}: the captured addresses were not honoured:\n${out}")
  endif()
  # One expected byte altered: the reproducer must see it.
  run_checked(COMMAND ${MAKE_FIXTURE} flip ${repro}/expected_0.bin 5 EXPECT_RC 0)
  run_checked(COMMAND ${repro}/build/reproducer ${repro} ENV LD_LIBRARY_PATH=${EMULATOR_DIR}
              EXPECT_RC 1 OUTPUT out)
  message(STATUS "${out}")
  if(NOT out MATCHES "MISMATCH at 0x")
    message(FATAL_ERROR "${kernel}: altered expected data not reported:\n${out}")
  endif()
endforeach()

# Allocation a where the driver cannot honour the address: the reproducer relocates the pointer
# parameter that points into it, says so, and still matches (saxpy_int stores no pointers).
set(low ${WORK}/low.cusnap)
run_checked(COMMAND ${MAKE_FIXTURE} capture ${low} ${PTX} low EXPECT_RC 0)
set(repro ${WORK}/repro_low)
run_checked(COMMAND ${CUSNAP} extract ${low} --kernel-name regex:saxpy --launch-count 1
                    -o ${WORK}/low-%n.cusnap --emit-cpp ${repro} EXPECT_RC 0)
run_checked(COMMAND ${CMAKE_COMMAND} -S ${repro} -B ${repro}/build -G ${GENERATOR}
                    -DCMAKE_CXX_COMPILER=${CXX} -DCUDAToolkit_ROOT=${CUDA_ROOT} EXPECT_RC 0)
run_checked(COMMAND ${CMAKE_COMMAND} --build ${repro}/build EXPECT_RC 0)
run_checked(COMMAND ${repro}/build/reproducer ${repro} ENV LD_LIBRARY_PATH=${EMULATOR_DIR}
            EXPECT_RC 0 OUTPUT out)
message(STATUS "${out}")
if(NOT out MATCHES "relocated parameter at offset 0: 0x100000 -> 0x" OR NOT out MATCHES "MATCH \\(")
  message(FATAL_ERROR "relocation not reported, or no match:\n${out}")
endif()

# --minimize through the executable: the strided_store launch keeps only the chunks it writes
# (and drops allocation y), `cusnap info` says so, `cusnap replay` matches, and the --emit-cpp
# reproducer of the minimized extract matches too. --minimize and --keep-all exclude each other.
set(strided ${WORK}/strided.cusnap)
run_checked(COMMAND ${MAKE_FIXTURE} strided ${strided} ${PTX} EXPECT_RC 0)
run_checked(COMMAND ${CUSNAP} extract ${strided} --kernel-name strided_store --minimize --keep-all
                    -o ${WORK}/both.cusnap EXPECT_RC nonzero)
set(repro ${WORK}/repro_min)
run_checked(COMMAND ${CUSNAP} extract ${strided} --kernel-name strided_store --minimize
                    -o ${WORK}/min.cusnap --emit-cpp ${repro} EXPECT_RC 0 OUTPUT out)
message(STATUS "${out}")
if(NOT out MATCHES "10240 bytes of input, 10240 bytes expected" OR
   NOT out MATCHES "minimized: 19456 bytes of input and 19456 bytes expected left out")
  message(FATAL_ERROR "--minimize: not the strided chunks:\n${out}")
endif()
run_checked(COMMAND ${CUSNAP} info ${WORK}/min.cusnap EXPECT_RC 0 OUTPUT out)
if(NOT out MATCHES "minimized +only memory the launch touches: .* 1 allocation")
  message(FATAL_ERROR "cusnap info does not say the extract is minimized:\n${out}")
endif()
run_checked(COMMAND ${CUSNAP} replay --driver emulator ${WORK}/min.cusnap EXPECT_RC 0 OUTPUT out)
message(STATUS "${out}")
run_checked(COMMAND ${CMAKE_COMMAND} -S ${repro} -B ${repro}/build -G ${GENERATOR}
                    -DCMAKE_CXX_COMPILER=${CXX} -DCUDAToolkit_ROOT=${CUDA_ROOT} EXPECT_RC 0)
run_checked(COMMAND ${CMAKE_COMMAND} --build ${repro}/build EXPECT_RC 0)
run_checked(COMMAND ${repro}/build/reproducer ${repro} ENV LD_LIBRARY_PATH=${EMULATOR_DIR}
            EXPECT_RC 0 OUTPUT out)
message(STATUS "${out}")
if(NOT out MATCHES "MATCH \\(" OR out MATCHES "MISMATCH")
  message(FATAL_ERROR "the minimized extract's reproducer did not report a match:\n${out}")
endif()

# extract.emit_cpp.refused.<what>: a launch the C++ reproducer does not reproduce is extracted as
# a capture (whose replay handles it: extract.sample.<sample>), but --emit-cpp refuses it, saying
# why (EXPECT), and leaves nothing in the output directory:
# - tensor_maps (tma_gemm): the reproducer does not encode tensor maps, and the captured bytes
#   are valid only on the driver that encoded them;
# - textures, surfaces: the reproducer does not recreate CUDA arrays and texture/surface objects.
# Inputs: SAMPLE, KERNEL (regex), CUSNAP, EMULATOR, WORK, EXPECT (regex).
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${CUSNAP} capture --driver ${EMULATOR} --snapshot-kernels regex:.
                        --force-overwrite -o ${WORK}/capture.cusnap -- ${SAMPLE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "capture failed (rc ${rc}):\n${out}\n${err}")
endif()
execute_process(COMMAND ${CUSNAP} extract ${WORK}/capture.cusnap --kernel-name regex:${KERNEL}
                        --launch-count 1 --driver ${EMULATOR} -o ${WORK}/one.cusnap
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "extract failed (rc ${rc}):\n${out}\n${err}")
endif()
execute_process(COMMAND ${CUSNAP} extract ${WORK}/capture.cusnap --kernel-name regex:${KERNEL}
                        --launch-count 1 --driver ${EMULATOR} -o ${WORK}/two.cusnap
                        --emit-cpp ${WORK}/repro
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "${EXPECT}")
  message(FATAL_ERROR "--emit-cpp was not refused with '${EXPECT}' (rc ${rc}):\n${out}\n${err}")
endif()
if(EXISTS ${WORK}/repro/main.cpp)
  message(FATAL_ERROR "--emit-cpp refused, but wrote ${WORK}/repro/main.cpp")
endif()

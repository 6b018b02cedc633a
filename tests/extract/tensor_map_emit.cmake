# extract.emit_cpp.tensor_maps_refused: a launch that takes tensor maps (the tma_gemm sample) is
# extracted as a capture, whose replay encodes the maps again (extract.sample.tma_gemm), but
# --emit-cpp refuses it, saying why: the reproducer does not encode tensor maps, and the captured
# bytes are valid only on the driver that encoded them. Nothing is left in the output directory.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${CUSNAP} capture --driver ${EMULATOR} --snapshot-kernels regex:.
                        --force-overwrite -o ${WORK}/capture.cusnap -- ${SAMPLE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "capture failed (rc ${rc}):\n${out}\n${err}")
endif()
execute_process(COMMAND ${CUSNAP} extract ${WORK}/capture.cusnap --kernel-name regex:tma_gemm
                        -o ${WORK}/one.cusnap
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "extract failed (rc ${rc}):\n${out}\n${err}")
endif()
execute_process(COMMAND ${CUSNAP} extract ${WORK}/capture.cusnap --kernel-name regex:tma_gemm
                        -o ${WORK}/two.cusnap --emit-cpp ${WORK}/repro
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "does not encode tensor maps")
  message(FATAL_ERROR "--emit-cpp of a launch with tensor maps was not refused (rc ${rc}):\n"
                      "${out}\n${err}")
endif()
if(EXISTS ${WORK}/repro/main.cpp)
  message(FATAL_ERROR "--emit-cpp refused, but wrote ${WORK}/repro/main.cpp")
endif()

# The Slurm runner's errors are clear: an entry placed on a node the cluster does not have makes
# sbatch refuse the array, and bisect exits 12 naming sbatch's complaint (never a hang, never a
# culprit). Inputs as bisect_test.cmake.
execute_process(COMMAND ${SLURM_CLUSTER} check ${CLUSTER_DIR} RESULT_VARIABLE rc ERROR_VARIABLE err)
if(rc EQUAL 77)
  message("${err}")
  message(STATUS "CUSNAP_TEST_SKIPPED")
  return()
elseif(NOT rc EQUAL 0)
  message(FATAL_ERROR "no Slurm cluster for this test:\n${err}")
endif()
set(ENV{SLURM_CONF} "${CLUSTER_DIR}/etc/slurm.conf")
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${MAKE_CAPTURE} ${WORK}/whole.cusnap RESULT_VARIABLE rc OUTPUT_QUIET)
file(WRITE ${WORK}/list "good emulator\nbad emulator host=no-such-node\n")
execute_process(COMMAND ${CUSNAP} bisect ${WORK}/whole.cusnap --drivers ${WORK}/list --runner slurm
                        --work-dir ${WORK}/bisect
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(NOT rc EQUAL 12 OR NOT err MATCHES "sbatch .*--nodelist=no-such-node.* failed \\(exit [0-9]+\\)")
  message(FATAL_ERROR "an unknown node: exit ${rc} (expected 12)\nstdout:\n${out}\nstderr:\n${err}")
endif()
message(STATUS "unknown node: ${err}")

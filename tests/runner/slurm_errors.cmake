# The Slurm runner's failures are handled and clear (inputs as bisect_test.cmake):
#   - an entry placed on a node the cluster does not have makes sbatch refuse the array, and
#     bisect exits 12 naming sbatch's complaint (never a hang, never a culprit);
#   - an array task killed while it runs (scancel here; a node failure or preemption elsewhere)
#     leaves no exit status: it is resubmitted once, said on stderr, and its second run's exit
#     status counts.
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

# A task that ends without leaving its exit status (a node failure, preemption, an OOM kill of
# the batch shell): simulated by removing the status file task 0 wrote while task 1 still runs
# (both replay a launch that never ends, stopped by the emulator's watchdog: task 0 after 1 s,
# task 1 after 8 s; exit 9). The runner must resubmit task 0 once and take its second status.
execute_process(COMMAND ${MAKE_CAPTURE} ${WORK}/spin.cusnap spin RESULT_VARIABLE rc OUTPUT_QUIET)
file(WRITE ${WORK}/spin.list "first emulator CUSNAP_EMU_TIMEOUT=1\nsecond emulator CUSNAP_EMU_TIMEOUT=8\n")
execute_process(
  COMMAND ${CUSNAP} matrix --captures ${WORK}/spin.cusnap --drivers ${WORK}/spin.list
          --runner slurm -j 2 --slurm-poll 0.2 --slurm-timeout 120 -o ${WORK}/resubmit
  COMMAND sh -c "for i in $(seq 1200); do f=$(ls ${WORK}/resubmit/slurm-*/task-0.status 2>/dev/null | head -n 1); if [ -n \"$f\" ]; then rm -f \"$f\" && echo removed task 0 status; cat >/dev/null; exit; fi; sleep 0.05; done; echo no status to remove; cat >/dev/null"
  RESULTS_VARIABLE rcs OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 240)
if(NOT out MATCHES "removed task 0 status")
  message(FATAL_ERROR "task 0 left no status to remove (${rcs}):\n${out}\n${err}")
endif()
if(NOT err MATCHES "slurm job [0-9]+: task\\(s\\) 0 ended without an exit status; resubmitting them once")
  message(FATAL_ERROR "task 0 was not resubmitted (${rcs}):\n${out}\n${err}")
endif()
file(READ ${WORK}/resubmit/matrix.json json)
foreach(e 0 1)
  string(JSON ran GET "${json}" captures 0 cells ${e} ran)
  string(JSON code GET "${json}" captures 0 cells ${e} exit_code)
  if(NOT ran STREQUAL "ON" OR NOT code EQUAL 9)
    message(FATAL_ERROR "cell ${e} after the resubmission: ran ${ran}, exit ${code} (expected 9):\n${json}")
  endif()
endforeach()
file(GLOB statuses ${WORK}/resubmit/slurm-*/task-*.status)
list(LENGTH statuses n)
if(NOT n EQUAL 2)
  message(FATAL_ERROR "${n} status files after the resubmission (expected 2)")
endif()
message(STATUS "resubmitted: ${err}")
